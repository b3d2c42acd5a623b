//! The Timeline tab (issue 23): a record file written through the decoding API from seeded,
//! shuffled records shaped like a fused `reduce_total_normalize` run (two blocks per SM,
//! steps on virtual workgroups, a one-workgroup fold between two grid barriers) opens with
//! `--timeline`; the tab's snapshot; zoom, pan, lanes, slices and the cursor moving the IR
//! and PTX panes to the slice's step; the record file's round trip and its refusals.

use crate::tui_helpers as helpers;

use std::path::{Path, PathBuf};

use helpers::*;
use vyrescope::emit::timeline::{
    TimelineSpec, TimelineUnit, UnitKind, WaitKind, NO_WORKGROUP, RECORD_BYTES,
};
use vyrescope::inputs::prng::SplitMix64;
use vyrescope::timeline::file::{parse, read, to_json};
use vyrescope::timeline::{check, decode, summarize, Capture, LaunchRecords};
use vyrescope::tui::action::Command;
use vyrescope::tui::app::{App, Focus};
use vyrescope::tui::component::tabs::{self, TabComponent};
use vyrescope::util::Problem;

fn put(buf: &mut [u8], slots: u32, block: u32, slot: u32, r: [u32; 4], start: u64, end: u64) {
    let at = ((block * slots + slot) * RECORD_BYTES) as usize;
    let words = [
        start as u32,
        (start >> 32) as u32,
        end as u32,
        (end >> 32) as u32,
        r[0],
        r[1],
        r[2],
        r[3],
    ];
    for (i, w) in words.iter().enumerate() {
        buf[at + i * 4..at + i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
}

fn unit(node: &str, kind: UnitKind, step: u32, vwg: Option<u32>) -> TimelineUnit {
    TimelineUnit {
        node: node.into(),
        kind,
        step: Some(step),
        workgroup_var: vwg.map(|_| format!("f{step}_v")),
        workgroups: vwg,
        packed: None,
    }
}

/// A fused three-step launch on 12 of 16 SMs, two blocks each: step 0 over 96 virtual
/// workgroups, a grid barrier, step 1 (one workgroup, on block 0), a grid barrier, step 2
/// over 96 virtual workgroups. Times are seeded; every block's records sit at shuffled slots.
pub fn fused_capture(seed: u64) -> Capture {
    let (blocks, vwg) = (24u32, 96u32);
    let trips = vwg / blocks;
    let spec = TimelineSpec {
        units: vec![
            unit("body[0].body[1]", UnitKind::Step, 0, Some(vwg)),
            unit("body[1]", UnitKind::Wait(WaitKind::GridBarrier), 0, None),
            unit("body[2].block[1]", UnitKind::Step, 1, Some(1)),
            unit("body[3]", UnitKind::Wait(WaitKind::GridBarrier), 1, None),
            unit("body[4].body[1]", UnitKind::Step, 2, Some(vwg)),
        ],
        slots_per_block: TimelineSpec::slots_for(2 * trips as u64 + 3),
    };
    let slots = spec.slots_per_block;
    let mut rng = SplitMix64::new(seed);
    let base = 1_764_800_000_000_000_000u64 + rng.next_u64() % 1_000;
    let mut bytes = vec![0u8; spec.buffer_bytes(blocks as u64) as usize];
    // The fold (step 1) starts when the last block reaches the first barrier.
    let mut ends = Vec::new();
    let mut recs: Vec<Vec<([u32; 2], u64, u64)>> = Vec::new();
    for b in 0..blocks {
        let mut t = base + rng.next_u64() % 400;
        let mut v = Vec::new();
        for trip in 0..trips {
            let d = 250 + rng.next_u64() % 600;
            v.push(([0, trip * blocks + b], t, t + d));
            t += d + 20;
        }
        ends.push(t);
        recs.push(v);
    }
    let arrive_all = ends.iter().copied().max().unwrap_or(base);
    let fold_end = arrive_all + 300 + 700;
    let leave2 = fold_end + 300;
    for b in 0..blocks {
        let sm = b % 12;
        let v = &mut recs[b as usize];
        let leave1 = arrive_all + 250 + rng.next_u64() % 50;
        v.push(([1, NO_WORKGROUP], ends[b as usize], leave1));
        if b == 0 {
            v.push(([2, 0], leave1 + 10, fold_end));
            v.push(([3, NO_WORKGROUP], fold_end + 10, leave2));
        } else {
            // The fold's guard is false on every other block: a record decode drops.
            v.push(([2, b], leave1 + 10, leave1 + 40));
            v.push(([3, NO_WORKGROUP], leave1 + 50, leave2));
        }
        let mut t = leave2 + 20 + rng.next_u64() % 100;
        for trip in 0..trips {
            let d = 150 + rng.next_u64() % 300;
            v.push(([4, trip * blocks + b], t, t + d));
            t += d + 20;
        }
        let mut order: Vec<u32> = (0..v.len() as u32).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        for (seq, (r, a, e)) in v.iter().enumerate() {
            put(
                &mut bytes,
                slots,
                b,
                order[seq],
                [r[0], r[1], sm, seq as u32],
                *a,
                *e,
            );
        }
    }
    Capture {
        launches: vec![LaunchRecords {
            program: None,
            kernel: "reduce_total_normalize_fused_0_2".into(),
            spec,
            grid: [blocks, 1, 1],
            device_ms: Some(0.0123),
            bytes,
        }],
        host: vec![],
        device_sms: Some(16),
    }
}

/// The record file of [`fused_capture`] in a temporary folder.
fn record_file(dir: &Path) -> PathBuf {
    let cap = fused_capture(2026);
    let source = pipeline("reduce_total_normalize.json");
    let text = to_json(
        Some("NVIDIA H200"),
        "fixtures/pipelines/reduce_total_normalize.json",
        Some(&std::fs::read(&source).expect("fixture")),
        &[("fused", &cap)],
    )
    .expect("json");
    let p = dir.join("rec.json");
    std::fs::write(&p, text).expect("write");
    p
}

fn pipeline(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pipelines")
        .join(name)
}

fn snap(name: &str, got: &str) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/snapshots/tui/{name}.txt"));
    if let Err(e) = crate::support::snapshot::check(&path, got, "rendered screen", "tui_timeline") {
        panic!("snapshot {name}: {e}\n--- got ---\n{got}");
    }
}

/// The pipeline open with the recorded timeline, Timeline tab shown, detail panel focused.
fn timeline_app(w: u16, h: u16) -> (App, vyrescope::tui::highlight::Highlighter) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let rec = record_file(tmp.path());
    let (mut a, hl) = app(&[pipeline("reduce_total_normalize.json")], w, h);
    timeline_mut(&mut a).set(
        vyrescope::tui::timeline::from_file(&rec, &[pipeline("reduce_total_normalize.json")])
            .expect("record file"),
    );
    press(&mut a, &[Command::Tab(8)]);
    assert_eq!(a.detail.tab, tabs::Timeline.id());
    a.screen.focus = Focus::Detail;
    (a, hl)
}

