//! The open program and its emission: opening and reloading (the worker reads the files),
//! prompts' results, workgroup, target sm and device changes, re-emission and
//! re-estimation, GPU jobs, export (the shell writes it).

use std::path::PathBuf;

use crate::tui::action::Cmd;
use crate::tui::analysis::{analyze, Document, Unavailable, INLINE_EMIT_MAX_STMTS, MEASURING};
use crate::tui::app::programs::{LoadKind, Loaded};
use crate::tui::app::{App, Focus, PromptKind, SM_TARGETS};
use crate::tui::background::{Job, LoadedFile, ResKey};
use crate::tui::component::tabs::{self, TabComponent};
use crate::tui::export;
use crate::tui::sass_view::{SassMode, SassState};
use crate::tui::vyre_view::{VyreMode, VyreState};
use crate::util::Problem;

use super::nav;

pub(super) fn submit_prompt(app: &mut App, kind: PromptKind, text: String, out: &mut Vec<Cmd>) {
    match kind {
        PromptKind::Search => {
            if text.is_empty() {
                app.panes.search = None;
                return;
            }
            let f = if matches!(app.screen.focus, Focus::Ir | Focus::Ptx) {
                app.screen.focus
            } else {
                Focus::Ptx
            };
            app.panes.search = Some((f, text));
            nav::search_step(app, true, true);
        }
        PromptKind::Workgroup => match crate::shape::parse_workgroup(&text) {
            Ok(wg) => set_workgroup(app, wg, out),
            Err(e) => app.screen.error(e.to_string()),
        },
        // The worker looks at the file system; `expanded` takes what it found.
        PromptKind::Open => out.push(app.jobs.queue(Job::Expand { typed: text })),
        PromptKind::ExportPath if text.is_empty() => {
            app.screen.error("no path typed: nothing exported")
        }
        PromptKind::ExportPath => export_view(app, std::path::PathBuf::from(text), out),
    }
}

fn max_threads(app: &App) -> u32 {
    app.jobs
        .devices
        .current()
        .map_or(1024, |d| d.max_threads_per_block.max(1))
}

/// What the workgroup keys and `t` say on a pipeline, where they change nothing: each fused
/// kernel runs with its plan's workgroup size.
pub(super) const PIPELINE_WORKGROUP: &str =
    "workgroup keys do not apply to a pipeline: its fused kernels use the plan's workgroup size";

/// True (after saying so) when a pipeline is open, so a workgroup change would be a claim
/// nothing uses.
fn refuse_on_pipeline(app: &mut App) -> bool {
    let pipeline = app
        .programs
        .doc
        .as_ref()
        .is_some_and(|d| d.pipeline.is_some());
    if pipeline {
        app.screen.info(PIPELINE_WORKGROUP);
    }
    pipeline
}

pub(super) fn tune_x(app: &mut App, f: impl Fn(u32) -> u32, out: &mut Vec<Cmd>) {
    if refuse_on_pipeline(app) {
        return;
    }
    let [x, y, z] = app.workgroup();
    let limit = (max_threads(app) / (y * z).max(1)).max(1);
    let nx = f(x).clamp(1, limit);
    if nx == x {
        return app.screen.info(format!(
            "workgroup x stays {x} (limit {limit} threads along x)"
        ));
    }
    set_workgroup(app, [nx, y, z], out);
}

pub(super) fn set_workgroup(app: &mut App, wg: [u32; 3], out: &mut Vec<Cmd>) {
    if refuse_on_pipeline(app) {
        return;
    }
    let threads = wg.iter().map(|v| *v as u64).product::<u64>();
    let max = max_threads(app) as u64;
    if threads > max {
        return app.screen.error(format!(
            "workgroup {wg:?} has {threads} threads; the device allows {max} per block"
        ));
    }
    app.code.workgroup = Some(wg);
    app.screen.info(format!(
        "workgroup {},{},{} ({threads} threads)",
        wg[0], wg[1], wg[2]
    ));
    reanalyze(app, out);
}

