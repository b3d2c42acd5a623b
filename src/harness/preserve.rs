//! Does workgroup size W preserve a Program's results? The one check behind every
//! workgroup-size suggestion: the `occupancy` suggestion and the inspector's Occupancy tab,
//! the inspector's `[`/`]`/`w` keys, the `tune` sweep (GPU and `--offline`), `diff @wg=`,
//! `check --workgroup` and a pipeline step run at another size ([`step_preserves`]).
//!
//! The Program runs on the reference interpreter at its own workgroup size and at W, from
//! the same `run` inputs (`inputs::prepare_rooted`, as `run --workgroup W` prepares them),
//! and the outputs are compared by the runtime's parity rules (`runtime::parity::compare_with`
//! with the Program's tolerance, float atomic sums within their order bound). A size that
//! makes the reference stop (a workgroup-buffer overrun, a divergent barrier) changes the
//! results too.
//!
//! Cost is bounded: a run of more than [`MAX_CHECKED_INVOCATIONS`] invocations, more than
//! [`MAX_HOST_BYTES`] of host buffers or more than [`FUEL`] interpreter steps is not checked
//! ("not checked: too large"), never claimed safe. Answers are cached in memory per (Program
//! hash, input folder, size), and the own size's outputs per Program, so the inspector asks
//! again for free; the inspector asks from its analysis worker, never the UI thread.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use crate::diagnostics::wg_dependence::Preservation;
use crate::inputs::{self, FileRoot, HostBuffer, LaunchShape};
use crate::interp::float_sums::FloatSums;
use crate::ir::Program;
use crate::runtime::execute::tolerance_for;
use crate::runtime::parity;

/// Most invocations one checked run may have (2^22): about a second of interpreter time per
/// run in an optimised build for a short kernel.
pub const MAX_CHECKED_INVOCATIONS: u64 = 1 << 22;

/// Most bytes of host buffers one checked run may hold (256 MiB; the two sizes' outputs are
/// held at once).
pub const MAX_HOST_BYTES: u64 = 256 << 20;

/// Interpreter steps per checked run (2^30, a quarter of the interpreter's default budget).
pub const FUEL: u64 = 1 << 30;

/// Answers kept at most before the cache starts over (a long tuning session).
const CACHE_MAX: usize = 4096;

/// Own-size outputs kept at most (each may be large).
const OWN_MAX: usize = 4;

type Key = (u64, [u32; 3]);

/// The reference run at the Program's own size: outputs and float sums, or the
/// [`Preservation::NotChecked`] answer every other size then gets.
type OwnRun = Arc<Result<(Vec<HostBuffer>, FloatSums), Preservation>>;

#[derive(Default)]
struct Cache {
    answers: HashMap<Key, Preservation>,
    own: Vec<(u64, OwnRun)>,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: std::sync::OnceLock<Mutex<Cache>> = std::sync::OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// Where a Program's `file` inputs come from (its folder, `--root`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Inputs {
    /// Folder relative paths resolve against (the Program file's folder).
    pub base: PathBuf,
    /// Folder they must stay inside (`--root`; `None`: `base`).
    pub root: Option<PathBuf>,
}

impl Inputs {
    /// Inputs of the Program file `file` (its folder), confined to `root` when given.
    pub fn of_file(file: &Path, root: Option<&Path>) -> Self {
        Inputs {
            base: file
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf(),
            root: root.map(Path::to_path_buf),
        }
    }

    fn files(&self) -> FileRoot<'_> {
        FileRoot {
            base: &self.base,
            root: self.root.as_deref().unwrap_or(&self.base),
        }
    }
}

fn program_key(program: &Program, files: &Inputs) -> u64 {
    let text =
        crate::ir::write::program_to_json(program).unwrap_or_else(|_| format!("{program:?}"));
    let base = files.base.to_string_lossy();
    let root = files
        .root
        .as_deref()
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_default();
    crate::util::hash::hash_parts(&[text.as_bytes(), base.as_bytes(), root.as_bytes()])
}