#[test]
fn record_file_round_trips_and_decodes_as_the_capture() {
    let cap = fused_capture(7);
    let d = decode(&cap).expect("decode");
    // 96 + 1 + 96 step slices and two waits per block.
    assert_eq!(d.slices.len(), 96 + 1 + 96 + 2 * 24);
    assert_eq!(check(&cap, &d), Vec::<String>::new());
    let text = to_json(None, "x", None, &[("fused", &cap)]).expect("json");
    let back = parse(&text, "rec.json").expect("parse");
    assert_eq!(back.forms.len(), 1);
    assert_eq!(back.forms[0].label, "fused");
    let again = decode(&back.forms[0].capture).expect("decode");
    assert_eq!(again, d);
    assert_eq!(
        summarize(&back.forms[0].capture, &again),
        summarize(&cap, &d)
    );
}

#[test]
fn summary_json_has_the_cli_fields() {
    // `run --timeline --json` prints this struct as `timeline` (per form under `forms`).
    let cap = fused_capture(3);
    let d = decode(&cap).expect("decode");
    let v = serde_json::to_value(summarize(&cap, &d)).expect("json");
    for k in ["kernel_ms", "sms", "bubble_pct", "steps", "waits"] {
        assert!(v.get(k).is_some(), "summary lacks {k}: {v}");
    }
    let step = &v["steps"][0];
    for k in ["step", "start_us", "end_us", "busy_us", "wait_us"] {
        assert!(step.get(k).is_some(), "step lacks {k}: {step}");
    }
    assert_eq!(v["steps"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["waits"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["sms"], 12);
}

#[test]
fn a_wait_outside_its_kernel_is_reported() {
    let mut cap = fused_capture(5);
    let slots = cap.launches[0].spec.slots_per_block;
    // Block 3's first wait (seq trips = 4) rewritten to end long after every step slice.
    let d = decode(&cap).expect("decode");
    let last = d.slices.iter().map(|s| s.end_ns).max().unwrap_or(0);
    let w = d
        .slices
        .iter()
        .find(|s| s.block == 3 && s.unit == 1)
        .copied()
        .expect("wait");
    let region = &mut cap.launches[0].bytes[(3 * slots * RECORD_BYTES) as usize..];
    for slot in 0..slots {
        let at = (slot * RECORD_BYTES) as usize;
        if region[at + 16] == 1 {
            put(
                region,
                slots,
                0,
                slot,
                [1, NO_WORKGROUP, w.sm, 4],
                w.start_ns,
                last + 5_000,
            );
        }
    }
    let d = decode(&cap).expect("decode");
    let problems = check(&cap, &d);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("outside the kernel's span")),
        "{problems:?}"
    );
}