pub(super) fn cycle_device(app: &mut App, out: &mut Vec<Cmd>) {
    let n = app.jobs.devices.profiles.len();
    if n == 0 {
        return app
            .screen
            .error("no device profiles in this build; start with --device FILE");
    }
    if app.jobs.devices.live.is_some() {
        // A live device shadows profiles; `d` then switches to offline estimates.
        app.jobs.devices.live = None;
        app.jobs.devices.live_error = "offline by choice (d)".into();
        app.jobs.devices.profile = 0;
    } else {
        app.jobs.devices.profile = (app.jobs.devices.profile + 1) % n;
    }
    if let Some(d) = app.jobs.devices.current() {
        app.code.sm = d.cc_major * 10 + d.cc_minor;
        if !SM_TARGETS.contains(&app.code.sm) {
            app.code.sm = *SM_TARGETS
                .iter()
                .rev()
                .find(|s| **s <= app.code.sm)
                .unwrap_or(&90);
        }
    }
    let label = app.jobs.devices.label();
    app.screen.info(format!("device: {label}"));
    reanalyze(app, out);
}

pub(super) fn gpu_job(app: &mut App, tune: bool, out: &mut Vec<Cmd>) {
    let Some(doc) = app.programs.doc.as_ref() else {
        return app.screen.error("no program open");
    };
    if doc.has_errors() {
        return app
            .screen
            .error("the program has validation errors (see Diagnostics)");
    }
    if let Some(pv) = &doc.pipeline {
        if tune {
            // A sweep would time workgroup sizes the fused kernels never use; say so and
            // run nothing (it used to rerun the pipeline silently).
            return app
                .screen
                .info("tune sweeps are for Programs (a pipeline's fused kernels use the plan's workgroup size); r runs the pipeline");
        }
        let job = Job::Pipeline {
            file: pv.file.clone(),
            gpu: app.jobs.devices.live.is_some(),
            sync: pv.sync,
        };
        app.detail.show(tabs::Run.id());
        out.push(app.jobs.queue(job));
        return;
    }
    let (program, files, opts) = (doc.program.clone(), doc.input_folder(), app.emit_options());
    // Re-running from the Run tab keeps its cursor and scroll offsets.
    app.detail.show(tabs::Run.id());
    let job = if tune && app.jobs.devices.live.is_none() {
        // No GPU to time on: estimate the candidates instead (registers, occupancy on the
        // profile, instruction mix, whether each keeps the results), labelled as such.
        Job::TuneOffline {
            program,
            files,
            device: app.jobs.devices.current().cloned().map(Box::new),
        }
    } else if tune {
        Job::Tune {
            program,
            files,
            opts,
        }
    } else if app.jobs.devices.live.is_none() {
        // Offline (no driver, or offline by choice with d): the reference interpreter runs
        // the Program instead, and the Run tab labels the row so.
        Job::Reference {
            program,
            files,
            opts,
        }
    } else {
        Job::Dispatch {
            program,
            files,
            opts,
        }
    };
    out.push(app.jobs.queue(job));
}

