//! Shared setup for the inspector tests: a deterministic App (no user config, no device
//! probe, fixed kernel resources, bundled h200 profile).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use vyrescope::emit::{EmitOptions, EmittedKernel};
use vyrescope::ir::Program;
use vyrescope::occupancy::{DeviceCaps, KernelResources};
use vyrescope::tui::action::{Action, Cmd, Command};
use vyrescope::tui::app::App;
use vyrescope::tui::background::{Job, Reply, Stats};
use vyrescope::tui::gpu::{Counters, Gpu, InputFolder, Parity, RunRecord, TuneRow};
use vyrescope::tui::highlight::Highlighter;
use vyrescope::tui::replay::{apply, buffer_text, perform, render};
use vyrescope::tui::update::refresh_estimate;
use vyrescope::tui::{setup, Options};
use vyrescope::util::Problem;

/// Fixture path.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/programs")
        .join(name)
}

/// Resources the tests assume for every kernel.
pub fn resources() -> KernelResources {
    KernelResources {
        regs_per_thread: 32,
        static_smem_bytes: 0,
        local_bytes: 0,
        const_bytes: 0,
        max_threads_per_block: 1024,
    }
}

/// The one-line reason the live tabs show in tests.
pub const NO_DRIVER: &str = "no CUDA driver found (libcuda.so.1): test machine\n  Fix: run on a machine with an NVIDIA driver";

/// The problem whose text is [`NO_DRIVER`].
pub fn no_driver() -> Problem {
    Problem::new(
        "no CUDA driver found (libcuda.so.1): test machine",
        "run on a machine with an NVIDIA driver",
    )
}

/// A [`Gpu`] on a machine without one: every request fails with [`NO_DRIVER`] (what the real
/// one says there), so the tests never start a GPU worker process.
pub struct NoGpu;

