//! The inspector on pipeline files: the Plan tab's wave diagram (snapshots), the PTX pane's
//! fused kernel correlated with the selected step's IR across steps, step navigation, and a
//! directory mixing Programs and pipelines.

use crate::tui_helpers as helpers;

use std::path::{Path, PathBuf};

use helpers::*;
use vyrescope::tui::action::Command;
use vyrescope::tui::app::{App, Focus};
use vyrescope::tui::component::tabs::{self, TabComponent};
use vyrescope::tui::highlight::Highlighter;
use vyrescope::tui::update::sync_from_ptx;

fn pipeline(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pipelines")
        .join(name)
}

fn check(name: &str, got: &str) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/snapshots/tui/{name}.txt"));
    if let Err(e) = crate::support::snapshot::check(&path, got, "rendered screen", "tui_pipeline") {
        panic!("snapshot {name}: {e}\n--- got ---\n{got}");
    }
}

fn plan_tab(file: &str) -> (App, Highlighter, String) {
    let (mut a, hl) = app(&[pipeline(file)], 120, 40);
    assert!(a.programs.doc.as_ref().unwrap().pipeline.is_some());
    press(&mut a, &[Command::Tab(7)]);
    assert_eq!(a.detail.tab, tabs::Plan.id());
    let s = screen(&mut a, &hl);
    (a, hl, s)
}

#[test]
fn plan_tab_reduce_total_normalize() {
    let (a, _, s) = plan_tab("reduce_total_normalize.json");
    let plan = a
        .programs
        .doc
        .as_ref()
        .unwrap()
        .pipeline
        .as_ref()
        .unwrap()
        .plan
        .clone()
        .unwrap();
    assert!(plan.grid_barriers >= 1, "{plan:?}");
    for needle in [
        "7 Plan",
        "─grid",
        "group 0",
        "boundary after step",
        "co-resident blocks",
        "IR step 1/3",
    ] {
        assert!(s.contains(needle), "Plan tab lacks {needle}:\n{s}");
    }
    check("plan_reduce_total_normalize_120x40", &s);
}

#[test]
fn plan_tab_workgroup_rotate() {
    let (_, _, s) = plan_tab("workgroup_rotate.json");
    for needle in ["workgroup", "scale2", "fusion breaks"] {
        assert!(s.contains(needle), "Plan tab lacks {needle}:\n{s}");
    }
    check("plan_workgroup_rotate_120x40", &s);
}

/// A mixed-size group names how its smaller step uses the block (here a 128-thread copy,
/// two to each 256-thread block).
#[test]
fn plan_tab_shows_how_a_smaller_step_uses_the_block() {
    let (_, _, s) = plan_tab("independent_pair.json");
    assert!(s.contains("step 1: packed 2 x 128 in 256"), "{s}");
}

#[test]
fn programs_have_no_plan_tab() {
    let (mut a, hl) = app(&[fixture("vadd_f32.json")], 120, 40);
    press(&mut a, &[Command::Tab(7)]);
    assert_ne!(a.detail.tab, tabs::Plan.id());
    assert!(!screen(&mut a, &hl).contains("Plan"));
}

/// Every PTX line of the fused kernel that maps to a step's statement selects that step's
/// IR line, for every step, and the IR cursor's node selects PTX lines of the same node.
#[test]
fn fused_ptx_lines_select_the_steps_ir_lines() {
    let (mut a, _) = app(&[pipeline("reduce_total_normalize.json")], 120, 40);
    let steps = a
        .programs
        .doc
        .as_ref()
        .unwrap()
        .pipeline
        .as_ref()
        .unwrap()
        .steps();
    assert!(steps >= 2);
    let mut checked = 0;
    for k in 0..steps {
        let pv = a.programs.doc.as_ref().unwrap().pipeline.as_ref().unwrap();
        assert_eq!(pv.step, k);
        let prefix = format!("steps[{k}].");
        // The IR pane shows step k only.
        let doc = a.programs.doc.as_ref().unwrap();
        assert!(doc
            .ir
            .iter()
            .filter_map(|l| l.node.as_deref())
            .all(|n| n.starts_with(&prefix)));
        a.screen.focus = Focus::Ptx;
        let n = a.ptx_len();
        assert!(n > 0, "no fused PTX for step {k}");
        for line in 0..n {
            let Some(node) = a.ptx_view().unwrap().corr.node_at(line).map(str::to_string) else {
                continue;
            };
            if !node.starts_with(&prefix) {
                continue;
            }
            a.panes.ptx.cursor = line;
            sync_from_ptx(&mut a);
            let ir = a.panes.ir.cursor;
            assert_eq!(
                a.programs.doc.as_ref().unwrap().ir[ir].node.as_deref(),
                Some(node.as_str()),
                "PTX line {line} of step {k}"
            );
            checked += 1;
        }
        press(&mut a, &[Command::NextStep]);
    }
    assert!(checked > steps, "too few correlated lines: {checked}");
}

