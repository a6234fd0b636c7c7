"""What the tests share: the repository, the `shrew` binary the CLI tests compare with, and
piglit's tests where `bash scripts/piglit.sh` put them."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def shrew_binary() -> Path:
    path = Path(os.environ.get("SHREW_BIN", ROOT / "target" / "release" / "shrew"))
    if not path.exists():
        pytest.fail(f"{path} is missing: cargo build --release -p shrew-cli (or set SHREW_BIN)")
    return path


def cli(*args: str) -> str:
    """The CLI's stdout (it must succeed)."""
    done = subprocess.run(
        [str(shrew_binary()), *map(str, args)], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def piglit_tests() -> Path | None:
    root = Path(
        os.environ.get("SHREW_PIGLIT")
        or Path.home() / ".cache/shrew/piglit/root/usr/lib/x86_64-linux-gnu/piglit"
    )
    return root / "tests" if (root / "tests").is_dir() else None