/// Re-emits, re-maps and re-estimates for the current options: inline for small programs
/// (the result is visible at once), on the worker for large ones.
pub(super) fn reanalyze(app: &mut App, out: &mut Vec<Cmd>) {
    app.code.generation += 1;
    let device = app.jobs.devices.current().cloned();
    if let Some(doc) = app.programs.doc.as_mut() {
        if let Some(step) = doc.pipeline.as_ref().map(|p| p.step) {
            doc.begin_step(step, device.as_ref().map(|d| d.name.as_str()));
        }
    }
    let Some(doc) = app.programs.doc.as_ref() else {
        app.code.emission = None;
        return;
    };
    let opts = app.emit_options();
    if let Some(pv) = &doc.pipeline {
        // Planning a long pipeline, fusing its group and emitting the fused kernel take
        // seconds: the worker does them (the PTX pane says so meanwhile), so quitting and
        // every other key keep working. The reply lands in `planned`.
        app.code.emission = None;
        let mut view = Box::new(pv.clone());
        view.given_registers = app.code.fixed_resources.as_ref().map(|r| r.regs_per_thread);
        let job = Job::Plan {
            generation: app.code.generation,
            view,
            device: device.map(Box::new),
            cache: app.jobs.session.plan_cache.clone(),
            opts,
        };
        out.push(app.jobs.queue(job));
    } else if doc.stmt_count <= INLINE_EMIT_MAX_STMTS {
        app.code.emission = Some(analyze(&doc.program, &opts));
        after_emission(app, out);
    } else {
        app.code.emission = None;
        let job = Job::Analyze {
            generation: app.code.generation,
            program: doc.program.clone(),
            opts,
        };
        out.push(app.jobs.queue(job));
    }
}

/// A pipeline step planned, fused and emitted on the worker ([`Job::Plan`]): shows it, unless
/// the step, device or options changed meanwhile (a newer job is on its way).
pub(super) fn planned(
    app: &mut App,
    generation: u64,
    p: crate::tui::background::Planned,
    out: &mut Vec<Cmd>,
) {
    if generation != app.code.generation {
        return;
    }
    let Some(doc) = app.programs.doc.as_mut().filter(|d| d.pipeline.is_some()) else {
        return;
    };
    doc.pipeline = Some(p.view);
    doc.show_step();
    if let Some(c) = &p.cached {
        app.jobs.session.record_plan(c);
    }
    app.code.emission = Some(p.emission);
    after_emission(app, out);
}

/// Re-estimates occupancy and diagnostics for the current device and the kernel's
/// resources; asks the worker to measure the resources when they are not known yet.
pub(super) fn refresh_estimate(app: &mut App, out: &mut Vec<Cmd>) {
    let (Some(doc), Some(em)) = (app.programs.doc.as_ref(), app.code.emission.as_ref()) else {
        return;
    };
    let key: ResKey = (doc.id, em.opts.clone());
    let program = doc.program.clone();
    let ptx = em.ptx.clone();
    let (em_ptx, em_opts) = (em.ptx.clone(), em.opts.clone());
    // A pipeline's fused kernel has no `run` inputs of its own to compare sizes with.
    let inputs = doc.pipeline.is_none().then(|| {
        let f = doc.input_folder();
        Box::new(crate::harness::preserve::Inputs {
            base: f.base,
            root: f.root,
        })
    });
    let res = match (&app.code.fixed_resources, app.code.resources.get(&key)) {
        (Some(r), _) => Some(Ok((r.clone(), "given resources".to_string()))),
        (None, Some(r)) => Some(r.clone()),
        (None, None) => None,
    };
    if res.is_none() {
        if let Ok(ptx) = ptx {
            let job = Job::Resources {
                key: key.clone(),
                ptx,
            };
            // Mark as requested so a burst of redraws does not queue it twice.
            app.code
                .resources
                .insert(key, Err(Unavailable::Pending(MEASURING)));
            out.push(app.jobs.queue(job));
        }
    }
    // The sweep and the performance diagnostics run on the worker: their cost is bounded,
    // but the UI thread never waits on analysis.
    app.code.estimate_gen += 1;
    let job = Job::Estimate {
        id: app.code.estimate_gen,
        ptx: em_ptx,
        opts: em_opts,
        program,
        device: app.jobs.devices.current().cloned().map(Box::new),
        res: res.map(Box::new),
        inputs,
    };
    out.push(app.jobs.queue(job));
}

