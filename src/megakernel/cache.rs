//! The plan cache: one JSON file per key under `dirs::cache_dir()/vyrescope/plan/`, next to
//! the tuning cache (`.../vyrescope/tune/`). The key hashes everything a plan depends on: this
//! vyrescope version, the pipeline (name, buffers, every step's Program text, bindings and
//! overrides), the launch shapes, the device profile and the planner options. Buffer contents
//! are left out: no plan depends on them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ir::{program_to_json, Pipeline};
use crate::shape::LaunchShape;
use crate::util::{build_id, hash_parts, read_limited, write_atomic, Problem, ReadErrorKind};

use super::deps::analyse;
use super::plan::{plan, CacheStatus, Plan, PlanError, PlanOptions};

/// A plan cache directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanCache {
    dir: PathBuf,
    /// Looked up, never written ([`PlanCache::read_only`]).
    read_only: bool,
}

/// What one cache file holds: the key it was written for (a second check against hash
/// collisions of the file name) and the plan.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    key: String,
    plan: Plan,
}

/// Largest plan cache file read: a plan lists its groups, waves and dependences (a few KiB
/// for real pipelines; a 10,000-step chain is a few MiB).
pub const MAX_ENTRY_BYTES: u64 = 64 << 20;

/// Entries the cache keeps: storing one more removes the least recently written ones.
/// A plan file is a few KiB, so the cache stays around a megabyte.
pub const MAX_ENTRIES: usize = 256;

/// A plan, and what went wrong with the cache if anything (planning never fails because of
/// the cache: an unreadable or unwritable cache is a warning).
#[derive(Debug, Clone, PartialEq)]
pub struct Cached {
    /// The plan; `cache` says whether it was read from the cache.
    pub plan: Plan,
    /// A cache problem to report (with its `Fix:`), if any.
    pub warning: Option<String>,
    /// Older entries removed to make room for this one.
    pub evicted: u32,
}

/// Plan-cache counters of one session (the CLI's runtime telemetry, the inspector's Cache
/// and Telemetry tabs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PlanCacheCounts {
    /// Plans read from the cache.
    pub hits: u64,
    /// Plans computed because the cache had none (or no cache was in use).
    pub misses: u64,
    /// Entries removed to stay within [`MAX_ENTRIES`].
    pub evictions: u64,
}

impl PlanCacheCounts {
    /// Counts one planning.
    pub fn record(&mut self, c: &Cached) {
        match c.plan.cache {
            CacheStatus::Hit => self.hits += 1,
            _ => self.misses += 1,
        }
        self.evictions += u64::from(c.evicted);
    }

    /// `plan_cache.*` rows for a counters table.
    pub fn rows(&self) -> Vec<(String, String)> {
        vec![
            ("plan_cache.hits".into(), self.hits.to_string()),
            ("plan_cache.misses".into(), self.misses.to_string()),
            ("plan_cache.evictions".into(), self.evictions.to_string()),
        ]
    }
}

impl PlanCache {
    /// `dirs::cache_dir()/vyrescope/plan/`; `None` when the system has no user cache
    /// directory.
    pub fn user() -> Option<PlanCache> {
        dirs::cache_dir().map(|d| PlanCache::at(d.join("vyrescope").join("plan")))
    }

    /// A cache in `dir` (tests, or a custom location).
    pub fn at(dir: impl Into<PathBuf>) -> PlanCache {
        PlanCache {
            dir: dir.into(),
            read_only: false,
        }
    }

