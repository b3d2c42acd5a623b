//! The options of `vyrescope run` ([`Args`]) and the helpers every run path shares (dumps, the
//! `file` inputs' folder), apart from the running itself (`run`, `run_cuda`, `run_pipeline`,
//! `run_timeline`), so those modules depend on this one and not on each other.

use std::path::{Path, PathBuf};

use crate::inputs::{self, HostBuffer};
use crate::util::Problem;

/// Launches `run --backend cuda` makes by default: one cold, then enough warm ones for a
/// stable median.
pub const DEFAULT_REPEAT: u32 = 20;

/// Where a Program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// The CPU reference interpreter (the oracle).
    Reference,
    /// The live GPU through the CUDA driver (JIT, dispatch, optional --verify).
    Cuda,
}

impl Backend {
    /// Name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Reference => "reference",
            Backend::Cuda => "cuda",
        }
    }
}

/// Execute a Program on its `run` inputs and summarise the output buffers.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Prints, per output (read_write/write) buffer, its length, an FNV-1a 64 \
checksum of its raw bytes and its first elements.

Examples:
  vyrescope run fixtures/programs/vadd_f32.json --backend reference
  vyrescope run fixtures/programs/vadd_f32.json --grid 8,1,1 --workgroup 128,1,1 --json
  vyrescope run fixtures/programs/vadd_f32.json --dump /tmp/vadd
  vyrescope run fixtures/programs/vadd_f32.json --backend cuda --verify --repeat 20

`--backend cuda` runs in this process (one-shot: no worker process to start, so it is the
fastest path); a kernel fault therefore ends the command with the fault's error. The
inspector, `selftest`'s fault check and `fault-test` dispatch through a replaceable GPU
worker process instead, so a fault there never stops later dispatches."
)]
pub struct Args {
    /// Program or pipeline file.
    pub file: PathBuf,
    /// Backend to run on.
    #[arg(long, value_enum, default_value = "reference")]
    pub backend: Backend,
    /// Workgroup size override, `X,Y,Z` (missing trailing values are 1).
    #[arg(long, value_name = "X,Y,Z", value_parser = crate::shape::parse_workgroup)]
    pub workgroup: Option<[u32; 3]>,
    /// Grid (workgroup count) override, `X,Y,Z` (missing trailing values are 1).
    #[arg(long, value_name = "X,Y,Z", value_parser = crate::shape::parse_grid)]
    pub grid: Option<[u32; 3]>,
    /// Print the report as JSON: {"program", "backend", "grid", "workgroup_size",
    /// "outputs": {name: {"type", "len", "checksum", "first"}}, "elapsed_ms", "node_evals"}.
    #[arg(long)]
    pub json: bool,
    /// Write every host buffer as raw little-endian bytes: DIR/<name>.in.bin before the run,
    /// DIR/<name>.bin after it (DIR is created).
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
    /// Allow `run.inputs.*.file` data files anywhere inside DIR (default: only inside the
    /// Program file's folder). Files under /proc, /sys and /dev are refused even so.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Reference interpreter step budget in steps: node evaluations plus one per invocation and loop iteration (default 2^32, about 10 s at most).
    #[arg(long, value_name = "N")]
    pub fuel: Option<u64>,
    /// cuda: launches in total (per form of a pipeline). The first is read back and reported
    /// on its own as the cold figure (module load, first touch of the buffers); the median is
    /// over the rest (warm). `--repeat 1` gives only the cold figure.
    #[arg(long, default_value_t = DEFAULT_REPEAT, value_name = "N")]
    pub repeat: u32,
    /// cuda: compare the GPU results with the reference interpreter (exit 1 on mismatch).
    #[arg(long)]
    pub verify: bool,
    /// cuda: give up on a launch after this many milliseconds (the context is recreated).
    #[arg(long = "timeout", value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// cuda: JIT with line info (for profilers).
    #[arg(long)]
    pub lineinfo: bool,
    /// cuda: emit PTX for this target sm (default: the device's own); a target newer than
    /// the device is refused.
    #[arg(long, value_name = "SM")]
    pub sm: Option<u32>,
    /// cuda: do not time launches with CUDA events (saves two event records and a query per
    /// launch); `device_ms` is then reported as null.
    #[arg(long)]
    pub no_device_timing: bool,
    /// cuda, pipelines: run only the separate launches (one per step).
    #[arg(long, conflicts_with_all = ["megakernel", "both"])]
    pub separate: bool,
    /// cuda, pipelines: run only the megakernel plan.
    #[arg(long, conflicts_with_all = ["separate", "both"])]
    pub megakernel: bool,
    /// cuda, pipelines: run both forms, interleaved, and judge the speedup (the default).
    /// On a vyre graph or artifact (feature `vyre`), on either backend: separate launches,
    /// our plan and vyre-megakernel's plan, each checked against the reference, with vyre's
    /// own target-compile verdict (docs/vyre.md).
    #[arg(long, conflicts_with_all = ["separate", "megakernel"])]
    pub both: bool,
    /// cuda, pipelines with both forms: write every timed repetition as CSV
    /// (`form,repetition,device_ms`), the speedup gate's evidence.
    #[arg(long, value_name = "FILE")]
    pub gate_csv: Option<PathBuf>,
    /// cuda, pipelines: the persistent grid of each cooperative group: `estimate` (co-resident
    /// blocks from the occupancy estimator, confirmed by the driver) or `measure` (also time
    /// 1, 2 and 4 blocks per SM and keep the fastest).
    #[arg(long, value_enum, default_value = "estimate")]
    pub topology: Topology,
    /// cuda, pipelines: how the plan decides what to fuse: `auto` (the default: the cost model,
    /// or what an earlier measurement stored in the plan cache for this GPU; where the model
    /// predicts a fused form to gain less than 1.3x, the forms are timed once on the GPU and
    /// the winner stored), `model` (the cost model or the plan cache, never timing: never a
    /// form predicted or measured slower than separate launches), `fuse` (fuse whatever may legally fuse),
    /// `measure` (time each run of fusable steps fused, separate and as the model splits it,
    /// keep the fastest and store the choice in the plan cache) or `recompute` (run every
    /// chain of window steps as recomputed passes: halo recomputation).
    #[arg(long, default_value = "auto", value_name = "HOW")]
    pub decide: crate::megakernel::plan::Decide,
    /// cuda, pipelines: how fused kernels lower grid barriers: `flip` (one flipping arrival
    /// counter, the default) or `generation` (the earlier counter-plus-generation lowering),
    /// to compare the two on the same GPU.
    #[arg(long, default_value = "flip", value_name = "KIND")]
    pub grid_barrier: crate::emit::grid_sync::GridBarrier,
    /// cuda, pipelines: how a fused persistent kernel separates cross-workgroup dependences:
    /// `dataflow` (each task waits only for its producers' completion flags or counters; a
    /// one-workgroup fold runs on the last arriving producer; the default) or `barrier` (an
    /// all-to-all grid barrier at every such boundary), to compare the two.
    #[arg(long, default_value = "dataflow", value_name = "FORM")]
    pub sync: crate::megakernel::plan::SyncMode,
    /// cuda: the GPU to run on (`--gpu N`).
    #[command(flatten)]
    pub gpu: super::gpu_arg::GpuArg,
    /// cuda: record a timeline (thread 0 of each block stamps each unit of work: a
    /// Program's blocks, a fused kernel's steps, virtual workgroups and waits) and print its
    /// summary and consistency check (see docs/timeline.md).
    #[arg(long)]
    pub timeline: bool,
    /// cuda: write the timeline as Chrome trace-event JSON (Perfetto, chrome://tracing);
    /// implies --timeline.
    #[arg(long, value_name = "OUT.json")]
    pub trace: Option<PathBuf>,
    /// cuda: write the timeline's records (with what each launch recorded) as JSON, for
    /// `vyrescope FILE --timeline REC.json` to open on any machine; implies --timeline.
    #[arg(long, value_name = "REC.json")]
    pub timeline_out: Option<PathBuf>,
    /// cuda, with --timeline: time N instrumented and N plain rounds side by side and print
    /// the overhead.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub timeline_rounds: u32,
}

