//! Converted Programs, cached per vyre Program: vyre's Program is made what vyre's
//! reference runs (calls inlined, single-rank collectives lowered) and imported once
//! (`vyre::catalog::import_for_reference`, the catalogue's own path); each launch shape gets
//! its validated variant (the workgroup set, the grid the validator's one-workgroup rule
//! reads), also kept. Devices cache compiled kernels per [`ProgramKey`].

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use vyre_foundation::ir::Program as VyreProgram;

use super::device::ProgramKey;
use crate::ir::Program;
use crate::shape::LaunchShape;
use crate::vyre::catalog::{import_for_reference, validate_for_grid, Refusal};

/// Most vyre Programs kept converted; past it the cache starts over (conversion is cheap
/// next to a GPU compile, which the device caches separately).
const CAPACITY: usize = 512;
/// Most launch shapes kept per Program.
const SHAPES: usize = 64;

/// A conversion or a launch variant, or why there is none (kept: a refusal is not retried).
type Outcome<T> = Result<Arc<T>, Refusal>;

/// One vyre Program, converted.
#[derive(Debug)]
pub struct Converted {
    /// What vyre's reference runs (binding uses its buffer declarations).
    pub vyre: VyreProgram,
    /// Our Program as imported.
    pub ours: Program,
    /// vyre's fingerprint of the Program as given.
    pub fingerprint: [u8; 32],
    shapes: Mutex<HashMap<[u32; 6], Outcome<Program>>>,
}

impl Converted {
    /// The Program for a launch of `shape`: our import with the workgroup size and grid set,
    /// validated (its errors refuse it).
    pub fn for_launch(&self, shape: &LaunchShape) -> Result<Arc<Program>, Refusal> {
        let mut k = [0u32; 6];
        k[..3].copy_from_slice(&shape.workgroup_size);
        k[3..].copy_from_slice(&shape.grid);
        let mut shapes = self.shapes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = shapes.get(&k) {
            return r.clone();
        }
        let mut p = self.ours.clone();
        p.workgroup_size = shape.workgroup_size;
        let r = validate_for_grid(&mut p, Some(shape.grid)).map(|()| Arc::new(p));
        if shapes.len() >= SHAPES {
            shapes.clear();
        }
        shapes.insert(k, r.clone());
        r
    }

    /// The device cache key of this Program at `workgroup`.
    pub fn key(&self, workgroup: [u32; 3]) -> ProgramKey {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.fingerprint.hash(&mut h);
        workgroup.hash(&mut h);
        h.finish()
    }
}

/// The conversion cache.
#[derive(Debug, Default)]
pub struct Programs {
    map: Mutex<HashMap<[u8; 32], Outcome<Converted>>>,
}

impl Programs {
    /// `vp` converted (from the cache when seen before). A panic inside vyre while
    /// fingerprinting or lowering is a refusal (`VYC01`).
    pub fn get(&self, vp: &VyreProgram) -> Result<Arc<Converted>, Refusal> {
        let fingerprint =
            catch_unwind(AssertUnwindSafe(|| vp.fingerprint())).map_err(|_| Refusal {
                codes: vec!["VYC01".into()],
                message:
                    "vyre panicked while fingerprinting the Program (its wire encoding failed)"
                        .into(),
            })?;
        if let Some(r) = self.lock().get(&fingerprint) {
            return r.clone();
        }
        let name = crate::vyre::import::identifier(vp.entry_op_id().unwrap_or("vyre_program"));
        let r = import_for_reference(vp, &name).map(|(vyre, ours)| {
            Arc::new(Converted {
                vyre,
                ours,
                fingerprint,
                shapes: Mutex::new(HashMap::new()),
            })
        });
        let mut map = self.lock();
        if map.len() >= CAPACITY {
            map.clear();
        }
        map.insert(fingerprint, r.clone());
        r
    }

    /// Forgets every conversion.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Outcome<Converted>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }
}