#[test]
fn record_files_that_cannot_be_read_are_refused_with_a_fix() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let good = std::fs::read_to_string(record_file(tmp.path())).expect("read");
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "not JSON"),
        (
            r#"{"traceEvents": [], "displayTimeUnit": "ns"}"#.into(),
            "Chrome trace",
        ),
        (
            r#"{"format": "other"}"#.into(),
            "not a timeline record file",
        ),
        (
            good.replacen("\"version\":1", "\"version\":9", 1),
            "version 9",
        ),
        (
            good.replacen("\"grid\":[24,1,1]", "\"grid\":[4000000000,4000000000,1]", 1),
            "more than",
        ),
        (
            good.replacen("\"block\":0,", "\"block\":999,", 1),
            "block 999",
        ),
        (
            good.replacen("\"slots_per_block\":16", "\"slots_per_block\":12", 1),
            "power of two",
        ),
        (
            good.replacen("\"version\":1", "\"version\":1,\"version\":1", 1),
            "duplicate key",
        ),
        (good.replacen("\"source\"", "\"sauce\"", 1), "sauce"),
    ];
    for (text, want) in cases {
        let e = parse(&text, "rec.json").expect_err(want).to_string();
        assert!(
            e.contains(want) && e.contains("rec.json") && e.contains("Fix:"),
            "{want}: {e}"
        );
    }
    // Missing, a folder, too large: through the bounded reader.
    let e = read(&tmp.path().join("missing.json")).expect_err("missing");
    assert!(e.to_string().contains("Fix:"), "{e}");
    let e = read(tmp.path()).expect_err("folder");
    assert!(e.to_string().contains("Fix:"), "{e}");
    // The inspector refuses a bad file before it starts, naming the option.
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{}").expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args(["tui", "fixtures/programs/vadd_f32.json", "--timeline"])
        .arg(&bad)
        .args(["--keys", ""])
        .env(
            "VYRESCOPE_CONFIG",
            "/nonexistent/vyrescope-test-config.json",
        )
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("--timeline") && err.contains("Fix:"), "{err}");
}