impl Args {
    /// `--timeline`, or an option that implies it (`--trace`, `--timeline-out`).
    pub fn wants_timeline(&self) -> bool {
        self.timeline || self.trace.is_some() || self.timeline_out.is_some()
    }
}

/// How pipelines choose the persistent grid of a cooperative group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Topology {
    /// Co-resident blocks from the estimator, confirmed by the driver.
    Estimate,
    /// Time a few blocks-per-SM choices and keep the fastest.
    Measure,
}

/// Writes each buffer as `dir/<name><suffix>` (see [`dump_named`]).
pub fn dump(dir: &Path, buffers: &[HostBuffer], suffix: &str) -> Result<(), Problem> {
    let named: Vec<(&str, &[u8])> = buffers
        .iter()
        .map(|b| (b.name.as_str(), b.data.as_slice()))
        .collect();
    dump_named(dir, &named, suffix)
}

/// Writes each `(name, bytes)` as `dir/<name><suffix>` (DIR is created); the one dump writer
/// for Programs and pipelines. Each file is written atomically (util::write_atomic): a failed
/// dump never leaves a half-written file, and an existing link, device or folder of that name
/// is refused rather than written through.
pub fn dump_named(dir: &Path, buffers: &[(&str, &[u8])], suffix: &str) -> Result<(), Problem> {
    std::fs::create_dir_all(dir).map_err(|e| {
        Problem::new(
            format!("cannot create {}: {e}", dir.display()),
            "choose a writable --dump directory",
        )
    })?;
    for (name, data) in buffers {
        dump_file(&dir.join(format!("{name}{suffix}")), data)?;
    }
    Ok(())
}

/// Writes one `--dump` file atomically, with the `Fix:` message every dump error carries.
pub fn dump_file(path: &Path, bytes: &[u8]) -> Result<(), Problem> {
    crate::util::write_atomic(path, bytes).map_err(|e| {
        Problem::new(
            format!("cannot write {}: {e}", path.display()),
            "choose a writable --dump directory",
        )
    })
}

/// The files a run may read its `file` inputs from: the Program's folder, or `--root DIR`.
pub fn file_root<'a>(a: &'a Args, base: &'a Path) -> inputs::FileRoot<'a> {
    inputs::FileRoot {
        base,
        root: a.root.as_deref().unwrap_or(base),
    }
}