/// Points the SASS pane at the current emission and, while the pane is shown, asks the
/// worker to assemble it once per (document, options).
pub(super) fn request_sass(app: &mut App, out: &mut Vec<Cmd>) {
    let (Some(doc), Some(em)) = (app.programs.doc.as_ref(), app.code.emission.as_ref()) else {
        app.code.sass_key = None;
        return;
    };
    let key: ResKey = (doc.id, em.opts.clone());
    app.code.sass_key = Some(key.clone());
    if app.code.sass_mode == SassMode::Off || app.code.sass_listings.contains_key(&key) {
        return;
    }
    // Listings are small, but a long tuning session should not keep every one.
    if app.code.sass_listings.len() >= 64 {
        app.code.sass_listings.clear();
    }
    let state = match &em.ptx {
        Ok(ptx) => {
            out.push(app.jobs.queue(Job::Sass {
                key: key.clone(),
                ptx: ptx.clone(),
            }));
            SassState::Pending
        }
        Err(e) => SassState::Failed(format!("no PTX to assemble: {e}")),
    };
    app.code.sass_listings.insert(key, state);
}

/// Queues vyre's view of the current emission when a vyre mode is on and it is not made.
pub(super) fn request_vyre(app: &mut App, out: &mut Vec<Cmd>) {
    let (Some(doc), Some(em)) = (app.programs.doc.as_ref(), app.code.emission.as_ref()) else {
        return;
    };
    let key: ResKey = (doc.id, em.opts.clone());
    if app.code.vyre_mode == VyreMode::Off || app.code.vyre_views.contains_key(&key) {
        return;
    }
    if app.code.vyre_views.len() >= 64 {
        app.code.vyre_views.clear();
    }
    let state = match &em.ptx {
        Ok(ptx) => {
            out.push(app.jobs.queue(Job::Vyre {
                key: key.clone(),
                program: doc.program.clone(),
                ptx: ptx.clone(),
            }));
            VyreState::Pending
        }
        Err(e) => VyreState::Failed(format!("no PTX of ours to compare: {e}")),
    };
    app.code.vyre_views.insert(key, state);
}

/// `v`: the PTX pane shows ours, vyre's PTX, or the comparison (feature `vyre`).
pub(super) fn cycle_vyre(app: &mut App, out: &mut Vec<Cmd>) {
    app.code.vyre_mode = app.code.vyre_mode.next();
    app.screen.info(match app.code.vyre_mode {
        VyreMode::Off => "PTX pane: vyrescope's PTX",
        VyreMode::Ptx => "PTX pane: vyre's PTX (exported to vyre, emitted by vyre's crates)",
        VyreMode::Compare => "PTX pane: vyrescope vs vyre (counts, registers, diff)",
    });
    app.panes.ptx = crate::tui::app::PaneState::default();
    if app.code.sass_mode == SassMode::Replace || !app.pane_shown(Focus::Ptx) {
        app.code.sass_mode = SassMode::Off;
    }
    request_vyre(app, out);
}

/// `s`: the SASS pane beside the PTX pane, instead of it, or hidden.
pub(super) fn cycle_sass(app: &mut App, out: &mut Vec<Cmd>) {
    app.code.sass_mode = app.code.sass_mode.next();
    let msg = match app.code.sass_mode {
        SassMode::Off => "SASS pane off",
        SassMode::Beside if app.pane_shown(Focus::Ptx) => "SASS pane beside the PTX pane",
        SassMode::Beside => "SASS pane instead of PTX (three-way needs 140 columns)",
        SassMode::Replace => "SASS pane instead of the PTX pane",
    };
    app.screen.info(msg);
    if !app.pane_shown(app.screen.focus) {
        app.screen.focus = if app.code.sass_mode == SassMode::Off {
            Focus::Ptx
        } else {
            Focus::Sass
        };
    }
    request_sass(app, out);
    nav::keep_visible(app, Focus::Sass);
    if app.screen.focus != Focus::Sass {
        nav::sync_from_ir(app);
    }
}

pub(super) fn after_emission(app: &mut App, out: &mut Vec<Cmd>) {
    refresh_estimate(app, out);
    request_sass(app, out);
    request_vyre(app, out);
    super::pin::refresh(app, out);
    nav::keep_visible(app, Focus::Ptx);
    nav::keep_visible(app, Focus::Detail);
    if app.screen.focus == Focus::Ptx {
        nav::sync_from_ptx(app);
    } else {
        nav::sync_from_ir(app);
    }
}