#[test]
fn timeline_tab_of_a_fused_pipeline() {
    let (mut a, hl) = timeline_app(120, 40);
    let s = screen(&mut a, &hl);
    for needle in [
        "8 Timeline",
        "fused form",
        "busy wait",
        "bubble",
        "critical path: step 0",
        "▶ step 0 wg",
    ] {
        assert!(s.contains(needle), "Timeline tab lacks {needle}:\n{s}");
    }
    snap("timeline_fused_120x40", &s);
    // Expanded over the panes: more lanes and the whole summary.
    press(&mut a, &[Command::Expand]);
    let s = screen(&mut a, &hl);
    for needle in ["grid barrier at body[1]", "check: ok", "  11 "] {
        assert!(
            s.contains(needle),
            "expanded Timeline tab lacks {needle}:\n{s}"
        );
    }
    snap("timeline_fused_expanded_120x40", &s);
}

#[test]
fn zoom_pan_and_fit() {
    let (mut a, _) = timeline_app(120, 40);
    let span = timeline(&a).current().expect("form").span;
    assert_eq!(timeline(&a).window(), (0, span));
    press(&mut a, &[Command::WgPlus]);
    let (_, len) = timeline(&a).window();
    assert_eq!(len, span / 2, "+ zooms in twice as close");
    press(&mut a, &[Command::WgPlus, Command::Right]);
    let (s1, l1) = timeline(&a).window();
    assert_eq!(l1, span / 4);
    press(&mut a, &[Command::Right]);
    let (s2, _) = timeline(&a).window();
    assert!(s2 > s1, "l pans later: {s1} -> {s2}");
    press(&mut a, &[Command::Left, Command::Left, Command::Left]);
    assert!(timeline(&a).window().0 < s1);
    // Panning never leaves the recorded span.
    press(&mut a, &[Command::ScrollRight; 20]);
    let (s, l) = timeline(&a).window();
    assert_eq!(s + l, span);
    press(&mut a, &[Command::WgMinus]);
    assert_eq!(timeline(&a).window().1, span / 2);
    press(&mut a, &[Command::TimelineFit]);
    assert_eq!(timeline(&a).window(), (0, span));
    // The tab stays: Left/Right pan here instead of switching tabs, and the workgroup keys
    // zoom instead of changing the workgroup.
    assert_eq!(a.detail.tab, tabs::Timeline.id());
}

#[test]
fn cursor_walks_lanes_and_slices_and_moves_the_panes_to_its_step() {
    let (mut a, hl) = timeline_app(120, 40);
    let first = *timeline(&a).cursor().expect("a slice");
    assert_eq!(first.step, Some(0));
    press(&mut a, &[Command::Down]);
    assert_eq!(timeline(&a).lane, 1);
    assert_ne!(timeline(&a).cursor().expect("slice").sm, first.sm);
    press(&mut a, &[Command::Up, Command::Up]);
    assert_eq!(timeline(&a).lane, 0, "clamped at the first lane");
    // Lane 0 (SM 0) holds block 0, which ran the fold (step 1): walk to it.
    let mut guard = 0;
    while timeline(&a).cursor().and_then(|s| s.step) != Some(1) {
        press(&mut a, &[Command::NextBlock]);
        guard += 1;
        assert!(guard < 100, "no step-1 slice on SM 0");
    }
    let pv = a
        .programs
        .doc
        .as_ref()
        .and_then(|d| d.pipeline.as_ref())
        .expect("pipeline");
    assert_eq!(pv.step, 1, "the cursor's step is selected in the IR pane");
    let s = screen(&mut a, &hl);
    assert!(s.contains("IR step 2/3"), "{s}");
    assert!(s.contains("▶ step 1 wg 0"), "{s}");
    press(&mut a, &[Command::End]);
    assert_eq!(timeline(&a).cursor().and_then(|s| s.step), Some(2));
    press(&mut a, &[Command::Enter]);
    assert_eq!(a.screen.focus, Focus::Ir, "Enter goes to the step's IR");
    assert_eq!(
        a.programs
            .doc
            .as_ref()
            .and_then(|d| d.pipeline.as_ref())
            .map(|p| p.step),
        Some(2)
    );
    press(&mut a, &[Command::Home]);
    // Away from the tab the keys keep their ordinary meaning.
    assert_eq!(timeline(&a).cursor().and_then(|s| s.step), Some(2));
}

