//! Caches with statistics: emitted PTX keyed by (program hash, workgroup, target, options),
//! loaded modules keyed by (PTX hash, device, JIT options), and the driver's own persistent
//! JIT cache (`CUDA_CACHE_PATH`, set under the user cache dir unless the user set it).

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::driver::{Function, Module};
use super::jit::KernelInfo;
use crate::emit::EmittedKernel;

/// Modules kept per context before the least recently used is unloaded.
pub const MODULE_CAPACITY: usize = 64;
/// Emitted kernels kept before the least recently used is dropped.
pub const PTX_CAPACITY: usize = 256;

/// Counters of one cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CacheStats {
    /// Entries held now.
    pub entries: u64,
    /// Bytes held now (PTX text bytes).
    pub bytes: u64,
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that had to build the entry.
    pub misses: u64,
    /// Entries dropped to stay within capacity.
    pub evictions: u64,
    /// Sum of the build time the hits did not spend (ms).
    pub saved_ms: f64,
}

/// All caches at a glance (the `cache` object of `run --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheReport {
    /// Emitted-PTX cache.
    pub ptx: CacheStats,
    /// Loaded-module cache (current context).
    pub module: CacheStats,
    /// Driver disk cache directory (`CUDA_CACHE_PATH`).
    pub driver_cache_path: Option<String>,
    /// True when the user set `CUDA_CACHE_PATH` (vyrescope then leaves it alone).
    pub driver_cache_user_set: bool,
}

pub use crate::util::hash::{fnv1a, hash_parts};

/// A least-recently-used map with statistics.
#[derive(Debug)]
pub struct Lru<V> {
    map: HashMap<u64, (V, u64, u64, f64)>,
    capacity: usize,
    tick: u64,
    stats: CacheStats,
}

impl<V> Lru<V> {
    /// An empty cache holding at most `capacity` entries.
    pub fn new(capacity: usize) -> Self {
        Lru {
            map: HashMap::new(),
            capacity: capacity.max(1),
            tick: 0,
            stats: CacheStats::default(),
        }
    }

    /// Looks `key` up, counting a hit (with the build time saved) or a miss.
    pub fn get(&mut self, key: u64) -> Option<&V> {
        self.tick += 1;
        let tick = self.tick;
        match self.map.get_mut(&key) {
            Some(e) => {
                e.1 = tick;
                self.stats.hits += 1;
                self.stats.saved_ms += e.3;
                Some(&e.0)
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }

    /// Looks `key` up without counting it (launch paths look up a module they already
    /// loaded; only load requests count as hits or misses). Refreshes recency.
    pub fn peek(&mut self, key: u64) -> Option<&V> {
        self.tick += 1;
        let tick = self.tick;
        self.map.get_mut(&key).map(|e| {
            e.1 = tick;
            &e.0
        })
    }

    /// Inserts an entry of `bytes` that took `build_ms` to make; evicts the least recently
    /// used entries beyond capacity.
    pub fn insert(&mut self, key: u64, value: V, bytes: u64, build_ms: f64) {
        self.tick += 1;
        if let Some(old) = self.map.insert(key, (value, self.tick, bytes, build_ms)) {
            self.stats.bytes -= old.2;
        } else {
            self.stats.entries += 1;
        }
        self.stats.bytes += bytes;
        while self.map.len() > self.capacity {
            let Some(oldest) = self.map.iter().min_by_key(|(_, e)| e.1).map(|(k, _)| *k) else {
                break;
            };
            if let Some(e) = self.map.remove(&oldest) {
                self.stats.bytes -= e.2;
                self.stats.entries -= 1;
                self.stats.evictions += 1;
            }
        }
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.stats.bytes
    }

    /// Statistics so far.
    pub fn stats(&self) -> CacheStats {
        self.stats.clone()
    }
}

/// Emitted kernels by (program hash, workgroup, target, options).
pub type PtxCache = Lru<EmittedKernel>;

/// A module loaded in the current context, with its kernel function.
pub(super) struct LoadedKernel {
    pub(super) function: Function,
    pub(super) info: KernelInfo,
    // Kept last: the function handle is only valid while the module is loaded.
    pub(super) _module: Module,
}

/// Loaded modules by (PTX hash, device, JIT options); lives and dies with its context.
pub(super) type ModuleCache = Lru<LoadedKernel>;

/// Where the driver keeps compiled PTX between processes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct DriverCache {
    pub(super) path: Option<String>,
    pub(super) user_set: bool,
}

impl DriverCache {
    /// Points `CUDA_CACHE_PATH` at `<user cache dir>/vyrescope/cuda-jit` unless the user set
    /// it. Must run before the driver is initialised.
    pub(super) fn configure() -> DriverCache {
        if let Some(v) = std::env::var_os("CUDA_CACHE_PATH") {
            return DriverCache {
                path: Some(v.to_string_lossy().into_owned()),
                user_set: true,
            };
        }
        let Some(dir) = driver_cache_dir() else {
            return DriverCache::default();
        };
        if std::fs::create_dir_all(&dir).is_err() {
            return DriverCache::default();
        }
        // The process is still single-threaded with respect to CUDA here (the driver is not
        // initialised yet), and nothing else reads this variable concurrently.
        std::env::set_var("CUDA_CACHE_PATH", &dir);
        DriverCache {
            path: Some(dir.to_string_lossy().into_owned()),
            user_set: false,
        }
    }
}

/// `<user cache dir>/vyrescope/cuda-jit`.
pub fn driver_cache_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("vyrescope").join("cuda-jit"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_counts_and_evicts_least_recent() {
        let mut c: Lru<u32> = Lru::new(2);
        assert!(c.get(1).is_none());
        c.insert(1, 10, 100, 5.0);
        c.insert(2, 20, 50, 7.0);
        assert_eq!(c.get(1), Some(&10)); // 1 is now more recent than 2
        c.insert(3, 30, 10, 1.0); // evicts 2
        assert!(c.get(2).is_none());
        assert_eq!(c.get(3), Some(&30));
        let s = c.stats();
        assert_eq!(
            (s.entries, s.bytes, s.hits, s.misses, s.evictions),
            (2, 110, 2, 2, 1)
        );
        assert!((s.saved_ms - 6.0).abs() < 1e-9);
        // Re-inserting a key replaces its bytes, not adds.
        c.insert(3, 31, 40, 1.0);
        assert_eq!(c.stats().bytes, 140);
        assert_eq!(c.len(), 2);
    }
}