/// The files an `o` prompt's path named ([`Job::Expand`]): listed, the first one opened.
pub(super) fn expanded(app: &mut App, found: Result<Vec<PathBuf>, Problem>, out: &mut Vec<Cmd>) {
    let new = match found {
        Ok(new) => new,
        Err(e) => return app.screen.error(e.to_string()),
    };
    let first = app.programs.add(new);
    app.panes.list.cursor = first;
    nav::keep_visible(app, Focus::List);
    open_selected(app, out);
    check_files(app, first, out);
}

/// Queues the background check of the unchecked entries from `first` on.
pub(super) fn check_files(app: &mut App, first: usize, out: &mut Vec<Cmd>) {
    let files = app.programs.to_check(first);
    if !files.is_empty() {
        let root = app.programs.root.clone();
        out.push(app.jobs.queue(Job::Validate { files, root }));
    }
}

/// Opens the program under the list cursor: the worker reads it, then [`loaded`] shows it.
pub(crate) fn open_selected(app: &mut App, out: &mut Vec<Cmd>) {
    load(app, app.panes.list.cursor, LoadKind::Open, out);
}

/// Reloads the open program from disk (on the worker) keeping cursors, tab and tuning.
pub(super) fn reload(app: &mut App, from_watch: bool, out: &mut Vec<Cmd>) {
    match app.programs.current {
        Some(i) => load(app, i, LoadKind::Reload { from_watch }, out),
        None => app.screen.error("no program open"),
    }
}

/// Asks the worker to read entry `i` (nothing when there is no such entry).
fn load(app: &mut App, i: usize, kind: LoadKind, out: &mut Vec<Cmd>) {
    let Some((id, path)) = app.programs.request_load(i) else {
        return;
    };
    let root = app.programs.root.clone();
    out.push(app.jobs.queue(Job::Load {
        id,
        index: i,
        path,
        root,
        kind,
    }));
}

/// A file the worker read ([`Job::Load`]): opens or reloads it, unless a newer load was asked
/// for meanwhile.
pub(super) fn loaded(app: &mut App, file: LoadedFile, out: &mut Vec<Cmd>) {
    if !app.programs.is_current_load(file.id) {
        return;
    }
    match file.kind {
        LoadKind::Open => opened(app, file.index, file.doc, out),
        LoadKind::Reload { from_watch } => reloaded(app, file.index, file.doc, from_watch, out),
    }
    super::profile::after_load(app);
}

/// Shows a newly opened program (resets the code panes).
fn opened(app: &mut App, i: usize, doc: Result<Document, Problem>, out: &mut Vec<Cmd>) {
    if app.programs.opened(i, doc) == Loaded::Nothing {
        return;
    }
    app.code.reset_for_new_program();
    app.panes.reset_code();
    app.detail.pane = Default::default();
    let pipeline = app
        .programs
        .doc
        .as_ref()
        .is_some_and(|d| d.pipeline.is_some());
    app.detail.set_pipeline(pipeline);
    // Start on the first statement, so the PTX correlation shows from the first frame.
    app.panes.ir.cursor = app
        .programs
        .doc
        .as_ref()
        .and_then(|d| d.ir.iter().position(|l| l.node.is_some()))
        .unwrap_or(0);
    reanalyze(app, out);
    nav::keep_visible(app, Focus::Ir);
}

