//! The on-disk cache of glslang results, keyed by a SHA-256 of everything that decides them.
//!
//! One file per key, named by the key's hex digest. Its content is a header line, a kind byte
//! (`S` for SPIR-V, `E` for glslang's rejection diagnostics), the SHA-256 of the payload, and
//! the payload; an entry whose header or digest does not check out is treated as absent (and
//! overwritten by the next store). Entries are written to a temporary file in the same
//! directory and renamed into place, so concurrent readers never see half an entry. Writing
//! is best-effort: a cache that cannot be written only costs time.

use super::{spirv_words, unique_suffix};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const HEADER: &[u8] = b"shrew-spirv-cache 1\n";
const SPIRV_KIND: u8 = b'S';
const REJECTED_KIND: u8 = b'E';
const DIGEST_LEN: usize = 32;

/// A cached glslang result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum CachedOutcome {
    /// The SPIR-V words glslang produced.
    Spirv(Vec<u32>),
    /// glslang refused the shader with these diagnostics.
    Rejected(String),
}

/// A cache directory.
#[derive(Clone, Debug)]
pub(super) struct SpirvCache {
    dir: PathBuf,
}

fn sha256(parts: &[&[u8]]) -> [u8; DIGEST_LEN] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

impl SpirvCache {
    pub fn new(dir: PathBuf) -> Self {
        SpirvCache { dir }
    }

    /// `$SHREW_CACHE_DIR`, else `$XDG_CACHE_HOME/shrew/spirv`, else `$HOME/.cache/shrew/spirv`
    /// (unset or empty variables are skipped); `None` if none is set.
    pub fn default_dir() -> Option<PathBuf> {
        let variable = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
        if let Some(dir) = variable("SHREW_CACHE_DIR") {
            return Some(PathBuf::from(dir));
        }
        if let Some(dir) = variable("XDG_CACHE_HOME") {
            return Some(PathBuf::from(dir).join("shrew").join("spirv"));
        }
        variable("HOME").map(|home| {
            PathBuf::from(home)
                .join(".cache")
                .join("shrew")
                .join("spirv")
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of a result decided by `parts` (each part length-prefixed, so that moving
    /// text from one part to the next changes the key).
    pub fn key(parts: &[&str]) -> String {
        let mut hasher = Sha256::new();
        for part in parts {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        let digest: [u8; DIGEST_LEN] = hasher.finalize().into();
        hex(&digest)
    }

    /// The entry of `key`, if there is a valid one.
    pub fn load(&self, key: &str) -> Option<CachedOutcome> {
        SpirvCache::load_file(&self.dir.join(key))
    }

    /// The entry in the file `path`, if it is a valid one.
    pub fn load_file(path: &Path) -> Option<CachedOutcome> {
        let bytes = std::fs::read(path).ok()?;
        let rest = bytes.strip_prefix(HEADER)?;
        let (&kind, rest) = rest.split_first()?;
        let (digest, payload) = rest.split_at_checked(DIGEST_LEN)?;
        if digest != sha256(&[&[kind], payload]) {
            return None;
        }
        match kind {
            SPIRV_KIND => spirv_words(payload).map(CachedOutcome::Spirv),
            REJECTED_KIND => String::from_utf8(payload.to_vec())
                .ok()
                .map(CachedOutcome::Rejected),
            _ => None,
        }
    }

    /// Stores the entry of `key` (best-effort: errors are ignored).
    pub fn store(&self, key: &str, outcome: &CachedOutcome) {
        let (kind, payload) = match outcome {
            CachedOutcome::Spirv(words) => (
                SPIRV_KIND,
                words.iter().flat_map(|word| word.to_le_bytes()).collect(),
            ),
            CachedOutcome::Rejected(diagnostics) => {
                (REJECTED_KIND, diagnostics.as_bytes().to_vec())
            }
        };
        let mut entry = Vec::with_capacity(HEADER.len() + 1 + DIGEST_LEN + payload.len());
        entry.extend_from_slice(HEADER);
        entry.push(kind);
        entry.extend_from_slice(&sha256(&[&[kind], &payload]));
        entry.extend_from_slice(&payload);
        if std::fs::create_dir_all(&self.dir).is_err() {
            return;
        }
        let temporary = self.dir.join(format!(".{key}.{}.tmp", unique_suffix()));
        let written = std::fs::write(&temporary, &entry)
            .and_then(|()| std::fs::rename(&temporary, self.dir.join(key)));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("shrew-cache-test-{name}-{}", unique_suffix()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    const MODULE: [u32; 5] = [0x0723_0203, 0x0001_0000, 0, 1, 0];

    #[test]
    fn stores_and_loads_both_kinds() {
        let dir = scratch_dir("roundtrip");
        let cache = SpirvCache::new(dir.clone());
        let spirv = CachedOutcome::Spirv(MODULE.to_vec());
        let rejected = CachedOutcome::Rejected("ERROR: stdin:3: 'x' : undeclared".into());
        assert_eq!(cache.load("a"), None);
        cache.store("a", &spirv);
        cache.store("b", &rejected);
        assert_eq!(cache.load("a"), Some(spirv));
        assert_eq!(cache.load("b"), Some(rejected));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn corrupt_entries_are_absent() {
        let dir = scratch_dir("corrupt");
        let cache = SpirvCache::new(dir.clone());
        cache.store("k", &CachedOutcome::Spirv(MODULE.to_vec()));
        let path = dir.join("k");
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(cache.load("k"), None);
        std::fs::write(&path, b"garbage").unwrap();
        assert_eq!(cache.load("k"), None);
        std::fs::write(&path, HEADER).unwrap();
        assert_eq!(cache.load("k"), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn keys_depend_on_part_boundaries() {
        assert_ne!(SpirvCache::key(&["ab", "c"]), SpirvCache::key(&["a", "bc"]));
        assert_eq!(SpirvCache::key(&["x"]).len(), 64);
    }
}