/// The PTX pane's kernel for each step is its group's fused kernel exactly as the emitter
/// makes it for `vyrescope emit PIPELINE` (`CompiledPipeline::emit_group`: the fused
/// kernel's own workgroup size, node ids renamed to the steps'), with the emission's
/// options saying so.
#[test]
fn fused_ptx_is_the_emitters_group_kernel() {
    for file in ["reduce_total_normalize.json", "workgroup_rotate.json"] {
        let (mut a, _) = app(&[pipeline(file)], 120, 40);
        let steps = a
            .programs
            .doc
            .as_ref()
            .unwrap()
            .pipeline
            .as_ref()
            .unwrap()
            .steps();
        for k in 0..steps {
            let pv = a.programs.doc.as_ref().unwrap().pipeline.as_ref().unwrap();
            assert_eq!(pv.step, k);
            let compiled = pv.compiled.as_ref().expect("compiled for the profile");
            let g = pv.group.expect("the step's group");
            let fused = pv.fused.as_ref().expect("fused");
            let em = a.code.emission.as_ref().expect("emitted");
            assert_eq!(
                em.opts.workgroup_size, fused.program.workgroup_size,
                "{file} step {k}"
            );
            let want = compiled
                .emit_group(g, &a.emit_options())
                .expect("the emitter makes the group's kernel");
            let shown = &a.ptx_view().expect("PTX pane").kernel;
            assert_eq!(shown.kernel_name, want.kernel_name, "{file} step {k}");
            assert_eq!(shown.ptx, want.ptx, "{file} step {k}");
            press(&mut a, &[Command::NextStep]);
        }
    }
}

#[test]
fn step_keys_move_and_clamp() {
    let (mut a, _) = app(&[pipeline("workgroup_rotate.json")], 120, 40);
    let step = |a: &App| {
        a.programs
            .doc
            .as_ref()
            .unwrap()
            .pipeline
            .as_ref()
            .unwrap()
            .step
    };
    press(&mut a, &[Command::PrevStep]);
    assert_eq!(step(&a), 0);
    press(
        &mut a,
        &[Command::NextStep, Command::NextStep, Command::NextStep],
    );
    assert_eq!(step(&a), 1);
    let doc = a.programs.doc.as_ref().unwrap();
    assert!(doc.ir.iter().any(|l| l
        .node
        .as_deref()
        .is_some_and(|n| n.starts_with("steps[1]."))));
}