/// Shows the reloaded program keeping the reader's place; a failed reload keeps the last
/// good version and says what to fix.
fn reloaded(
    app: &mut App,
    i: usize,
    doc: Result<Document, Problem>,
    from_watch: bool,
    out: &mut Vec<Cmd>,
) {
    match app.programs.reloaded(i, doc) {
        Loaded::Nothing => app.screen.error("no program open"),
        Loaded::Ok => {
            let (ir, ptx) = (app.panes.ir, app.panes.ptx);
            reanalyze(app, out);
            // Keep the reader's place: same lines, clamped to the new lengths.
            app.panes.ir = ir;
            app.panes.ptx = ptx;
            for f in [Focus::Ir, Focus::Ptx] {
                nav::keep_visible(app, f);
            }
            let what = if from_watch {
                "changed on disk, reloaded"
            } else {
                "reloaded"
            };
            let path = app.programs.current_path().cloned().unwrap_or_default();
            app.screen.info(format!("{what} {}", path.display()));
        }
        // Keep showing the last good version; the error says what to fix.
        Loaded::Failed(e) => app
            .screen
            .error(e.lines().next().unwrap_or("reload failed").to_string()),
    }
}

/// Enter on the Diagnostics tab: the IR cursor goes to the diagnostic's node.
pub(crate) fn jump_to_diagnostic(app: &mut App) {
    let node = app
        .diagnostics()
        .get(app.detail.pane.cursor)
        .and_then(|d| d.node.clone());
    let line = node
        .as_deref()
        .and_then(|n| app.programs.doc.as_ref()?.ir_line_of(n));
    match (node, line) {
        (Some(_), Some(l)) => {
            app.screen.focus = Focus::Ir;
            app.screen.restore();
            nav::set_cursor(app, Focus::Ir, l as isize);
        }
        (Some(n), None) => app.screen.error(format!("node {n} is not in the IR text")),
        (None, _) => app
            .screen
            .info("this diagnostic is about the whole program"),
    }
}

/// Exports the current view to `path`: the shell writes it, asking back first when a file
/// is there ([`exported`]).
pub(super) fn export_view(app: &mut App, path: std::path::PathBuf, out: &mut Vec<Cmd>) {
    out.push(Cmd::Export(export::job(app, path, false)));
}

/// Writes the export (the user chose the path and agreed to replace what is there).
pub(super) fn write_export(app: &mut App, path: std::path::PathBuf, out: &mut Vec<Cmd>) {
    out.push(Cmd::Export(export::job(app, path, true)));
}

/// What the shell's export write did: says so, or asks before replacing a file.
pub(super) fn exported(app: &mut App, e: export::Exported) {
    match e {
        export::Exported::Written(p) => app.screen.info(format!("exported {}", p.display())),
        export::Exported::Exists(p) => {
            app.overlay.open = Some(crate::tui::app::Overlay::ConfirmOverwrite(p))
        }
        export::Exported::Failed(e) => app.screen.error(e),
    }
}

/// Moves to the pipeline step `delta` away (clamped): the IR pane shows that step's Program,
/// the PTX pane the fused kernel of its group.
pub(super) fn step(app: &mut App, delta: isize, out: &mut Vec<Cmd>) {
    let Some(pv) = app.programs.doc.as_ref().and_then(|d| d.pipeline.as_ref()) else {
        return app
            .screen
            .info("steps: open a pipeline file (marked ⇶ in the list)");
    };
    let n = pv.steps();
    let to = (pv.step as isize + delta).clamp(0, n.saturating_sub(1) as isize) as usize;
    if to == pv.step {
        return app.screen.info(format!("step {} of {n}", to + 1));
    }
    if let Some(pv) = app.programs.doc.as_mut().and_then(|d| d.pipeline.as_mut()) {
        // `reanalyze` shows the step's IR at once and has the worker plan and fuse.
        pv.step = to;
    }
    app.panes.ir = Default::default();
    app.panes.ptx = Default::default();
    app.panes.ir.cursor = app
        .programs
        .doc
        .as_ref()
        .and_then(|d| d.ir.iter().position(|l| l.node.is_some()))
        .unwrap_or(0);
    app.screen.info(format!("step {} of {n}", to + 1));
    reanalyze(app, out);
    nav::keep_visible(app, Focus::Ir);
}
