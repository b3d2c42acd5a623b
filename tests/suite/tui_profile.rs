//! The inspector's per-statement profile (issue 50): `p` without a GPU makes the
//! interpreter's instruction-count ESTIMATE, labelled so; the IR and PTX panes get a heat
//! gutter and the Profile tab lists the hot statements with the same numbers `vyrescope
//! profile FILE --estimate --json` prints; a Profile row selects its statement in the code
//! panes; a reload with other contents hides the heat; failures say what to fix.

use std::path::Path;

use crate::tui_helpers as helpers;

use helpers::*;
use serde_json::Value;
use vyrescope::tui::action::Command;
use vyrescope::tui::app::{App, Focus, Tab};

/// `vyrescope profile FILE --estimate --json`'s statements of kernel `k`: (node, self
/// share, total share, IR line).
fn cli_statements(file: &Path, k: usize) -> Vec<(String, f64, f64, u64)> {
    let (code, out, err) =
        crate::support::cli::run(&["profile", file.to_str().unwrap(), "--estimate", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("profile --json");
    assert_eq!(v["profiles"][k]["source"], "estimate");
    v["profiles"][k]["statements"]
        .as_array()
        .expect("statements")
        .iter()
        .map(|s| {
            (
                s["node"].as_str().unwrap().to_string(),
                s["self_share"].as_f64().unwrap(),
                s["total_share"].as_f64().unwrap(),
                s["ir_line"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The first kernel's profile of the inspector's last `p` (which must have succeeded).
fn first_profile(a: &App) -> &vyrescope::profile::Profile {
    &a.jobs
        .session
        .profile
        .as_ref()
        .expect("a profile")
        .result
        .as_ref()
        .expect("the profile succeeded")[0]
}

/// The profile's statements carry the command's nodes and self shares, in its order.
fn assert_same_self_shares(p: &vyrescope::profile::Profile, cli: Vec<(String, f64, f64, u64)>) {
    let ours: Vec<(String, f64)> = p
        .statements
        .iter()
        .map(|s| (s.node.clone(), s.self_share))
        .collect();
    let theirs: Vec<(String, f64)> = cli.into_iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(ours, theirs);
}

fn message(a: &App) -> String {
    a.screen
        .message
        .as_ref()
        .map_or(String::new(), |m| m.1.clone())
}

fn pct(share: f64) -> String {
    format!("{:.1}", 100.0 * share)
}

#[test]
fn p_offline_shows_an_estimate_whose_gutter_and_panel_match_the_profile_command() {
    let file = fixture("stencil5_f32.json");
    let (mut a, hl) = app(std::slice::from_ref(&file), 150, 70);
    press(&mut a, &[Command::Profile]);
    assert!(message(&a).contains("ESTIMATE"), "{}", message(&a));
    assert_eq!(a.detail.tab, Tab("Profile"));
    let s = screen(&mut a, &hl);
    assert!(s.contains("heat ESTIMATE"), "{s}");
    assert!(
        s.contains("instruction-count ESTIMATE from the reference interpreter"),
        "{s}"
    );
    let cli = cli_statements(&file, 0);
    assert!(cli.len() >= 8, "{cli:?}");
    let lines: Vec<&str> = s.lines().collect();
    // The panel lists the statements in the command's order with its numbers; the IR
    // gutter shows each statement's own share on the line that opens it.
    let rows = lines
        .iter()
        .position(|l| l.contains("self%  total%"))
        .expect("header");
    for (k, (node, own, total, ir_line)) in cli.iter().take(8).enumerate() {
        let row = lines[rows + 1 + k];
        let cells: Vec<&str> = row
            .trim_matches(|c| c == '│' || c == ' ')
            .split_whitespace()
            .collect();
        assert_eq!(cells[0], pct(*own), "{row}");
        assert_eq!(cells[1], pct(*total), "{row}");
        assert_eq!(cells[2], node, "{row}");
        assert_eq!(cells[3], ir_line.to_string(), "{row}");
        let gutter = format!("{:>5} {node:>15}│", pct(*own));
        assert!(
            lines.iter().any(|l| l.contains(&gutter)),
            "no IR gutter `{gutter}` in\n{s}"
        );
    }
    // The shares are of the whole: the own shares add up to 100%.
    let sum: f64 = cli.iter().map(|c| c.1).sum();
    assert!((sum - 1.0).abs() < 1e-9, "{sum}");
    // The state holds the command's numbers exactly, not just their rounding.
    let view = a.jobs.session.profile.as_ref().expect("a profile");
    let p = &view.result.as_ref().expect("profiled")[0];
    let ours: Vec<(String, f64, f64, u64)> = p
        .statements
        .iter()
        .map(|s| {
            (
                s.node.clone(),
                s.self_share,
                s.total_share,
                u64::from(s.ir_line.unwrap()),
            )
        })
        .collect();
    assert_eq!(ours, cli);
}

#[test]
fn a_profile_row_selects_its_statement_in_the_ir_and_ptx_panes() {
    let file = fixture("stencil5_f32.json");
    let (mut a, hl) = app(std::slice::from_ref(&file), 150, 60);
    press(&mut a, &[Command::Profile]);
    a.screen.focus = Focus::Detail;
    let statements = first_profile(&a).statements.clone();
    for (k, want) in statements.iter().enumerate().take(5).skip(1) {
        press(&mut a, &[Command::Down]);
        assert_eq!(a.detail.pane.cursor, k);
        assert_eq!(a.ir_node(), Some(want.node.as_str()), "row {k}");
        assert_eq!(
            a.panes.ir.cursor + 1,
            want.ir_line.unwrap() as usize,
            "row {k}"
        );
        // The PTX cursor is on the statement's first line, whose heat cell shows the share.
        let view = a.ptx_view().unwrap().clone();
        let first = view.corr.lines_of(&want.node)[0][0] as usize;
        assert_eq!(a.panes.ptx.cursor + 1, first, "row {k}");
        let digits = view.len().to_string().len();
        let cell = format!("{:>5} {first:>digits$}│", pct(want.self_share));
        let s = screen(&mut a, &hl);
        assert!(s.contains(&cell), "no PTX heat `{cell}` in\n{s}");
    }
    // Up again: back to the hottest.
    press(&mut a, &[Command::Home]);
    assert_eq!(a.ir_node(), Some(statements[0].node.as_str()));
}

#[test]
fn a_reload_with_other_contents_hides_the_heat_and_the_same_contents_keep_it() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("saxpy_f32.json");
    let text = std::fs::read_to_string(fixture("saxpy_f32.json")).unwrap();
    std::fs::write(&file, &text).unwrap();
    let (mut a, hl) = app(std::slice::from_ref(&file), 150, 50);
    press(&mut a, &[Command::Profile]);
    assert!(a.jobs.session.profile.as_ref().unwrap().result.is_ok());
    press(&mut a, &[Command::Reload]);
    assert!(!a.jobs.session.profile.as_ref().unwrap().stale);
    assert!(screen(&mut a, &hl).contains("heat ESTIMATE"));
    // Another statement: the profile is of other code now.
    let changed = text.replace(
        r#"{"let": "a", "value": {"load": "params", "index": 0}},"#,
        r#"{"let": "a", "value": {"load": "params", "index": 0}},
    {"let": "b", "value": {"mul": ["a", "a"]}},"#,
    );
    assert_ne!(changed, text);
    std::fs::write(&file, &changed).unwrap();
    press(&mut a, &[Command::Reload]);
    assert!(a.jobs.session.profile.as_ref().unwrap().stale);
    let s = screen(&mut a, &hl);
    assert!(!s.contains("heat ESTIMATE"), "{s}");
    assert!(s.contains("profile stale (p)"), "{s}");
    assert!(s.contains("stale: the Program changed"), "{s}");
    // No line carries a share any more: the IR gutter is the node ids alone.
    let row = s
        .lines()
        .find(|l| l.contains("body[0]│let i"))
        .expect("IR line");
    let gutter = &row[..row.find("body[0]│").unwrap()];
    assert!(gutter.trim_start_matches('┃').trim().is_empty(), "{row}");
    // p again profiles the new contents.
    press(&mut a, &[Command::Profile]);
    let v = a.jobs.session.profile.as_ref().unwrap();
    assert!(!v.stale);
    let p = &v.result.as_ref().unwrap()[0];
    assert!(p.statement("body[3]").is_some(), "{:?}", p.statements);
}

#[test]
fn a_profile_that_cannot_run_says_why_with_a_fix() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("saxpy_f32.json");
    let text = std::fs::read_to_string(fixture("saxpy_f32.json")).unwrap();
    // Inputs from a data file that is not there: the run cannot be prepared.
    let missing = text.replace(
        r#""x": {"fill": "random", "seed": 11, "range": [-4.0, 4.0]}"#,
        r#""x": {"file": "x_missing.bin"}"#,
    );
    assert_ne!(missing, text);
    std::fs::write(&file, &missing).unwrap();
    let (mut a, hl) = app(std::slice::from_ref(&file), 150, 50);
    press(&mut a, &[Command::Profile]);
    let m = message(&a);
    assert!(
        m.starts_with("profile failed: ") && m.contains("Fix: "),
        "{m}"
    );
    assert!(a.jobs.session.profile.as_ref().unwrap().result.is_err());
    let s = screen(&mut a, &hl);
    assert!(s.contains("profile failed:"), "{s}");
    assert!(!s.contains("heat ESTIMATE"), "{s}");
    // The file on disk changed after it was opened: refused, with what to do.
    std::fs::write(&file, &text).unwrap();
    press(&mut a, &[Command::Profile]);
    let m = message(&a);
    assert!(
        m.contains("is not the Program open in the inspector") && m.contains("Fix: press R"),
        "{m}"
    );
    // After R, p profiles.
    press(&mut a, &[Command::Reload, Command::Profile]);
    assert!(
        a.jobs.session.profile.as_ref().unwrap().result.is_ok(),
        "{}",
        message(&a)
    );
}

#[test]
fn p_on_a_pipeline_shows_the_selected_steps_profile() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/chain.json");
    let (mut a, hl) = app(std::slice::from_ref(&file), 150, 50);
    press(&mut a, &[Command::NextStep, Command::Profile]);
    let cli = cli_statements(&file, 1);
    let s = screen(&mut a, &hl);
    assert!(s.contains("step 2/"), "{s}");
    let (node, own, ..) = &cli[0];
    let gutter = format!("{:>5} ", pct(*own));
    let ir_row = s
        .lines()
        .find(|l| l.contains(&format!("steps[1].{node}│")))
        .unwrap_or_else(|| panic!("no IR line of {node} in\n{s}"));
    assert!(ir_row.contains(&gutter), "{ir_row}");
}

#[test]
fn the_headless_inspector_profiles_with_p() {
    let (code, out, err) = crate::support::cli::run(&[
        "tui",
        fixture("matmul_tiled_f32.json").to_str().unwrap(),
        "--keys",
        "p",
        "--size",
        "140x40",
        "--snapshot",
        "-",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("heat ESTIMATE"), "{out}");
    assert!(out.contains("Profile"), "{out}");
    assert!(out.contains("self%  total%"), "{out}");
}

#[test]
fn a_pc_profile_names_the_top_stall_of_the_selected_statement() {
    use std::sync::Arc;
    use vyrescope::profile::{HotStatement, Profile, Source};
    use vyrescope::tui::profile::{ProfileKey, ProfileView};
    let (mut a, hl) = app(&[fixture("saxpy_f32.json")], 150, 50);
    // Samples as the pc source reports them (its collection needs a GPU): the statement
    // under the IR cursor, body[0], mostly waiting on a global load.
    let hot = |node: &str, samples: u64, stalls: Vec<(String, u64)>| HotStatement {
        node: node.into(),
        ir_line: None,
        text: String::new(),
        self_value: samples,
        self_share: samples as f64 / 100.0,
        total_value: samples,
        total_share: samples as f64 / 100.0,
        stalls,
        ptx_lines: Vec::new(),
        sass: Vec::new(),
    };
    let profile = Profile {
        kernel: "saxpy_f32".into(),
        source: Source::Pc,
        unit: Source::Pc.unit(),
        total: 100,
        statements: vec![
            hot(
                "body[3]",
                63,
                vec![
                    (
                        "smsp__pcsamp_warps_issue_stalled_long_scoreboard".into(),
                        50,
                    ),
                    ("smsp__pcsamp_warps_issue_stalled_wait".into(), 13),
                ],
            ),
            hot(
                "body[0]",
                37,
                vec![(
                    "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle".into(),
                    37,
                )],
            ),
        ],
        unmapped: 3,
        stride: None,
        overhead: None,
    };
    a.jobs.session.profile = Some(ProfileView {
        key: ProfileKey::of(a.programs.doc.as_ref().unwrap()),
        result: Ok(Arc::new(vec![profile])),
        stale: false,
    });
    press(&mut a, &[Command::Tab(8)]);
    assert_eq!(a.ir_node(), Some("body[0]"));
    let s = screen(&mut a, &hl);
    assert!(
        s.contains("heat pc · 37.0% · stall math_pipe_throttle"),
        "{s}"
    );
    assert!(s.contains("stall long_scoreboard (50)"), "{s}");
    assert!(s.contains("3 unmapped"), "{s}");
    // The PTX lines of body[3] carry its share.
    let view = a.ptx_view().unwrap().clone();
    let first = view.corr.lines_of("body[3]")[0][0] as usize;
    assert_eq!(
        vyrescope::tui::profile::Heat::of(&a).share(view.corr.node_at(first - 1)),
        Some(0.63)
    );
}

#[test]
fn a_tuned_workgroup_is_named_since_the_profile_is_of_the_files_own() {
    let file = fixture("saxpy_f32.json");
    let (mut a, _) = app(std::slice::from_ref(&file), 150, 50);
    press(&mut a, &[Command::WgHalve, Command::Profile]);
    assert_eq!(a.workgroup(), [128, 1, 1]);
    let m = message(&a);
    assert!(m.contains("at the file's own workgroup size"), "{m}");
    // Still the command's numbers (the file runs at 256).
    let p = first_profile(&a);
    let cli = cli_statements(&file, 0);
    assert_same_self_shares(p, cli);
}

/// A GPU whose worker answers the profile job with tables it made on the interpreter
/// (cycles are made up: one per statement started) and a 1.5x overhead; everything else
/// is [`NoGpu`]'s "no driver".
struct TableGpu {
    asked: Vec<std::path::PathBuf>,
}

impl vyrescope::tui::gpu::Gpu for TableGpu {
    fn probe(&mut self) -> Result<vyrescope::occupancy::DeviceCaps, vyrescope::util::Problem> {
        NoGpu.probe()
    }
    fn live_resources(
        &mut self,
        k: &vyrescope::emit::EmittedKernel,
    ) -> Option<Result<vyrescope::occupancy::KernelResources, vyrescope::util::Problem>> {
        NoGpu.live_resources(k)
    }
    fn dispatch(
        &mut self,
        p: &vyrescope::ir::Program,
        f: &vyrescope::tui::gpu::InputFolder,
        o: &vyrescope::emit::EmitOptions,
    ) -> Result<vyrescope::tui::gpu::RunRecord, vyrescope::util::Problem> {
        NoGpu.dispatch(p, f, o)
    }
    fn tune(
        &mut self,
        p: &vyrescope::ir::Program,
        f: &vyrescope::tui::gpu::InputFolder,
        o: &vyrescope::emit::EmitOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<vyrescope::tui::gpu::TuneRow>, vyrescope::util::Problem> {
        NoGpu.tune(p, f, o, progress)
    }
    fn cache_stats(&mut self) -> Result<vyrescope::tui::gpu::Counters, vyrescope::util::Problem> {
        NoGpu.cache_stats()
    }
    fn telemetry(&mut self) -> Result<vyrescope::tui::gpu::Counters, vyrescope::util::Problem> {
        NoGpu.telemetry()
    }
    fn profile(
        &mut self,
        file: &Path,
    ) -> Result<Vec<vyrescope::harness::profile_run::InstrumentedRun>, vyrescope::util::Problem>
    {
        use vyrescope::profile::instrument::{instrument, stride_for};
        self.asked.push(file.to_path_buf());
        let (program, prepared) = vyrescope::inputs::prepare_file(file, None, None)?;
        let inst = instrument(&program, stride_for(prepared.shape.workgroups()))?;
        let mut buffers = prepared.buffers.clone();
        buffers.push(inst.table_buffer());
        vyrescope::interp::run(&inst.program, &prepared.shape, &mut buffers)?;
        Ok(vec![vyrescope::harness::profile_run::InstrumentedRun {
            table: inst.read_table(&buffers).expect("table"),
            stride: inst.stride,
            plain_ms: 2.0,
            instrumented_ms: 3.0,
            device: "fake".into(),
        }])
    }
}

#[test]
fn with_a_live_gpu_p_goes_to_the_gpu_worker_and_shows_the_instrumented_source() {
    let file = fixture("stencil5_f32.json");
    let (mut a, hl) = app(std::slice::from_ref(&file), 150, 50);
    a.jobs.devices.live = a.jobs.devices.current().cloned();
    assert!(a.jobs.devices.live.is_some());
    let mut gpu = TableGpu { asked: Vec::new() };
    vyrescope::tui::replay::apply(
        &mut a,
        &mut gpu,
        vyrescope::tui::action::Action::Command(Command::Profile),
    );
    assert_eq!(gpu.asked, vec![file.clone()], "{}", message(&a));
    let p = first_profile(&a);
    assert_eq!(p.source, vyrescope::profile::Source::Instrumented);
    assert_eq!(p.unit, "cycles");
    // The same table as the estimate: the same shares, now labelled as cycles.
    let cli = cli_statements(&file, 0);
    assert_same_self_shares(p, cli);
    let s = screen(&mut a, &hl);
    assert!(s.contains("heat instrumented"), "{s}");
    assert!(s.contains("overhead 1.50x"), "{s}");
    assert!(!s.contains("ESTIMATE"), "{s}");
}

#[test]
fn the_sass_pane_shows_the_share_of_each_instructions_statement() {
    if !crate::support::tools::sass_tools("the SASS pane's heat gutter") {
        return;
    }
    let (mut a, hl) = app(&[fixture("saxpy_f32.json")], 160, 48);
    press(&mut a, &[Command::SassPane, Command::Profile]);
    let heat = vyrescope::tui::profile::Heat::of(&a);
    let listing = a.sass_view().expect("a SASS listing").clone();
    // The instructions of the hottest statement that has some carry its share.
    let p = first_profile(&a);
    let rows_of = |node: &str| -> Vec<usize> {
        (0..listing.len())
            .filter(|&i| listing.node_at(i) == Some(node))
            .collect()
    };
    let top = p
        .statements
        .iter()
        .find(|s| !rows_of(&s.node).is_empty())
        .expect("a profiled statement with SASS")
        .clone();
    let rows = rows_of(&top.node);
    assert_eq!(heat.share(listing.node_at(rows[0])), Some(top.self_share));
    a.screen.focus = Focus::Sass;
    vyrescope::tui::update::update(
        &mut a,
        vyrescope::tui::action::Action::Command(Command::Home),
    );
    for _ in 0..rows[0] {
        press(&mut a, &[Command::Down]);
    }
    let s = screen(&mut a, &hl);
    let text = listing.line(rows[0]).trim().to_string();
    let row = s
        .lines()
        .find(|l| l.contains(&text))
        .unwrap_or_else(|| panic!("no SASS row `{text}` in\n{s}"));
    assert!(row.contains(&format!("{} ", pct(top.self_share))), "{row}");
}
