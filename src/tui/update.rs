//! `update(&mut App, Action) -> Vec<Cmd>`: the only place the inspector's state changes.
//!
//! This file routes an action: an open overlay takes it first
//! ([`crate::tui::app::Overlays::update`]); otherwise every sub-state that needs only its
//! own fields applies it (`Screen`, `Detail`, `Jobs`, each with its own `update`), then the
//! command table here handles what spans sub-states, with small named functions per concern
//! in `update/` (navigation and search, the program and its emission, worker replies). None
//! of them touch the terminal, a file, a thread or the GPU: reading files and other work
//! that may be slow is returned as [`Cmd::Job`] for the worker, an export's write as
//! [`Cmd::Export`] for the shell. The focused pane's component
//! ([`crate::tui::component`]) gets each command first.

use super::action::{Action, Cmd, Command};
use super::app::overlay::Handled;
use super::app::{App, Focus, Overlay, PromptKind, SM_TARGETS};
use super::component;
use super::export;

mod capture;
pub(crate) mod nav;
mod pin;
pub(crate) mod profile;
pub(crate) mod program;
mod reply;
pub(crate) mod timeline;

pub use nav::{sync_from_ir, sync_from_ptx};

/// Applies one action; returns what the shell must do (worker jobs, quit).
pub fn update(app: &mut App, action: Action) -> Vec<Cmd> {
    let mut out = Vec::new();
    // The help screen's scroll limit depends on the whole state; only measured when open.
    let help_max = match app.overlay.open {
        Some(Overlay::Help(_)) => {
            component::help::max_scroll(app, app.screen.size.0, app.screen.size.1)
        }
        _ => 0,
    };
    match app.overlay.update(&action, help_max) {
        Handled::Done(cmds) => return cmds,
        Handled::Submit(kind, text) => {
            program::submit_prompt(app, kind, text, &mut out);
            return out;
        }
        Handled::Overwrite(path, yes) => {
            if yes {
                program::write_export(app, path, &mut out);
            } else {
                app.screen
                    .info(format!("kept {} (not exported)", path.display()));
            }
            return out;
        }
        Handled::Pass => {}
    }
    // A status message lasts until the next user action (or its time runs out): it must
    // never hide the key hints for good. The action may set a new one.
    if matches!(
        action,
        Action::Command(_) | Action::Click(..) | Action::Wheel(..) | Action::HWheel(..)
    ) {
        app.screen.message = None;
    }
    // The sub-states' own parts (their actions do not overlap, so the order is free).
    out.extend(app.screen.update(&action));
    if let Action::Command(c @ (Command::FocusNext | Command::FocusPrev)) = &action {
        let c = *c;
        // Skip the panes the layout hides (the SASS pane while off, the PTX pane while the
        // SASS pane stands in for it).
        for _ in 0..Focus::ALL.len() {
            if app.pane_shown(app.screen.focus) {
                break;
            }
            app.screen.cycle_focus(c == Command::FocusNext);
        }
    }
    out.extend(app.detail.update(&action));
    out.extend(app.jobs.update(&action));
    // A folded program list takes no focus: Tab goes on to the next pane.
    if app.screen.focus == Focus::List && super::layout::list_collapsed(app) {
        let back = matches!(action, Action::Command(super::action::Command::FocusPrev));
        app.screen.cycle_focus(!back);
    }
    match action {
        Action::Command(c) => command(app, c, &mut out),
        // Text input with no prompt open (the overlay took it otherwise); the sub-states
        // took the rest.
        Action::Input(_)
        | Action::Backspace
        | Action::Edit(_)
        | Action::Tick
        | Action::WorkerGone => {}
        Action::Resize(..) => {
            // Narrowing below the three-way width hides the PTX pane behind the SASS pane.
            if !app.pane_shown(app.screen.focus) && app.screen.focus == Focus::Ptx {
                app.screen.focus = Focus::Sass;
            }
            for f in Focus::ALL {
                nav::keep_visible(app, f);
            }
        }
        Action::Click(x, y) => nav::click(app, x, y, &mut out),
        Action::Wheel(x, y, delta) => nav::wheel(app, x, y, delta),
        Action::HWheel(x, y, delta) => nav::hwheel(app, x, y, delta),
        Action::Worker(r) => reply::reply(app, r, &mut out),
        Action::FileChanged => program::reload(app, true, &mut out),
        Action::Exported(e) => program::exported(app, e),
    }
    out
}

