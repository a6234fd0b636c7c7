"""Copies the seed corpus of a fuzz target (fuzz/fuzz_targets/) into a directory.

usage: fuzz_corpus.py TARGET DIR [--piglit DIR]

The committed seeds always: `fuzz/seeds/spirv/*.spv` (made from `fuzz/seeds/glsl/` with
`glslangValidator -V -R --amb --aml`) for `spirv_reader` and `pipeline`, every `.shrew` file of
the repository for `ir_text`, `fuzz/seeds/piglit/` for `piglit_parser`, and the inputs of the
bugs found before, `fuzz/regressions/TARGET/`. With `--piglit`, also a fixed sample of piglit:
SAMPLE_SIZE entries evenly spaced by name among the glslang results the front end caches (the
SPIR-V of piglit's shaders, once the piglit runs have filled the cache), or among piglit's
`.shader_test` files under DIR, of at most MAX_SEED_BYTES. Files already in DIR stay (a long
run keeps what it found); a seed is named by its source, so copying again is harmless.
"""
import argparse
import hashlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "fuzz" / "seeds"
TARGETS = ["spirv_reader", "ir_text", "piglit_parser", "pipeline"]
SAMPLE_SIZE = 300
# The pipeline target skips larger modules; larger inputs slow every mutation.
MAX_SEED_BYTES = 16 * 1024

# The front end's cache entries (frontend/src/glsl/cache.rs): a header line, a kind byte (`S`:
# SPIR-V), the SHA-256 of the kind byte and the payload, then the payload.
CACHE_HEADER = b"shrew-spirv-cache 1\n"
DIGEST_LEN = 32


def spirv_cache_dir():
    """Where the front end caches glslang's results (as `SpirvCache::default_dir`)."""
    env = lambda name: os.environ.get(name) or None
    if env("SHREW_CACHE_DIR"):
        return Path(env("SHREW_CACHE_DIR"))
    if env("XDG_CACHE_HOME"):
        return Path(env("XDG_CACHE_HOME")) / "shrew" / "spirv"
    return Path(env("HOME") or "/nonexistent") / ".cache" / "shrew" / "spirv"


def cached_spirv(path):
    """The SPIR-V of a cache entry, or None (a rejection, or not a valid entry)."""
    data = path.read_bytes()
    if not data.startswith(CACHE_HEADER):
        return None
    rest = data[len(CACHE_HEADER):]
    kind, digest, payload = rest[:1], rest[1:1 + DIGEST_LEN], rest[1 + DIGEST_LEN:]
    if kind != b"S" or hashlib.sha256(kind + payload).digest() != digest:
        return None
    return payload


def evenly_spaced(items):
    """SAMPLE_SIZE of `items` (all if fewer), evenly spaced."""
    return items[::max(1, len(items) // SAMPLE_SIZE)][:SAMPLE_SIZE]


def spirv_sample():
    cache = spirv_cache_dir()
    if not cache.is_dir():
        print(f"fuzz_corpus: no SPIR-V cache at {cache}: committed seeds only", file=sys.stderr)
        return []
    modules = []
    for path in sorted(cache.iterdir()):
        spirv = cached_spirv(path) if path.is_file() else None
        if spirv is not None and len(spirv) <= MAX_SEED_BYTES:
            modules.append((f"cache-{path.name[:16]}.spv", spirv))
    return evenly_spaced(modules)


def piglit_sample(piglit):
    tests = [path for path in sorted(Path(piglit).rglob("*.shader_test"))
             if path.stat().st_size <= MAX_SEED_BYTES]
    return [("piglit-" + str(path.relative_to(piglit)).replace("/", "-"), path.read_bytes())
            for path in evenly_spaced(tests)]


def seeds(target, piglit):
    """(file name, content) of every seed of `target`."""
    files = []
    if target in ("spirv_reader", "pipeline"):
        files = [(p.name, p.read_bytes()) for p in sorted((SEEDS / "spirv").glob("*.spv"))]
        if piglit:
            files += spirv_sample()
    elif target == "ir_text":
        for top in ("examples", "tests"):
            for path in sorted((ROOT / top).rglob("*.shrew")):
                name = str(path.relative_to(ROOT)).replace("/", "-")
                files.append((name, path.read_bytes()))
    elif target == "piglit_parser":
        files = [(p.name, p.read_bytes()) for p in sorted((SEEDS / "piglit").iterdir())]
        if piglit:
            files += piglit_sample(piglit)
    regressions = ROOT / "fuzz" / "regressions" / target
    if regressions.is_dir():
        files += [(p.name, p.read_bytes()) for p in sorted(regressions.iterdir())]
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=TARGETS)
    parser.add_argument("dir", type=Path)
    parser.add_argument("--piglit", help="piglit's directory (scripts/piglit.sh prints it)")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    files = seeds(args.target, args.piglit)
    for name, content in files:
        (args.dir / name).write_bytes(content)
    print(f"fuzz_corpus: {len(files)} seeds for {args.target} in {args.dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
