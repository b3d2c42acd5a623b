//! The tuning results cache: one JSON file per (Program hash, device, driver).

use std::path::{Path, PathBuf};

use super::{TuneResult, TuneRow};

/// What identifies a cached tuning result.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TuneKey {
    /// [`program_hash`] of the Program file's text.
    pub program_hash: u64,
    /// Device name as probed.
    pub device: String,
    /// Driver version as probed (e.g. 13000).
    pub driver: u32,
}

/// Whether to use cached rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheMode {
    /// Reuse cached rows; time only what is missing.
    #[default]
    Use,
    /// `--fresh`: ignore the cache, time everything, overwrite the entry.
    Fresh,
}

/// A cache that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    /// No user cache directory on this system.
    NoCacheDir,
    /// File system failure.
    Io {
        /// Path involved.
        path: String,
        /// OS error.
        reason: String,
    },
}

/// FNV-1a (64-bit) of this build's identity ([`crate::util::build_id`]: version and source
/// hash) and the Program text: stable across runs and Rust versions (unlike `DefaultHasher`),
/// and another build (another emitter) starts fresh.
pub fn program_hash(program_text: &str) -> u64 {
    let version = crate::util::build_id().as_bytes();
    let mut bytes = Vec::with_capacity(version.len() + 1 + program_text.len());
    bytes.extend_from_slice(version);
    bytes.push(0);
    bytes.extend_from_slice(program_text.as_bytes());
    crate::util::fnv1a(&bytes)
}

/// Largest tuning cache file read: a result has one row per candidate workgroup (a few
/// dozen), far below this.
pub const MAX_ENTRY_BYTES: u64 = 1 << 20;

/// Whether a cached row could have come from a tuning run: a launchable workgroup size and
/// finite, non-negative numbers.
fn plausible_row(r: &TuneRow) -> bool {
    let threads = r.workgroup.iter().map(|&d| u64::from(d)).product::<u64>();
    let finite = |v: Option<f64>| v.is_none_or(|v| v.is_finite() && v >= 0.0);
    r.workgroup.iter().all(|&d| d > 0)
        && threads <= 1024
        && finite(r.median_ms)
        && finite(r.speedup_vs_default)
        && (0.0..=100.0).contains(&r.occupancy_pct)
}

/// Rows found in the cache and candidates still to time.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Lookup {
    /// Cached rows for requested candidates, in the requested order.
    pub cached: Vec<TuneRow>,
    /// Requested candidates with no cached row.
    pub missing: Vec<[u32; 3]>,
}

/// The cache directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuneCache {
    dir: PathBuf,
}

fn io_err(path: &Path, e: std::io::Error) -> CacheError {
    CacheError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

impl TuneCache {
    /// `dirs::cache_dir()/vyrescope/tune/`.
    pub fn user() -> Result<TuneCache, CacheError> {
        let base = dirs::cache_dir().ok_or(CacheError::NoCacheDir)?;
        Ok(TuneCache {
            dir: base.join("vyrescope").join("tune"),
        })
    }

    /// A cache in `dir` (tests, or a custom location).
    pub fn at(dir: impl Into<PathBuf>) -> TuneCache {
        TuneCache { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of one key: `<hash>-<device>-<driver>.json`, the device name reduced to
    /// `[a-z0-9-]`.
    pub fn path(&self, key: &TuneKey) -> PathBuf {
        let slug: String = key
            .device
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        self.dir.join(format!(
            "{:016x}-{}-{}.json",
            key.program_hash,
            slug.trim_matches('-'),
            key.driver
        ))
    }

    /// The cached result of `key`; `None` when absent or unreadable as a result (a corrupt
    /// entry is treated as a miss and overwritten by the next store).
    ///
    /// The file is read like every other input (a regular file of at most
    /// [`MAX_ENTRY_BYTES`]): a FIFO, a device or a huge file is an error, never a hang. A
    /// row that no tuning run writes (an empty or oversized workgroup, a negative or
    /// non-finite time) makes the whole entry a miss.
    pub fn load(&self, key: &TuneKey) -> Result<Option<TuneResult>, CacheError> {
        let p = self.path(key);
        let bytes = match crate::util::read_limited(&p, MAX_ENTRY_BYTES, "tuning cache entry") {
            Ok(b) => b,
            Err(e) if e.kind == crate::util::ReadErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(CacheError::Io {
                    path: p.display().to_string(),
                    reason: e.message,
                })
            }
        };
        Ok(serde_json::from_slice::<TuneResult>(&bytes)
            .ok()
            .filter(|r| r.device == key.device && r.driver == key.driver)
            .filter(|r| r.rows.iter().all(plausible_row)))
    }

    /// Splits `candidates` into cached rows and ones to time (all missing with
    /// [`CacheMode::Fresh`]).
    pub fn lookup(
        &self,
        key: &TuneKey,
        mode: CacheMode,
        candidates: &[[u32; 3]],
    ) -> Result<Lookup, CacheError> {
        let cached = match mode {
            CacheMode::Fresh => None,
            CacheMode::Use => self.load(key)?,
        };
        let mut out = Lookup::default();
        for c in candidates {
            match cached
                .as_ref()
                .and_then(|r| r.rows.iter().find(|row| row.workgroup == *c))
            {
                Some(row) => out.cached.push(row.clone()),
                None => out.missing.push(*c),
            }
        }
        Ok(out)
    }

    /// Stores `result`; with [`CacheMode::Use`] rows already cached for other workgroups are
    /// kept (merged), with [`CacheMode::Fresh`] the entry is replaced. Written to a temporary
    /// file and renamed, so a crash never leaves half a file.
    pub fn store(
        &self,
        key: &TuneKey,
        result: &TuneResult,
        mode: CacheMode,
    ) -> Result<(), CacheError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| io_err(&self.dir, e))?;
        let mut merged = result.clone();
        merged.from_cache = false;
        if mode == CacheMode::Use {
            if let Some(old) = self.load(key)? {
                for row in old.rows {
                    if !merged.rows.iter().any(|r| r.workgroup == row.workgroup) {
                        merged.rows.push(row);
                    }
                }
            }
        }
        let p = self.path(key);
        let text = serde_json::to_string_pretty(&merged).map_err(|e| CacheError::Io {
            path: p.display().to_string(),
            reason: e.to_string(),
        })?;
        crate::util::write_atomic(&p, text.as_bytes()).map_err(|e| io_err(&p, e))
    }
}