/// Does running `program` at workgroup size `wg` give the outputs of its own size? The one
/// answer every workgroup-size suggestion uses (see the module docs); cached.
pub fn preserves(program: &Program, files: &Inputs, wg: [u32; 3]) -> Preservation {
    if wg == program.workgroup_size {
        return Preservation::Preserved;
    }
    let key = (program_key(program, files), wg);
    if let Some(p) = lock().answers.get(&key) {
        return p.clone();
    }
    let own = own_run(program, files, key.0);
    let answer = match &*own {
        Err(not_checked) => not_checked.clone(),
        Ok((own_out, sums)) => match prepared(program, files, wg) {
            Err(p) => p,
            Ok((shape, mut buffers)) => {
                compare_run(program, &shape, &mut buffers, own_out, sums, wg)
            }
        },
    };
    let mut c = lock();
    if c.answers.len() >= CACHE_MAX {
        c.answers.clear();
    }
    c.answers.insert(key, answer.clone());
    answer
}

/// [`preserves`] for a pipeline step: `program` runs on `buffers` (the pipeline's buffers as
/// the step finds them, in its host-buffer order) over `own` and over `at`, and the outputs
/// are compared by the same rules. Not cached (the buffers are the step's, not a file's).
pub fn step_preserves(
    program: &Program,
    buffers: &[HostBuffer],
    own: &LaunchShape,
    at: &LaunchShape,
) -> Preservation {
    if own == at {
        return Preservation::Preserved;
    }
    if let Err(p) = within_bounds(own, buffers).and(within_bounds(at, buffers)) {
        return p;
    }
    let mut reference = buffers.to_vec();
    let sums = match run(program, own, &mut reference) {
        Ok(s) => s,
        Err(Stop::Budget) => return too_large_fuel(),
        Err(Stop::Error(e)) => {
            return Preservation::NotChecked {
                why: format!("the reference interpreter stops at the own size: {e}"),
            }
        }
    };
    reference.retain(HostBuffer::is_output);
    let mut mine = buffers.to_vec();
    compare_run(program, at, &mut mine, &reference, &sums, at.workgroup_size)
}

/// [`step_preserves`] for step `step` of `pipeline` at workgroup size `wg`: the steps before
/// it run on the reference interpreter from `prepared`'s buffers (as the pipeline runs them),
/// then the step runs at its own shape and at `wg` with a grid that covers as many threads
/// along each axis (`ceil(grid * own / wg)`, what a step's `elements` would give). `prepared`
/// is not changed. Used wherever a pipeline step is offered another workgroup size.
pub fn pipeline_step_preserves(
    pipeline: &crate::ir::Pipeline,
    prepared: &crate::inputs::pipeline::PreparedPipeline,
    step: usize,
    wg: [u32; 3],
) -> Preservation {
    let (Some(s), Some(ps)) = (pipeline.steps.get(step), prepared.steps.get(step)) else {
        return Preservation::NotChecked {
            why: format!("the pipeline has no step {step}"),
        };
    };
    let own = ps.shape;
    let grid = std::array::from_fn(|i| {
        let threads = u64::from(own.grid[i]) * u64::from(own.workgroup_size[i]);
        let g = threads.div_ceil(u64::from(wg[i].max(1))).max(1);
        u32::try_from(g).unwrap_or(u32::MAX)
    });
    let at = LaunchShape {
        workgroup_size: wg,
        grid,
    };
    let mut before = prepared.clone();
    let opts = crate::interp::Options {
        fuel: FUEL,
        ..crate::interp::Options::default()
    };
    for i in 0..step {
        let shape = before.steps[i].shape;
        if shape.invocations() > MAX_CHECKED_INVOCATIONS {
            return too_large_invocations(&shape);
        }
        let mut host = before.take_step_buffers(i);
        let r = crate::interp::run_with(&pipeline.steps[i].program, &shape, &mut host, &opts);
        before.put_back(i, host);
        match r {
            Ok(_) => {}
            Err(e) if e.code == "I003" => return too_large_fuel(),
            Err(e) => {
                return Preservation::NotChecked {
                    why: format!(
                        "the reference interpreter stops at steps[{i}]: {}",
                        e.message
                    ),
                }
            }
        }
    }
    let buffers = before.take_step_buffers(step);
    step_preserves(&s.program, &buffers, &own, &at)
}

fn lock() -> std::sync::MutexGuard<'static, Cache> {
    // A panic while holding the lock leaves only a cache behind: keep using it.
    cache().lock().unwrap_or_else(|e| e.into_inner())
}