#[test]
fn without_a_timeline_the_tab_says_how_to_get_one() {
    let (mut a, hl) = app(&[fixture("vadd_f32.json")], 120, 40);
    press(&mut a, &[Command::Tab(7)]);
    assert_eq!(a.detail.tab, tabs::Timeline.id(), "a Program's seventh tab");
    let s = screen(&mut a, &hl);
    assert!(
        s.contains("No timeline yet") && s.contains("--timeline-out"),
        "{s}"
    );
    // It names the bundled record file that opens without a GPU, and that file exists.
    let bundled = "tests/data/reduce_total_normalize.h200.rec.json";
    assert!(
        vyrescope::tui::views::timeline::HOW_TO.contains(bundled),
        "{}",
        vyrescope::tui::views::timeline::HOW_TO
    );
    assert!(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(bundled)
        .is_file());
    a.screen.focus = Focus::Detail;
    press(&mut a, &[Command::WgPlus]);
    assert!(a
        .screen
        .message
        .as_ref()
        .is_some_and(|m| m.1.contains("no timeline yet")));
    // The workgroup did not change: + was the Timeline's zoom here.
    assert_eq!(a.workgroup(), [256, 1, 1]);
}

/// A real capture: `reduce_total_normalize` on the NVIDIA H200 (driver 580.159.04), both
/// forms, 132 SMs, 1056 persistent blocks in the fused form (made from that run's Chrome
/// trace and the fused kernel's spec; see docs/timeline.md).
const H200: &str = "tests/data/reduce_total_normalize.h200.rec.json";

#[test]
fn the_h200_capture_opens_consistent_in_both_forms() {
    let forms = vyrescope::tui::timeline::from_file(
        Path::new(H200),
        &[pipeline("reduce_total_normalize.json")],
    )
    .expect("record file");
    assert_eq!(forms.len(), 2);
    for f in &forms {
        assert!(f.problems.is_empty(), "{}: {:?}", f.label, f.problems);
        assert_eq!(f.summary.sms_counted, 132);
    }
    assert_eq!(forms[1].label, "fused");
    assert_eq!(forms[1].decoded.slices.len(), 2625);
    let (mut a, hl) = app(&[pipeline("reduce_total_normalize.json")], 120, 40);
    timeline_mut(&mut a).set(forms);
    press(&mut a, &[Command::Tab(8), Command::Expand]);
    a.screen.focus = Focus::Detail;
    let s = screen(&mut a, &hl);
    assert!(
        s.contains("on 132/132 SMs") && s.contains("check: ok (2625 slices"),
        "{s}"
    );
    snap("timeline_h200_fused_expanded_120x40", &s);
    // The same through the command line, as docs/timeline.md shows it.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args([
            "tui",
            "fixtures/pipelines/reduce_total_normalize.json",
            "--timeline",
            H200,
        ])
        .args(["--keys", "8 S-Tab e", "--size", "120x40"])
        .env(
            "VYRESCOPE_CONFIG",
            "/nonexistent/vyrescope-test-config.json",
        )
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("fused form") && text.contains("critical path"),
        "{text}"
    );
    // `f` shows the separate launches: three kernels, one per step.
    press(&mut a, &[Command::TimelineForm]);
    let d = timeline(&a).current().expect("form");
    assert_eq!(d.label, "separate");
    assert_eq!(d.capture.launches.len(), 3);
}