#[test]
fn mixed_directory_lists_both_kinds() {
    let dir = std::env::temp_dir().join(format!("vyrescope-tui-mixed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("programs")).unwrap();
    for f in ["scale2_f32.json", "rotate_in_workgroup_f32.json"] {
        std::fs::copy(pipeline("programs").join(f), dir.join("programs").join(f)).unwrap();
    }
    std::fs::copy(pipeline("workgroup_rotate.json"), dir.join("b_pipe.json")).unwrap();
    std::fs::copy(fixture("vadd_f32.json"), dir.join("a_vadd.json")).unwrap();
    let (mut a, hl) = app(std::slice::from_ref(&dir), 100, 30);
    let kinds: Vec<bool> = a.programs.entries.iter().map(|e| e.pipeline).collect();
    assert_eq!(kinds, vec![false, true]);
    let s = screen(&mut a, &hl);
    assert!(s.contains("⇶b_pipe"), "pipeline not marked:\n{s}");
    // Opening the pipeline from the list shows its first step and the Plan tab.
    a.screen.focus = Focus::List;
    press(&mut a, &[Command::Down, Command::Enter]);
    assert!(a.programs.doc.as_ref().unwrap().pipeline.is_some());
    assert_eq!(a.detail.tabs().len(), 9);
    // Back to the Program: the Plan tab goes away again (Timeline and Profile stay).
    press(&mut a, &[Command::Up, Command::Enter]);
    assert_eq!(a.detail.tabs().len(), 8);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `r` without a GPU runs the reference pipeline and says so in the Run tab.
#[test]
fn run_without_gpu_runs_the_reference_pipeline() {
    let (mut a, hl) = app(&[pipeline("workgroup_rotate.json")], 120, 40);
    press(&mut a, &[Command::Dispatch]);
    assert_eq!(a.detail.tab, tabs::Run.id());
    let runs = &a.jobs.session.pipeline_runs;
    assert_eq!(runs.len(), 1, "{:?}", a.jobs.session.run_error);
    assert_eq!(runs[0].backend, "reference interpreter");
    assert!(runs[0].reference_ms.is_some() && runs[0].separate_ms.is_none());
    let s = screen(&mut a, &hl);
    assert!(s.contains("need a GPU"), "{s}");
    // One bar, the interpreter's, under one header clause (issue 36: the header used to run
    // "on reference interpreter reference only, nothing verified no GPU: ran the reference
    // interpreter" together): nothing was compared, so nothing says "verified".
    let head = s
        .lines()
        .find(|l| l.contains("workgroup_rotate: "))
        .unwrap_or_else(|| panic!("{s}"));
    assert!(
        head.contains(
            "workgroup_rotate: reference interpreter only (no GPU), nothing to verify it against"
        ),
        "{head}"
    );
    assert_eq!(head.matches("reference").count(), 1, "{head}");
    assert!(!s.contains("verified"), "{s}");
}

/// On a pipeline the workgroup keys and `t` change nothing, and say so: no new workgroup is
/// claimed, no emission is queued, no run starts.
#[test]
fn workgroup_keys_and_tune_say_they_do_not_apply_to_a_pipeline() {
    let (mut a, _hl) = app(&[pipeline("workgroup_rotate.json")], 120, 40);
    let before = a.workgroup();
    for c in [
        Command::WgDouble,
        Command::WgHalve,
        Command::WgPlus,
        Command::WgMinus,
    ] {
        a.screen.message = None;
        press(&mut a, &[c]);
        let msg = a.screen.message.clone().map(|m| m.1).unwrap_or_default();
        assert!(msg.contains("do not apply to a pipeline"), "{c:?}: {msg}");
        assert_eq!(a.workgroup(), before, "{c:?}");
        assert_eq!(a.code.workgroup, None, "{c:?}");
    }
    press(&mut a, &[Command::Tune]);
    let msg = a.screen.message.clone().map(|m| m.1).unwrap_or_default();
    assert!(msg.contains("tune sweeps are for Programs"), "{msg}");
    assert!(
        a.jobs.session.pipeline_runs.is_empty(),
        "t ran the pipeline"
    );
}

/// A GPU run's separate and fused device times are drawn side by side, the longer bar full.
#[test]
fn run_tab_charts_separate_against_fused() {
    use vyrescope::tui::action::Action;
    use vyrescope::tui::background::Reply;
    use vyrescope::tui::pipeline::PipelineRun;
    let (mut a, hl) = app(&[pipeline("reduce_total_normalize.json")], 120, 40);
    press(&mut a, &[Command::Tab(4)]);
    let run = PipelineRun {
        pipeline: "reduce_total_normalize".into(),
        backend: "NVIDIA H200".into(),
        separate_ms: Some(0.0312),
        fused_ms: Some(0.0125),
        launches: (3, 1),
        reference_ms: None,
        verified: true,
        note: String::new(),
    };
    update(&mut a, Action::Worker(Reply::PipelineRan(Ok(run))));
    // Under `--sync barrier` the fused form is the grid-barrier kernel, labelled `fused`.
    a.programs.sync = vyrescope::megakernel::plan::SyncMode::Barrier;
    let s = screen(&mut a, &hl);
    let sep = s
        .lines()
        .find(|l| l.contains("separate ( 3 launches)"))
        .expect(&s);
    let fused = s
        .lines()
        .find(|l| l.contains("fused    ( 1 launches)"))
        .expect(&s);
    let full = |l: &str| l.chars().filter(|c| *c == '█').count();
    assert!(full(sep) > 2 * full(fused), "{sep}\n{fused}");
    assert!(
        fused.contains("0.0125 ms") && fused.contains("x2.50"),
        "{fused}"
    );
    assert!(s.contains("verified"));
    // By default (`--sync dataflow`) the fused form is the dataflow kernel, and says so.
    a.programs.sync = vyrescope::megakernel::plan::SyncMode::Dataflow;
    let s = screen(&mut a, &hl);
    assert!(s.contains("dataflow ( 1 launches)"), "{s}");
}

/// The other way: the IR cursor on a step's statement highlights fused PTX lines of exactly
/// that statement (the fused kernel of the step's group holds every statement of the step).
#[test]
fn step_ir_lines_select_fused_ptx_lines() {
    use vyrescope::tui::update::sync_from_ir;
    let (mut a, _) = app(&[pipeline("workgroup_rotate.json")], 120, 40);
    press(&mut a, &[Command::NextStep]);
    a.screen.focus = Focus::Ir;
    let nodes: Vec<(usize, String)> = a
        .programs
        .doc
        .as_ref()
        .unwrap()
        .ir
        .iter()
        .enumerate()
        .filter_map(|(i, l)| Some((i, l.node.as_deref()?.to_string())))
        .collect();
    assert!(!nodes.is_empty());
    let mut mapped = 0;
    for (line, node) in nodes {
        assert!(node.starts_with("steps[1]."), "{node}");
        a.panes.ir.cursor = line;
        sync_from_ir(&mut a);
        let corr = &a.ptx_view().unwrap().corr;
        if !corr.lines_of(&node).is_empty() {
            mapped += 1;
            assert_eq!(
                corr.node_at(a.panes.ptx.cursor),
                Some(node.as_str()),
                "IR line {line}"
            );
        }
    }
    assert!(
        mapped >= 2,
        "only {mapped} statements of step 1 map to fused PTX"
    );
}

/// With a plan cache (the interactive inspector uses the user's), every planning is counted:
/// a miss the first time, a hit when the same plan is needed again, and the Cache and
/// Telemetry tabs show the counters even before any GPU work.
#[test]
fn plan_cache_counts_show_in_the_cache_and_telemetry_tabs() {
    let dir = std::env::temp_dir().join(format!(
        "vyrescope-tui-plan-cache-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let (mut a, hl) = app(&[pipeline("reduce_total_normalize.json")], 120, 40);
    a.jobs.session.plan_cache = Some(vyrescope::megakernel::cache::PlanCache::at(&dir));
    let replan = |a: &mut App, cmd: Command| {
        a.programs
            .doc
            .as_mut()
            .unwrap()
            .pipeline
            .as_mut()
            .unwrap()
            .planned_for = None;
        press(a, &[cmd]);
    };
    replan(&mut a, Command::NextStep);
    assert_eq!(
        (
            a.jobs.session.plan_counts.hits,
            a.jobs.session.plan_counts.misses
        ),
        (0, 1)
    );
    replan(&mut a, Command::PrevStep);
    replan(&mut a, Command::NextStep);
    assert_eq!(
        (
            a.jobs.session.plan_counts.hits,
            a.jobs.session.plan_counts.misses
        ),
        (2, 1)
    );
    assert!(
        std::fs::read_dir(&dir).unwrap().count() == 1,
        "one plan file"
    );
    press(&mut a, &[Command::Tab(5)]);
    assert_eq!(a.detail.tab, tabs::Cache.id());
    let s = screen(&mut a, &hl);
    for needle in [
        "plan_cache.hits",
        "plan_cache.misses",
        "plan_cache.evictions",
    ] {
        assert!(s.contains(needle), "{needle} missing:\n{s}");
    }
    assert!(
        s.lines()
            .any(|l| l.contains("plan_cache.hits") && l.contains(" 2")),
        "{s}"
    );
    press(&mut a, &[Command::Tab(6)]);
    assert_eq!(a.detail.tab, tabs::Telemetry.id());
    let s = screen(&mut a, &hl);
    assert!(
        s.lines()
            .any(|l| l.contains("plan_cache.misses") && l.contains(" 1")),
        "{s}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Plan tab says which decided each run of fusable steps and why, as `plan` does: here
/// the cost model's predicted times (a `--decide measure` run's cached medians otherwise).
#[test]
fn plan_tab_says_what_decided_fusion_and_why() {
    let (mut a, hl) = app(&[pipeline("softmax.json")], 160, 60);
    press(&mut a, &[Command::Tab(7), Command::Expand]);
    let s = screen(&mut a, &hl);
    assert!(s.contains("fusion decided by: model prediction"), "{s}");
    assert!(
        s.contains("steps 0,1,2,3,4: fuse [0,1,2,3,4] (predicted: fused"),
        "{s}"
    );
}