impl crate::util::HasFix for CacheError {
    fn message(&self) -> String {
        match self {
            Self::NoCacheDir => "no user cache directory (XDG_CACHE_HOME / HOME unset)".to_string(),
            Self::Io { path, reason, .. } => format!("tuning cache {path}: {reason}"),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::NoCacheDir => "set XDG_CACHE_HOME or HOME, or run with --fresh".to_string(),
            Self::Io { .. } => "check that the directory is writable, or delete it".to_string(),
        }
    }
}

crate::util::problem::into_problem!(CacheError);

#[cfg(test)]
mod tests {
    use super::super::TuneStatus;
    use super::*;

    fn result(rows: &[(u32, f64)]) -> TuneResult {
        TuneResult {
            program: "vadd".into(),
            device: "NVIDIA H200".into(),
            driver: 13000,
            default_workgroup: [256, 1, 1],
            repeat: 10,
            rows: rows
                .iter()
                .map(|&(x, ms)| TuneRow {
                    workgroup: [x, 1, 1],
                    median_ms: Some(ms),
                    occupancy_pct: 100.0,
                    speedup_vs_default: None,
                    status: TuneStatus::Ok,
                    results_note: None,
                })
                .collect(),
            from_cache: false,
        }
    }

    #[test]
    fn hash_is_stable_and_content_sensitive() {
        assert_eq!(program_hash("abc"), program_hash("abc"));
        assert_ne!(program_hash("abc"), program_hash("abd"));
    }

    #[test]
    fn store_lookup_merge_and_fresh() {
        let dir = std::env::temp_dir().join(format!("vyrescope-tune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = TuneCache::at(&dir);
        let key = TuneKey {
            program_hash: program_hash("{}"),
            device: "NVIDIA H200".into(),
            driver: 13000,
        };
        let cands = [[128, 1, 1], [256, 1, 1], [512, 1, 1]];
        let l = cache.lookup(&key, CacheMode::Use, &cands).unwrap();
        assert_eq!(l.missing.len(), 3);
        cache
            .store(&key, &result(&[(128, 1.5), (256, 1.0)]), CacheMode::Use)
            .unwrap();
        let l = cache.lookup(&key, CacheMode::Use, &cands).unwrap();
        assert_eq!(l.cached.len(), 2);
        assert_eq!(l.missing, vec![[512, 1, 1]]);
        // A later run adds 512: merged, the old rows stay.
        cache
            .store(&key, &result(&[(512, 0.9)]), CacheMode::Use)
            .unwrap();
        let l = cache.lookup(&key, CacheMode::Use, &cands).unwrap();
        assert!(l.missing.is_empty());
        assert_eq!(l.cached[2].median_ms, Some(0.9));
        // Fresh ignores and replaces.
        assert_eq!(
            cache
                .lookup(&key, CacheMode::Fresh, &cands)
                .unwrap()
                .missing
                .len(),
            3
        );
        cache
            .store(&key, &result(&[(64, 2.0)]), CacheMode::Fresh)
            .unwrap();
        assert_eq!(cache.load(&key).unwrap().unwrap().rows.len(), 1);
        // Another driver is another entry; a corrupt file is a miss.
        let other = TuneKey {
            driver: 12080,
            ..key.clone()
        };
        assert!(cache.load(&other).unwrap().is_none());
        std::fs::write(cache.path(&key), "{not json").unwrap();
        assert!(cache.load(&key).unwrap().is_none());
        assert!(cache
            .path(&key)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .ends_with("-nvidia-h200-13000.json"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