    /// The same cache, only looked up: a plan or a recorded decision is read from it, and
    /// nothing is ever stored (front ends that show a plan without making one their own:
    /// `emit`, `sass`, `occupancy` and the reference `run`).
    pub fn read_only(self) -> PlanCache {
        PlanCache {
            read_only: true,
            ..self
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `key`.
    pub fn path(&self, key: u64) -> PathBuf {
        self.dir.join(format!("{key:016x}.json"))
    }

    /// The cached plan of `key`: `Ok(None)` when absent, or unreadable as a plan of this key
    /// (a stale or corrupt entry is a miss and gets overwritten).
    ///
    /// The file is read like every other input: only a regular file of at most
    /// [`MAX_ENTRY_BYTES`] (a FIFO, a link to a device or a huge file is a warning, never a
    /// hang or an allocation of its size).
    pub fn load(&self, key: u64) -> Result<Option<Plan>, Problem> {
        let p = self.path(key);
        match read_limited(&p, MAX_ENTRY_BYTES, "plan cache entry") {
            Ok(bytes) => Ok(serde_json::from_slice::<Entry>(&bytes)
                .ok()
                .filter(|e| e.key == format!("{key:016x}"))
                .map(|e| e.plan)),
            Err(e) if e.kind == ReadErrorKind::NotFound => Ok(None),
            Err(e) => Err(Problem::new(
                format!("plan cache: {}; planned afresh", e.message),
                format!("delete {} (the next plan rewrites it)", p.display()),
            )),
        }
    }

    /// Stores `plan` under `key` (atomically: a crash never leaves half a file), then
    /// evicts the least recently written entries beyond [`MAX_ENTRIES`]; returns how many.
    /// A read-only cache stores nothing and evicts nothing.
    pub fn store(&self, key: u64, plan: &Plan) -> Result<u32, Problem> {
        if self.read_only {
            return Ok(0);
        }
        let fail = |p: &Path, e: &dyn std::fmt::Display| {
            Problem::new(
                format!("plan cache {}: {e}", p.display()),
                "check that the directory is writable (or set XDG_CACHE_HOME), or delete it",
            )
        };
        std::fs::create_dir_all(&self.dir).map_err(|e| fail(&self.dir, &e))?;
        let p = self.path(key);
        let entry = Entry {
            key: format!("{key:016x}"),
            plan: plan.clone(),
        };
        let text = serde_json::to_string_pretty(&entry).map_err(|e| fail(&p, &e))?;
        write_atomic(&p, text.as_bytes()).map_err(|e| fail(&p, &e))?;
        Ok(self.evict(&p, MAX_ENTRIES))
    }

    /// Removes the oldest plan files (by modification time) until at most `keep` remain,
    /// never `newest`; returns how many went. Only this cache's own file names
    /// (16 hex digits + `.json`) are touched, and a file that cannot be removed is left.
    fn evict(&self, newest: &Path, keep: usize) -> u32 {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = dir
            .filter_map(|e| e.ok())
            .filter(|e| is_plan_file(&e.file_name().to_string_lossy()))
            .filter_map(|e| {
                let m = e.metadata().ok().filter(|m| m.is_file())?;
                Some((m.modified().ok()?, e.path()))
            })
            .collect();
        if files.len() <= keep {
            return 0;
        }
        files.sort();
        let mut excess = files.len() - keep;
        let mut evicted = 0;
        for (_, f) in files {
            if excess == 0 {
                break;
            }
            if f != newest && std::fs::remove_file(&f).is_ok() {
                evicted += 1;
                excess -= 1;
            }
        }
        evicted
    }
}

/// A plan cache file name: `{key:016x}.json`.
fn is_plan_file(name: &str) -> bool {
    name.strip_suffix(".json")
        .is_some_and(|k| k.len() == 16 && k.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The cache key of a plan of `pipeline` with `shapes` under `opts`.
pub fn plan_key(pipeline: &Pipeline, shapes: &[LaunchShape], opts: &PlanOptions) -> u64 {
    let mut text = format!("pipeline {}\n", pipeline.name);
    for b in &pipeline.buffers {
        text.push_str(&format!(
            "buffer {} {} len {:?} transient {}\n",
            b.name,
            b.elem.name(),
            b.contents.len,
            b.transient
        ));
    }
    for s in &pipeline.steps {
        // The Program's canonical JSON; a Program the writer refuses still hashes by its
        // debug form (which holds every field).
        let prog = program_to_json(&s.program).unwrap_or_else(|_| format!("{:?}", s.program));
        text.push_str(&format!(
            "step bind {:?} wg {:?} grid {:?} elements {:?}\n{prog}\n",
            s.bind, s.workgroup_size, s.grid, s.elements
        ));
    }
    let shapes = serde_json::to_string(shapes).unwrap_or_default();
    // Where the device figures came from is not a figure: a probe's provenance names the day
    // it ran, and the inspector labels a profile's source for display. A choice
    // `--decide measure` recorded must be found the next day, by the inspector, and by an
    // offline command given the same probe saved to a file.
    let mut opts = opts.clone();
    opts.device.provenance.clear();
    opts.device.source.clear();
    let opts = serde_json::to_string(&opts).unwrap_or_default();
    hash_parts(&[
        b"vyrescope plan",
        build_id().as_bytes(),
        text.as_bytes(),
        shapes.as_bytes(),
        opts.as_bytes(),
    ])
}

/// Plans through `cache`: a hit returns the stored plan (`cache: hit`), a miss plans and
/// stores it (`cache: miss`). Without a cache it always plans.
pub fn plan_cached(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    opts: &PlanOptions,
    cache: Option<&PlanCache>,
) -> Result<Cached, PlanError> {
    let key = plan_key(pipeline, shapes, opts);
    let mut warning = None;
    if let Some(c) = cache {
        match c.load(key) {
            Ok(Some(mut p)) => {
                // An entry is a claim about this pipeline: it is used only when the fresh
                // dependences agree with it and its barriers order every one of them.
                let deps = analyse(pipeline, shapes)?;
                match super::cache_check::check_plan(&p, pipeline, &deps, shapes) {
                    Ok(()) => {
                        p.cache = CacheStatus::Hit;
                        return Ok(Cached {
                            plan: p,
                            warning: None,
                            evicted: 0,
                        });
                    }
                    Err(why) => {
                        warning = Some(format!(
                            "plan cache entry {} disagrees with the pipeline: {why}; planned afresh\n  Fix: nothing to do (the entry is rewritten); a cache entry edited by hand is never used",
                            c.path(key).display()
                        ))
                    }
                }
            }
            Ok(None) => {}
            Err(w) => warning = Some(w.to_string()),
        }
    }
    let p = plan(pipeline, shapes, opts)?;
    let mut evicted = 0;
    if let Some(c) = cache {
        match c.store(key, &p) {
            Ok(n) => evicted = n,
            Err(w) => warning = Some(w.to_string()),
        }
    }
    Ok(Cached {
        plan: p,
        warning,
        evicted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::megakernel::test_support::{copy, pipeline, shape};
    use crate::occupancy::profiles;

    const GID: &str = r#"{"gid": "x"}"#;

    fn setup() -> (Pipeline, Vec<LaunchShape>, PlanOptions) {
        let p = pipeline(vec![
            (
                copy("a", [256, 1, 1], GID, GID),
                &[("src", "x"), ("dst", "y")],
            ),
            (
                copy("b", [256, 1, 1], r#"{"add": [{"gid": "x"}, 3]}"#, GID),
                &[("src", "y"), ("dst", "z")],
            ),
        ]);
        let s = shape([256, 1, 1], [16, 1, 1]);
        let opts = PlanOptions::new(profiles::load("h200").unwrap());
        (p, vec![s, s], opts)
    }

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "vyrescope-plan-cache-{tag}-{}-{:x}",
            std::process::id(),
            crate::util::fnv1a(format!("{:?}", std::time::SystemTime::now()).as_bytes())
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn miss_then_hit_with_the_same_plan() {
        let (p, s, o) = setup();
        let dir = tempdir("hit");
        let cache = PlanCache::at(&dir);
        let first = plan_cached(&p, &s, &o, Some(&cache)).unwrap();
        assert_eq!(first.plan.cache, CacheStatus::Miss);
        assert!(first.warning.is_none());
        let second = plan_cached(&p, &s, &o, Some(&cache)).unwrap();
        assert_eq!(second.plan.cache, CacheStatus::Hit);
        let mut expect = first.plan.clone();
        expect.cache = CacheStatus::Hit;
        assert_eq!(second.plan, expect);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn storing_beyond_the_limit_evicts_the_oldest_entries_and_counts_them() {
        let (p, s, o) = setup();
        let dir = tempdir("evict");
        let cache = PlanCache::at(&dir);
        let first = plan_cached(&p, &s, &o, Some(&cache)).unwrap();
        let plan = first.plan.clone();
        // Fill the cache to the limit with older entries (and one foreign file, which is
        // never touched).
        std::fs::write(dir.join("notes.json"), "{}").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for k in 1..MAX_ENTRIES as u64 {
            let f = cache.path(k);
            std::fs::write(&f, "{}").unwrap();
            let h = std::fs::File::options().write(true).open(&f).unwrap();
            h.set_modified(old + std::time::Duration::from_secs(k))
                .unwrap();
        }
        // Exactly at the limit: nothing goes.
        assert_eq!(cache.evict(&cache.path(0), MAX_ENTRIES), 0);
        // Three more entries: the three oldest go, never the newest or the foreign file.
        let mut counts = PlanCacheCounts::default();
        counts.record(&first);
        for k in [10_000u64, 10_001, 10_002] {
            let evicted = cache.store(k, &plan).unwrap();
            assert_eq!(evicted, 1, "entry {k}");
            counts.record(&Cached {
                plan: plan.clone(),
                warning: None,
                evicted,
            });
        }
        for k in 1..=3 {
            assert!(!cache.path(k).exists(), "entry {k} should be evicted");
        }
        assert!(cache.path(4).exists());
        assert!(cache.path(10_002).exists());
        assert!(dir.join("notes.json").exists());
        assert_eq!(
            counts,
            PlanCacheCounts {
                hits: 0,
                misses: 4,
                evictions: 3
            }
        );
        let again = plan_cached(&p, &s, &o, Some(&cache)).unwrap();
        counts.record(&again);
        assert_eq!(counts.hits, 1);
        assert_eq!(
            counts.rows()[2],
            ("plan_cache.evictions".into(), "3".into())
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn key_changes_with_program_device_shapes_and_options() {
        let (p, s, o) = setup();
        let k = plan_key(&p, &s, &o);
        assert_eq!(k, plan_key(&p, &s, &o));
        let mut p2 = p.clone();
        p2.steps[1].program.workgroup_size = [128, 1, 1];
        assert_ne!(k, plan_key(&p2, &s, &o));
        let mut s2 = s.clone();
        s2[0].grid = [8, 1, 1];
        assert_ne!(k, plan_key(&p, &s2, &o));
        let o2 = PlanOptions::new(profiles::load("a100").unwrap());
        assert_ne!(k, plan_key(&p, &s, &o2));
        let mut o3 = o.clone();
        o3.registers = vec![Some(40)];
        assert_ne!(k, plan_key(&p, &s, &o3));
        let mut p3 = p.clone();
        p3.steps[0].bind[1].1 = "w".into();
        assert_ne!(k, plan_key(&p3, &s, &o));
        // Another day's probe of the same device is the same device.
        let mut o4 = o.clone();
        o4.device.provenance = "probed on 2026-12-08 (UTC)".into();
        o4.device.source = "bundled profile".into();
        assert_eq!(k, plan_key(&p, &s, &o4));
    }

    #[test]
    fn corrupt_entry_is_a_miss_and_is_overwritten() {
        let (p, s, o) = setup();
        let dir = tempdir("corrupt");
        let cache = PlanCache::at(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let key = plan_key(&p, &s, &o);
        std::fs::write(cache.path(key), "{not json").unwrap();
        let r = plan_cached(&p, &s, &o, Some(&cache)).unwrap();
        assert_eq!(r.plan.cache, CacheStatus::Miss);
        assert!(cache.load(key).unwrap().is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unwritable_cache_is_a_warning_not_an_error() {
        let (p, s, o) = setup();
        let dir = tempdir("file");
        // A plain file where the directory should be: create_dir_all fails.
        std::fs::write(&dir, b"x").unwrap();
        let r = plan_cached(&p, &s, &o, Some(&PlanCache::at(&dir))).unwrap();
        assert_eq!(r.plan.cache, CacheStatus::Miss);
        let w = r.warning.expect("warning");
        assert!(w.contains("Fix:"), "{w}");
        let _ = std::fs::remove_file(&dir);
    }
}