/// A GPU whose dispatches succeed and whose timeline recording gives `forms` (or fails).
struct Recorder(Result<Capture, String>);

impl vyrescope::tui::gpu::Gpu for Recorder {
    fn probe(&mut self) -> Result<vyrescope::occupancy::DeviceCaps, Problem> {
        vyrescope::occupancy::profiles::load("h200").map_err(Problem::from)
    }
    fn live_resources(
        &mut self,
        _: &vyrescope::emit::EmittedKernel,
    ) -> Option<Result<vyrescope::occupancy::KernelResources, Problem>> {
        None
    }
    fn dispatch(
        &mut self,
        p: &vyrescope::ir::Program,
        _: &vyrescope::tui::gpu::InputFolder,
        o: &vyrescope::emit::EmitOptions,
    ) -> Result<vyrescope::tui::gpu::RunRecord, Problem> {
        Ok(vyrescope::tui::gpu::RunRecord {
            program: p.name.clone(),
            grid: [16, 1, 1],
            workgroup: o.workgroup_size,
            sm: o.sm,
            device_ms: 0.01,
            jit_ms: 0.0,
            parity: None,
            backend: vyrescope::tui::gpu::GPU_BACKEND.into(),
        })
    }
    fn tune(
        &mut self,
        _: &vyrescope::ir::Program,
        _: &vyrescope::tui::gpu::InputFolder,
        _: &vyrescope::emit::EmitOptions,
        _: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<vyrescope::tui::gpu::TuneRow>, Problem> {
        Err(Problem::new("no tune here", ""))
    }
    fn cache_stats(&mut self) -> Result<vyrescope::tui::gpu::Counters, Problem> {
        Ok(vec![])
    }
    fn telemetry(&mut self) -> Result<vyrescope::tui::gpu::Counters, Problem> {
        Ok(vec![])
    }
    fn timeline(
        &mut self,
        _: &vyrescope::tui::timeline::Recording,
    ) -> Result<Vec<std::sync::Arc<vyrescope::tui::timeline::TimelineData>>, Problem> {
        let cap = self.0.clone().map_err(|e| Problem::new(e, ""))?;
        let d =
            vyrescope::tui::timeline::TimelineData::build("", "recorded after r on a fake", cap)?;
        Ok(vec![std::sync::Arc::new(d)])
    }
}

#[test]
fn r_on_a_gpu_records_the_timeline_after_the_timed_run() {
    use vyrescope::tui::action::Action;
    use vyrescope::tui::replay::apply;
    let (mut a, hl) = app(&[fixture("vadd_f32.json")], 120, 40);
    a.jobs.devices.live = vyrescope::occupancy::profiles::load("h200").ok();
    apply(
        &mut a,
        &mut Recorder(Ok(fused_capture(9))),
        Action::Command(Command::Dispatch),
    );
    assert_eq!(a.jobs.session.runs.len(), 1, "the timed run is listed");
    assert!(a.jobs.busy.is_none(), "the job finished once");
    assert!(
        timeline(&a).current().is_some(),
        "and its timeline recorded"
    );
    press(&mut a, &[Command::Tab(7)]);
    let s = screen(&mut a, &hl);
    assert!(s.contains("recorded after r on a fake"), "{s}");
    // A recording that fails says so in the tab; the dispatch still counts.
    apply(
        &mut a,
        &mut Recorder(Err("cooperative launch refused".into())),
        Action::Command(Command::Dispatch),
    );
    assert_eq!(a.jobs.session.runs.len(), 2);
    // `r` shows the Run tab; the Timeline tab is one key away.
    assert_eq!(a.detail.tab, tabs::Run.id());
    press(&mut a, &[Command::Tab(7)]);
    let s = screen(&mut a, &hl);
    assert!(
        s.contains("The last recording failed: cooperative launch refused"),
        "{s}"
    );
}

#[test]
fn a_click_on_a_lane_puts_the_cursor_on_the_slice_there() {
    use vyrescope::tui::action::Action;
    let (mut a, _) = timeline_app(120, 40);
    let areas = vyrescope::tui::layout::areas(120, 40, &a);
    let content = vyrescope::tui::layout::detail_content(areas.detail);
    // Lane 2 (third lane row), near the right end: step 2's slices.
    let (x, y) = (content.x + content.width - 8, content.y + 2 + 2);
    update(&mut a, Action::Click(x, y));
    assert_eq!(timeline(&a).lane, 2);
    assert_eq!(timeline(&a).cursor().and_then(|s| s.step), Some(2));
    let step = a
        .programs
        .doc
        .as_ref()
        .and_then(|d| d.pipeline.as_ref())
        .map(|p| p.step);
    assert_eq!(step, Some(2), "the clicked slice's step is selected");
    // The tab bar and the header rows are no lanes: the tab stays.
    update(&mut a, Action::Click(content.x + 20, content.y));
    assert_eq!(a.detail.tab, tabs::Timeline.id());
    assert_eq!(timeline(&a).lane, 2);
}

#[test]
fn small_screens_draw_without_panicking() {
    for (w, h) in [(60, 16), (80, 24), (61, 17), (200, 60)] {
        let (mut a, hl) = timeline_app(w, h);
        press(
            &mut a,
            &[
                Command::WgPlus,
                Command::WgPlus,
                Command::Down,
                Command::NextBlock,
            ],
        );
        // Every size draws a whole screen with the timeline's tab in it.
        for keys in [
            &[][..],
            &[Command::Expand, Command::End, Command::PageDown][..],
        ] {
            press(&mut a, keys);
            let s = screen(&mut a, &hl);
            let lines: Vec<&str> = s.lines().collect();
            assert_eq!(lines.len(), usize::from(h), "{w}x{h}:\n{s}");
            // Lines are trimmed at the right; the frame above the status bar spans the width.
            assert!(
                lines.iter().all(|l| l.chars().count() <= usize::from(w)),
                "{w}x{h}:\n{s}"
            );
            let frame = lines[lines.len() - 2];
            assert_eq!(frame.chars().count(), usize::from(w), "{w}x{h}:\n{s}");
            assert!(s.contains("Timeline"), "{w}x{h}:\n{s}");
        }
    }
}

#[test]
fn a_record_of_another_file_is_refused_with_what_it_was_recorded_from() {
    // An older record (no hash): told apart by the file name it names.
    let vadd = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json");
    let e = vyrescope::tui::timeline::from_file(Path::new(H200), std::slice::from_ref(&vadd))
        .expect_err("another Program");
    let text = e.to_string();
    assert!(
        text.contains("reduce_total_normalize.json") && text.contains("vadd_f32.json"),
        "{text}"
    );
    assert!(e.fix.contains("--timeline-out"), "{}", e.fix);
    // A record with the hash of its file's bytes: a changed file is refused, the same
    // bytes under another name are taken.
    let tmp = tempfile::tempdir().expect("temp dir");
    let rec = record_file(tmp.path());
    let copy = tmp.path().join("renamed.json");
    std::fs::copy(pipeline("reduce_total_normalize.json"), &copy).expect("copy");
    assert!(vyrescope::tui::timeline::from_file(&rec, std::slice::from_ref(&copy)).is_ok());
    let mut edited = std::fs::read_to_string(&copy).expect("read");
    edited.push('\n');
    std::fs::write(&copy, edited).expect("write");
    let e = vyrescope::tui::timeline::from_file(&rec, std::slice::from_ref(&copy))
        .expect_err("changed since recorded");
    assert!(e.to_string().contains("its bytes when recorded"), "{e}");
    // The command line: exit non-zero with the reason.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args([
            "tui",
            vadd.to_str().unwrap(),
            "--timeline",
            H200,
            "--keys",
            "",
            "--snapshot",
            "-",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("was made from") && err.contains("Fix:"),
        "{err}"
    );
}