fn command(app: &mut App, c: Command, out: &mut Vec<Cmd>) {
    // Help lets Quit through; anything else it took already.
    if let Some(Overlay::Help(_)) = app.overlay.open {
        if c == Command::Quit {
            out.push(Cmd::Quit);
        }
        return;
    }
    // The focused component's own meaning of a key comes first (the Timeline tab's zoom and
    // pan keys, the detail panel's Left/Right, Enter on the list...).
    if component::focused(app).command(app, c, out) {
        return;
    }
    match c {
        Command::Quit => out.push(Cmd::Quit),
        // The Timeline tab's keys that need no focus on it (they say when there is none).
        Command::TimelineFit | Command::TimelineForm => {
            timeline::command(app, c, out);
        }
        Command::PlanVyre => crate::tui::views::plan::toggle_vyre(app),
        Command::Help => app.overlay.open = Some(Overlay::Help(0)),
        // Taken by `Screen::update` and `Detail::update`.
        Command::FocusNext
        | Command::FocusPrev
        | Command::Zoom
        | Command::Expand
        | Command::PrevTab
        | Command::NextTab
        | Command::Tab(_) => {}
        // The code panes' components scroll sideways; elsewhere these do nothing.
        Command::Left | Command::ScrollLeft | Command::Right | Command::ScrollRight => {}
        Command::Up => nav::move_cursor(app, -1),
        Command::Down => nav::move_cursor(app, 1),
        Command::PageUp => {
            let p = nav::page(app, app.screen.focus) as isize;
            nav::move_cursor(app, -p)
        }
        Command::PageDown => {
            let p = nav::page(app, app.screen.focus) as isize;
            nav::move_cursor(app, p)
        }
        Command::Home => nav::move_cursor(app, isize::MIN / 2),
        Command::End => nav::move_cursor(app, isize::MAX / 2),
        // The list's and the Diagnostics tab's components took it; elsewhere nothing.
        Command::Enter => {}
        // The screen drops the message and zoom/expand; the search goes here.
        Command::Escape => app.panes.search = None,
        Command::NextBlock => nav::jump_block(app, true),
        Command::PrevBlock => nav::jump_block(app, false),
        Command::PrevStep => program::step(app, -1, out),
        Command::NextStep => program::step(app, 1, out),
        Command::Search => app.overlay.prompt(PromptKind::Search, String::new()),
        Command::SearchNext => nav::search_step(app, true, false),
        Command::SearchPrev => nav::search_step(app, false, false),
        Command::WgHalve => program::tune_x(app, |x| (x / 2).max(1), out),
        Command::WgDouble => program::tune_x(app, |x| x.saturating_mul(2), out),
        Command::WgMinus => {
            program::tune_x(app, |x| if x > 32 { (x - 1) / 32 * 32 } else { x }, out)
        }
        Command::WgPlus => program::tune_x(app, |x| (x / 32 + 1) * 32, out),
        Command::WgPrompt => {
            let [x, y, z] = app.workgroup();
            app.overlay
                .prompt(PromptKind::Workgroup, format!("{x},{y},{z}"));
        }
        Command::CycleSm => {
            let i = SM_TARGETS
                .iter()
                .position(|s| *s == app.code.sm)
                .map_or(0, |i| (i + 1) % SM_TARGETS.len());
            app.code.sm = SM_TARGETS[i];
            app.code.sm_pinned = true;
            app.screen
                .info(match crate::emit::ptxas::arch_note(app.code.sm) {
                    Some(note) => format!("target sm_{} (PTX; {note})", app.code.sm),
                    None => format!("target sm_{}", app.code.sm),
                });
            program::reanalyze(app, out);
        }
        Command::Pin => pin::pin(app, out),
        Command::PinBest => pin::pin_best(app, out),
        Command::PinDiff => pin::toggle_diff(app, out),
        Command::PinSwap => pin::swap(app, out),
        Command::Unroll => pin::toggle_unroll(app, out),
        Command::SassPane => program::cycle_sass(app, out),
        Command::VyreView => program::cycle_vyre(app, out),
        Command::CycleDevice => program::cycle_device(app, out),
        // On a captured dispatch, `r` replays it against the captured outputs.
        Command::Dispatch => {
            if !capture::replay(app, out) {
                program::gpu_job(app, false, out)
            }
        }
        Command::CaptureSort => capture::cycle_sort(app, out),
        Command::Tune => program::gpu_job(app, true, out),
        Command::Profile => profile::request(app, out),
        Command::Reload => program::reload(app, false, out),
        Command::Export => match export::target(app) {
            Ok(p) => program::export_view(app, p, out),
            Err(e) => app.screen.error(e.to_string()),
        },
        Command::ExportTo => {
            let default = export::default_path(app)
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            app.overlay.prompt(PromptKind::ExportPath, default);
        }
        Command::Open => app.overlay.prompt(PromptKind::Open, String::new()),
    }
}

fn collect(f: impl FnOnce(&mut Vec<Cmd>)) -> Vec<Cmd> {
    let mut out = Vec::new();
    f(&mut out);
    out
}

/// Re-emits, re-maps and re-estimates for the current options: inline for small programs
/// (the result is visible at once), on the worker for large ones.
pub fn reanalyze(app: &mut App) -> Vec<Cmd> {
    collect(|out| program::reanalyze(app, out))
}

/// Re-estimates occupancy and diagnostics for the current device and the kernel's
/// resources; asks the worker to measure the resources when they are not known yet.
pub fn refresh_estimate(app: &mut App) -> Vec<Cmd> {
    collect(|out| program::refresh_estimate(app, out))
}

/// First actions of a session: open the first program, check every listed file and probe
/// the device (both on the worker).
pub fn start(app: &mut App) -> Vec<Cmd> {
    collect(|out| {
        program::open_selected(app, out);
        program::check_files(app, 0, out);
        out.push(app.jobs.queue(super::background::Job::Probe));
    })
}

/// Opens the program under the list cursor (resets the code panes).
pub fn open_selected(app: &mut App) -> Vec<Cmd> {
    collect(|out| program::open_selected(app, out))
}