/// Computes and caches the own size's reference outputs, so that [`preserves`] calls made in
/// parallel afterwards share one run instead of each starting its own.
pub fn own_outputs(program: &Program, files: &Inputs) {
    own_run(program, files, program_key(program, files));
}

/// The own size's reference outputs (cached per Program).
fn own_run(program: &Program, files: &Inputs, key: u64) -> OwnRun {
    if let Some((_, r)) = lock().own.iter().find(|(k, _)| *k == key) {
        return r.clone();
    }
    let result = match prepared(program, files, program.workgroup_size) {
        Err(p @ Preservation::NotChecked { .. }) => Err(p),
        Err(other) => Err(Preservation::NotChecked { why: other.text() }),
        Ok((shape, mut buffers)) => match run(program, &shape, &mut buffers) {
            Ok(sums) => {
                buffers.retain(HostBuffer::is_output);
                Ok((buffers, sums))
            }
            Err(Stop::Budget) => Err(too_large_fuel()),
            Err(Stop::Error(e)) => Err(Preservation::NotChecked {
                why: format!("the reference interpreter stops at the own size: {e}"),
            }),
        },
    };
    let r: OwnRun = Arc::new(result);
    let mut c = lock();
    if c.own.len() >= OWN_MAX {
        c.own.remove(0);
    }
    c.own.push((key, r.clone()));
    r
}

enum Stop {
    Budget,
    Error(String),
}

fn too_large_fuel() -> Preservation {
    Preservation::NotChecked {
        why: format!("too large: more than {FUEL} interpreter steps"),
    }
}

/// Shape and buffers for `wg`, within the check's bounds.
fn prepared(
    program: &Program,
    files: &Inputs,
    wg: [u32; 3],
) -> Result<(LaunchShape, Vec<HostBuffer>), Preservation> {
    // Sizes first, from lengths only, so nothing large is allocated.
    let (shape, lens) = inputs::default_shape(program, wg);
    if shape.invocations() > MAX_CHECKED_INVOCATIONS {
        return Err(too_large_invocations(&shape));
    }
    let bytes: u64 = lens
        .iter()
        .filter_map(|(n, l)| {
            program
                .buffer(n)
                .map(|b| l.saturating_mul(b.elem.size_bytes() as u64))
        })
        .sum();
    if bytes > MAX_HOST_BYTES {
        return Err(too_large_bytes(bytes));
    }
    match inputs::prepare_rooted(program, files.files(), Some(wg), None) {
        Ok(p) => match within_bounds(&p.shape, &p.buffers) {
            Ok(()) => Ok((p.shape, p.buffers)),
            Err(e) => Err(e),
        },
        Err(e) if wg == program.workgroup_size => Err(Preservation::NotChecked {
            why: format!("the inputs cannot be prepared: {}", e.message),
        }),
        Err(e) => Err(Preservation::Changed {
            first: format!("the inputs cannot be prepared at this size: {}", e.message),
            mismatches: 0,
        }),
    }
}

fn too_large_invocations(shape: &LaunchShape) -> Preservation {
    Preservation::NotChecked {
        why: format!(
            "too large: {} invocations, the check runs at most {MAX_CHECKED_INVOCATIONS}",
            shape.invocations()
        ),
    }
}

fn too_large_bytes(bytes: u64) -> Preservation {
    Preservation::NotChecked {
        why: format!(
            "too large: {} MiB of buffers, the check holds at most {} MiB",
            bytes >> 20,
            MAX_HOST_BYTES >> 20
        ),
    }
}

fn within_bounds(shape: &LaunchShape, buffers: &[HostBuffer]) -> Result<(), Preservation> {
    if shape.invocations() > MAX_CHECKED_INVOCATIONS {
        return Err(too_large_invocations(shape));
    }
    let bytes: u64 = buffers.iter().map(|b| b.data.len() as u64).sum();
    if bytes > MAX_HOST_BYTES {
        return Err(too_large_bytes(bytes));
    }
    Ok(())
}

fn run(
    program: &Program,
    shape: &LaunchShape,
    buffers: &mut [HostBuffer],
) -> Result<FloatSums, Stop> {
    let opts = crate::interp::Options {
        fuel: FUEL,
        ..crate::interp::Options::default()
    };
    match crate::interp::run_with_sums(program, shape, buffers, &opts) {
        Ok((_, sums)) => Ok(sums),
        Err(e) if e.code == "I003" => Err(Stop::Budget),
        Err(e) => Err(Stop::Error(match &e.node {
            Some(n) => format!("{n}: {}", e.message),
            None => e.message,
        })),
    }
}

