//! `vyrescope tui FILE... --bench-frames N` (hidden): the inspector's speed figures without
//! a terminal, printed as JSON. Start to first frame (setup + first draw), frame time with a
//! 20 000-line PTX in view (cold: lines never highlighted; warm: cached), and peak RSS after
//! visiting every given program.

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::emit::{EmittedKernel, KernelAbi, MapEntry, SourceMap};

use super::action::{Action, Command};
use super::analysis::PtxView;
use super::app::Focus;
use super::gpu::WorkerGpu;
use super::replay::{apply, perform, render};
use super::update::open_selected;
use super::{setup, Options, TuiError};

/// The figures.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// Programs visited.
    pub programs: usize,
    /// Setup (config, themes, syntaxes, first program loaded and emitted) to first frame.
    pub first_frame_ms: f64,
    /// Lines of the synthetic PTX.
    pub ptx_lines: usize,
    /// Frames drawn per pass.
    pub frames: usize,
    /// Mean frame time, every frame on lines never highlighted before.
    pub cold_frame_ms_mean: f64,
    /// Slowest cold frame.
    pub cold_frame_ms_max: f64,
    /// Mean frame time over the same lines again (highlight cache warm).
    pub warm_frame_ms_mean: f64,
    /// Slowest warm frame.
    pub warm_frame_ms_max: f64,
    /// Peak resident set size (VmHWM) in MiB; `null` where /proc is missing.
    pub peak_rss_mib: Option<f64>,
}

/// A synthetic kernel of `lines` PTX lines, 8 lines per statement, like the emitter's.
pub fn synthetic_kernel(lines: usize) -> EmittedKernel {
    let mut ptx = String::with_capacity(lines * 48);
    let mut entries = Vec::new();
    for i in 0..lines {
        if i % 8 == 0 {
            ptx.push_str(&format!("\t// body[{}] line {}\n", i / 8, i / 8 + 1));
            entries.push(MapEntry {
                node: format!("body[{}]", i / 8),
                lines: vec![[i as u32 + 1, (i + 8).min(lines) as u32]],
            });
        } else {
            ptx.push_str(&format!(
                "\tld.global.nc.f32 \t%f{i}, [%rd{}+{}];\n",
                i % 97,
                (i % 13) * 4
            ));
        }
    }
    EmittedKernel {
        kernel_name: "synthetic".into(),
        ptx,
        source_map: SourceMap { entries },
        abi: KernelAbi::default(),
        stats: Default::default(),
    }
}

fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn stats(v: &[f64]) -> (f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    (mean, v.iter().cloned().fold(0.0, f64::max))
}

/// Measures; `frames` frames per pass at 160x48.
pub fn run(opts: &Options, frames: usize) -> Result<Figures, TuiError> {
    let (w, h) = (160, 48);
    let t0 = Instant::now();
    let (mut app, hl, first) = setup(opts)?;
    let mut gpu = WorkerGpu::new();
    // A resize returns no commands; the first ones run after the first frame, as on a
    // terminal.
    let _ = apply(&mut app, &mut gpu, Action::Resize(w, h));
    render(&mut app, &hl, w, h);
    let first_frame_ms = t0.elapsed().as_secs_f64() * 1e3;
    perform(&mut app, &mut gpu, first);
    for i in 0..app.programs.entries.len() {
        app.panes.list.cursor = i;
        let cmds = open_selected(&mut app);
        perform(&mut app, &mut gpu, cmds);
        render(&mut app, &hl, w, h);
    }
    let ptx_lines = 20_000;
    let view = Arc::new(PtxView::new(synthetic_kernel(ptx_lines)));
    if let Some(e) = app.code.emission.as_mut() {
        e.ptx = Ok(view);
    }
    app.code.generation += 1;
    app.screen.focus = Focus::Ptx;
    let mut pass = |app: &mut super::app::App| {
        apply(app, &mut gpu, Action::Command(Command::Home));
        let mut times = Vec::with_capacity(frames);
        for _ in 0..frames {
            apply(app, &mut gpu, Action::Command(Command::PageDown));
            let t = Instant::now();
            render(app, &hl, w, h);
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times
    };
    let cold = pass(&mut app);
    let warm = pass(&mut app);
    let (cm, cx) = stats(&cold);
    let (wm, wx) = stats(&warm);
    Ok(Figures {
        programs: app.programs.entries.len(),
        first_frame_ms,
        ptx_lines,
        frames,
        cold_frame_ms_mean: cm,
        cold_frame_ms_max: cx,
        warm_frame_ms_mean: wm,
        warm_frame_ms_max: wx,
        peak_rss_mib: peak_rss_mib(),
    })
}