impl Gpu for NoGpu {
    fn probe(&mut self) -> Result<DeviceCaps, Problem> {
        Err(no_driver())
    }
    fn live_resources(&mut self, _: &EmittedKernel) -> Option<Result<KernelResources, Problem>> {
        None
    }
    fn dispatch(
        &mut self,
        _: &Program,
        _: &InputFolder,
        _: &EmitOptions,
    ) -> Result<RunRecord, Problem> {
        Err(no_driver())
    }
    fn tune(
        &mut self,
        _: &Program,
        _: &InputFolder,
        _: &EmitOptions,
        _: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<TuneRow>, Problem> {
        Err(no_driver())
    }
    fn cache_stats(&mut self) -> Result<Counters, Problem> {
        Err(no_driver())
    }
    fn telemetry(&mut self) -> Result<Counters, Problem> {
        Err(no_driver())
    }
}

/// Applies `action` and runs the jobs it queues inline (on [`NoGpu`]), as a replay does.
pub fn update(app: &mut App, action: Action) {
    apply(app, &mut NoGpu, action);
}

/// A deterministic app over `files` at `w` x `h`.
pub fn app(files: &[PathBuf], w: u16, h: u16) -> (App, Highlighter) {
    // Keep the user's own config out of the tests.
    std::env::set_var(
        "VYRESCOPE_CONFIG",
        "/nonexistent/vyrescope-test-config.json",
    );
    let opts = Options {
        files: files.to_vec(),
        theme: Some("dark".into()),
        device: Some("h200".into()),
        ..Options::default()
    };
    let (mut app, hl, mut first) = setup(&opts).expect("setup");
    // No probe (machine-dependent) and no ptxas: fixed resources instead.
    first.retain(|c| !matches!(c, Cmd::Job(Job::Probe | Job::Resources { .. })));
    // The Plan tab's figures too: a pipeline queued for planning before the fixed resources
    // were set reports them instead of assembling its kernels.
    for c in &mut first {
        if let Cmd::Job(Job::Plan { view, .. }) = c {
            view.given_registers = Some(resources().regs_per_thread);
        }
    }
    app.jobs.pending = 0;
    app.jobs.busy = None;
    app.code.fixed_resources = Some(resources());
    first.extend(refresh_estimate(&mut app));
    update(&mut app, Action::Worker(Reply::Probed(Err(no_driver()))));
    update(&mut app, Action::Resize(w, h));
    app.screen.message = None;
    perform(&mut app, &mut NoGpu, first);
    (app, hl)
}

/// Applies commands in order (worker jobs run inline after each).
pub fn press(app: &mut App, cmds: &[Command]) {
    for c in cmds {
        update(app, Action::Command(*c));
    }
}

/// The screen as text.
pub fn screen(app: &mut App, hl: &Highlighter) -> String {
    let (w, h) = app.screen.size;
    buffer_text(&render(app, hl, w, h))
}

/// Feeds a successful dispatch (as the worker would report it).
pub fn fake_dispatch(app: &mut App, device_ms: f64, ok: bool) {
    let counters = |pairs: &[(&str, &str)]| -> Counters {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let run = RunRecord {
        program: "vadd_f32".into(),
        grid: [4096, 1, 1],
        workgroup: app.workgroup(),
        sm: 90,
        device_ms,
        jit_ms: 12.5,
        parity: Some(Parity {
            ok,
            mismatches: if ok { 0 } else { 2 },
            first: if ok {
                vec![]
            } else {
                vec!["c[7]: gpu=1 ref=2".into(), "c[9]: gpu=3 ref=4".into()]
            },
        }),
        backend: vyrescope::tui::gpu::GPU_BACKEND.into(),
    };
    let n = app.jobs.session.runs.len() + 1;
    let stats = Stats {
        cache: Ok(counters(&[
            ("ptx.entries", "1"),
            ("ptx.hits", &(n - 1).to_string()),
            ("module.misses", "1"),
        ])),
        telemetry: Ok(counters(&[
            ("launches", &(n * 5).to_string()),
            ("h2d_bytes", "12582912"),
            ("jit_count", "1"),
        ])),
    };
    app.jobs.pending += 1;
    update(
        app,
        Action::Worker(Reply::Dispatched(Ok(run), Box::new(stats))),
    );
}

/// Feeds a finished tune sweep over 64..512 (64 best).
pub fn fake_tune(app: &mut App) {
    let rows = [64u32, 128, 256, 512]
        .iter()
        .map(|&x| TuneRow {
            workgroup: [x, 1, 1],
            median_ms: Some(0.1 + x as f64 / 10_000.0),
            occupancy_pct: Some(100.0),
            speedup: Some(1.0),
            note: if x == 64 {
                "best".into()
            } else {
                String::new()
            },
        })
        .collect();
    fake_tune_rows(app, rows);
}

/// Tune rows over the open program's real candidate list (32..1024 on a 1024-thread
/// device): the time falls to a minimum at x = `best` (the "best" row), then rises.
pub fn tune_rows(app: &App, best: u32) -> Vec<TuneRow> {
    let program = &app
        .programs
        .doc
        .as_ref()
        .expect("a program is open")
        .program;
    vyrescope::tui::gpu::candidates(program, 1024)
        .into_iter()
        .map(|wg| TuneRow {
            workgroup: wg,
            median_ms: Some(0.1 + (wg[0] as f64 - best as f64).abs() / 10_000.0),
            occupancy_pct: Some(100.0),
            speedup: Some(1.0),
            note: if wg[0] == best {
                "best".into()
            } else {
                String::new()
            },
        })
        .collect()
}

/// Feeds a finished tune sweep with these candidates.
pub fn fake_tune_rows(app: &mut App, rows: Vec<TuneRow>) {
    app.jobs.pending += 1;
    let stats = Stats {
        cache: app.jobs.session.cache.clone(),
        telemetry: app.jobs.session.telemetry.clone(),
    };
    update(app, Action::Worker(Reply::Tuned(Ok(rows), Box::new(stats))));
}

/// The Timeline tab's state (kept among the detail panel's tab states).
pub fn timeline(app: &App) -> &vyrescope::tui::timeline::TimelineState {
    app.detail
        .states
        .get()
        .expect("the Timeline tab keeps a state")
}

/// The Timeline tab's state, to change.
pub fn timeline_mut(app: &mut App) -> &mut vyrescope::tui::timeline::TimelineState {
    app.detail
        .states
        .get_mut()
        .expect("the Timeline tab keeps a state")
}

/// The Run tab's tune-table scroll offset (the tab's own state).
pub fn tune_scroll(app: &App) -> usize {
    app.detail
        .states
        .get::<vyrescope::tui::views::run::RunState>()
        .expect("the Run tab keeps a state")
        .tune_scroll
}