/// Runs at `wg` and compares the outputs with the own size's (`own_out`: the own run's
/// output buffers only, in the same order as the outputs of `buffers`).
fn compare_run(
    program: &Program,
    shape: &LaunchShape,
    buffers: &mut [HostBuffer],
    own_out: &[HostBuffer],
    sums: &FloatSums,
    wg: [u32; 3],
) -> Preservation {
    let at = format!("{}x{}x{}", wg[0], wg[1], wg[2]);
    match run(program, shape, buffers) {
        Err(Stop::Budget) => return too_large_fuel(),
        Err(Stop::Error(e)) => {
            return Preservation::Changed {
                first: format!("the reference interpreter stops at {at}: {e}"),
                mismatches: 0,
            }
        }
        Ok(_) => {}
    }
    let mine: Vec<HostBuffer> = buffers.iter().filter(|b| b.is_output()).cloned().collect();
    let rep = parity::compare_with(&mine, own_out, tolerance_for(program), Some(sums));
    if rep.passed {
        return Preservation::Preserved;
    }
    let first = rep.first.first().map_or_else(
        || "outputs differ".to_string(),
        |m| {
            if m.gpu.ends_with("elements") {
                format!("`{}` has {} vs {}", m.buffer, m.gpu, m.reference)
            } else {
                format!("{}[{}] {} vs {}", m.buffer, m.index, m.gpu, m.reference)
            }
        },
    );
    Preservation::Changed {
        first,
        mismatches: rep.mismatches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> (Program, Inputs) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/programs")
            .join(name);
        let p = crate::ir::load_program(&path).unwrap();
        (p, Inputs::of_file(&path, None))
    }

    #[test]
    fn the_own_size_preserves_without_running() {
        let (p, files) = fixture("vadd_f32.json");
        assert_eq!(
            preserves(&p, &files, p.workgroup_size),
            Preservation::Preserved
        );
    }

    #[test]
    fn reduce_sum_at_other_sizes_changes_results_and_names_the_first_difference() {
        let (p, files) = fixture("reduce_sum_f32.json");
        for wg in [[64, 1, 1], [128, 1, 1]] {
            match preserves(&p, &files, wg) {
                Preservation::Changed { first, mismatches } => {
                    assert!(first.contains("partial"), "{first}");
                    assert!(mismatches > 0 || first.contains("stops"), "{first}");
                }
                other => panic!("{wg:?}: {other:?}"),
            }
        }
        // 512 threads write tile[lid] past its 256 elements: the reference stops.
        let p512 = preserves(&p, &files, [512, 1, 1]);
        assert!(p512.changes(), "{p512:?}");
    }

    #[test]
    fn pipeline_steps_use_the_same_rule() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/reduce_normalize.json");
        let loaded = crate::validate::pipeline::load_pipeline(&path);
        let pipeline = loaded.pipeline.expect("the fixture loads");
        let prepared =
            crate::inputs::pipeline::prepare_pipeline(&pipeline, path.parent().unwrap()).unwrap();
        // Every step at its own shape: nothing to compare.
        for (i, s) in prepared.steps.iter().enumerate() {
            assert!(
                pipeline_step_preserves(&pipeline, &prepared, i, s.shape.workgroup_size)
                    .is_preserved()
            );
        }
        // Some step's result depends on its size (a reduction); an elementwise one does not.
        let answers: Vec<Preservation> = (0..pipeline.steps.len())
            .map(|i| pipeline_step_preserves(&pipeline, &prepared, i, [32, 1, 1]))
            .collect();
        assert!(answers.iter().any(Preservation::changes), "{answers:?}");
    }

    #[test]
    fn elementwise_programs_preserve_at_every_size() {
        let (p, files) = fixture("saxpy_f32.json");
        for wg in [[32, 1, 1], [64, 1, 1], [1024, 1, 1], [96, 1, 1]] {
            assert_eq!(preserves(&p, &files, wg), Preservation::Preserved, "{wg:?}");
        }
    }
}
