//! The inspector opens a capture (issue 46 part 2, feature `vyre`, no GPU): a test
//! application records on `vyrescope-reference` (acquired from vyre's registry); the
//! headless inspector (`--keys ... --snapshot -`) lists its dispatches with their launch,
//! bytes and times and the time by Program, sorts by time, opens a dispatch as a Program with
//! its captured inputs, and `r` gives the verdict `vyrescope replay` gives for the same
//! dispatch, including an edited output element. A Program our import refuses is listed with
//! its code and replays on vyre's reference interpreter; damaged captures fail with a `Fix:`.

use std::path::Path;

use vyre_driver::backend::{DispatchConfig, VyreBackend};
use vyre_foundation::ir::{BufferDecl, DataType, Expr, Node, Program as VP};
use vyrescope::vyre::replay::VyreReference;
use vyrescope_capture::{capture_boxed, CaptureOptions};

use crate::support;
use crate::support::capture::{
    edit_output, f32_bytes, json, record_app_on, tmp_capture, u32_bytes, words, xor_program,
};

/// `vyrescope-reference` from vyre's registry, as the test application acquires it.
fn vyrescope_reference() -> Box<dyn VyreBackend> {
    vyrescope::runtime::vyre_device::link();
    vyre_driver::backend::acquire("vyrescope-reference").expect("vyrescope-reference is registered")
}

/// The headless inspector on `dir` after `keys`: exit code, screen, stderr.
fn inspect(dir: &Path, keys: &str) -> (i32, String, String) {
    support::cli::run(&[
        "tui",
        dir.to_str().unwrap(),
        "--keys",
        keys,
        "--snapshot",
        "-",
        "--size",
        "240x60",
    ])
}

/// The verdict words of record `index` in `vyrescope replay DIR --only N`'s line.
fn replay_verdict(dir: &Path, index: u64) -> String {
    let (_, out, err) = support::cli::run(&[
        "replay",
        dir.to_str().unwrap(),
        "--only",
        &index.to_string(),
    ]);
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("#{index} ")))
        .unwrap_or_else(|| panic!("no line for #{index}: {out}{err}"));
    // `#N  call  program  VERDICT...`: the verdict starts at the first of its words.
    let at = ["verified", "DIVERGED", "FAILED", "skipped"]
        .iter()
        .filter_map(|w| line.find(w))
        .min()
        .unwrap_or_else(|| panic!("no verdict in {line}"));
    line[at..].trim_end().to_string()
}

/// The host times of records `0..n`, from the record files.
fn host_times(dir: &Path, n: u64) -> Vec<(u64, u64)> {
    (0..n)
        .map(|i| {
            let rec =
                json(&std::fs::read_to_string(dir.join(format!("records/{i:08}.json"))).unwrap());
            (i, rec["timing"]["host_ns"].as_u64().unwrap())
        })
        .collect()
}

/// The record indices of the dispatch rows on `screen`, top to bottom (rows of the Capture
/// tab start with the index, after the header that names the columns).
fn row_order(screen: &str) -> Vec<u64> {
    let mut seen = false;
    let mut v = Vec::new();
    for l in screen.lines() {
        let l = l.trim_start_matches(['│', ' ', '▸']);
        if l.starts_with("#  Program") {
            seen = true;
            continue;
        }
        if seen {
            match l.split_whitespace().next().and_then(|w| w.parse().ok()) {
                Some(i) => v.push(i),
                None if !v.is_empty() => break,
                None => {}
            }
        }
    }
    v
}

#[test]
fn a_capture_opens_with_its_dispatch_list_and_summary() {
    let (_t, dir) = tmp_capture();
    let n = record_app_on(vyrescope_reference(), &dir, 1 << 30);
    let (code, screen, err) = inspect(&dir, "");
    assert_eq!(code, 0, "{screen}{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The summary: dispatches, distinct Programs, time by Program.
    assert!(screen.contains("Capture"), "{screen}");
    assert!(
        screen.contains(&format!(
            "recorded on vyrescope-reference · {n} dispatches · 5 distinct Programs"
        )),
        "{screen}"
    );
    assert!(screen.contains("time by Program"), "{screen}");
    // The list pane names the dispatches; the first one is open.
    assert!(screen.contains("Dispatches"), "{screen}");
    assert!(screen.contains("#0 dispatch_0"), "{screen}");
    // Record 2: `acc += a` on 256 u32 (two inputs of 1 KiB, one output of 1 KiB) at the
    // application's grid 4,1,1 and the Program's workgroup 64,1,1.
    let row = |name: &str| {
        screen
            .lines()
            .find(|l| l.contains(name) && l.contains("vyrescope-reference  "))
            .unwrap_or_else(|| panic!("no row of {name}: {screen}"))
            .to_string()
    };
    let r2 = row(" dispatch_2 ");
    for want in ["64,1,1", " 4,1,1 ", "2.0 KiB", "1.0 KiB"] {
        assert!(r2.contains(want), "{want} in {r2}");
    }
    // Record 0: 1000 u32 `out = a ^ b`; its grid is the one vyre's binding infers.
    let r0 = row(" dispatch_0 ");
    assert!(
        r0.contains("16,1,1") && r0.contains("7.8 KiB") && r0.contains("3.9 KiB"),
        "{r0}"
    );
    // Every dispatch is listed, in call order.
    assert_eq!(row_order(&screen), (0..n).collect::<Vec<_>>(), "{screen}");
    // The open dispatch is a Program in every view: its IR names the captured buffers.
    assert!(screen.contains("out") && screen.contains("xor"), "{screen}");
}

#[test]
fn s_sorts_the_dispatches_by_host_time() {
    let (_t, dir) = tmp_capture();
    let n = record_app_on(vyrescope_reference(), &dir, 1 << 30);
    let mut want = host_times(&dir, n);
    want.sort_by_key(|&(i, t)| (std::cmp::Reverse(t), i));
    let (code, screen, err) = inspect(&dir, "S");
    assert_eq!(code, 0, "{screen}{err}");
    assert!(
        screen.contains("sorted by host time, longest first"),
        "{screen}"
    );
    assert_eq!(
        row_order(&screen),
        want.iter().map(|&(i, _)| i).collect::<Vec<_>>(),
        "{screen}"
    );
    // Enter on the Capture tab's first row opens the longest dispatch; r replays it.
    let (code, screen, err) = inspect(&dir, "S Tab Tab Enter r");
    assert_eq!(code, 0, "{screen}{err}");
    let first = want[0].0;
    assert!(
        screen.contains(&format!("dispatch #{first} (")) && screen.contains(": verified"),
        "{screen}"
    );
}

#[test]
fn r_gives_the_verdict_replay_gives() {
    let (_t, dir) = tmp_capture();
    record_app_on(vyrescope_reference(), &dir, 1 << 30);
    // An untouched dispatch verifies, in both.
    let (code, screen, err) = inspect(&dir, "r");
    assert_eq!(code, 0, "{screen}{err}");
    let want = replay_verdict(&dir, 0);
    assert_eq!(want, "verified");
    // On `vyrescope-reference` here; on a machine with a GPU, `vyrescope-cuda` in the GPU
    // worker (bit-exact, so the same words).
    assert!(
        ["vyrescope-reference", "vyrescope-cuda"]
            .iter()
            .any(|b| screen.contains(&format!(
                "dispatch #0 (dispatch_0): replayed on {b}: verified"
            ))),
        "{screen}"
    );
    // f32 element 42 of record 1's `y` one ulp up: the inspector names that buffer and
    // element, with the words `replay` prints.
    edit_output(&dir, 1, 0, |b| {
        let w = u32::from_le_bytes(b[168..172].try_into().unwrap()) + 1;
        b[168..172].copy_from_slice(&w.to_le_bytes());
    });
    let want = replay_verdict(&dir, 1);
    assert!(
        want.starts_with("DIVERGED: output 0 `y` element 42 (f32)") && want.ends_with(", 1 ulp"),
        "{want}"
    );
    // Down the list, open it, replay it.
    let (code, screen, err) = inspect(&dir, "S-Tab j Enter r");
    assert_eq!(code, 0, "{screen}{err}");
    assert!(
        screen.contains(&want),
        "inspector lacks `{want}`:\n{screen}"
    );
    // u32 element 517 of record 0's `out`.
    edit_output(&dir, 0, 0, |b| b[517 * 4] ^= 0x10);
    let want = replay_verdict(&dir, 0);
    assert!(
        want.starts_with("DIVERGED: output 0 `out` element 517 (u32)"),
        "{want}"
    );
    let (_, screen, _) = inspect(&dir, "r");
    assert!(
        screen.contains(&want),
        "inspector lacks `{want}`:\n{screen}"
    );
}

#[test]
fn a_dispatch_opens_as_its_program_with_the_captured_inputs() {
    use vyrescope::inputs::{prepare_rooted, FileRoot};
    let (_t, dir) = tmp_capture();
    record_app_on(vyrescope_reference(), &dir, 1 << 30);
    for index in 0..3u64 {
        let program = vyrescope::vyre::replay::dispatches::open_dispatch(&dir, index).unwrap();
        let rec =
            json(&std::fs::read_to_string(dir.join(format!("records/{index:08}.json"))).unwrap());
        let blob = |slot: &serde_json::Value| {
            std::fs::read(dir.join(format!("blobs/{}.bin", slot["hash"].as_str().unwrap())))
                .unwrap()
        };
        let records = dir.join("records");
        let mut run = prepare_rooted(
            &program,
            FileRoot {
                base: &records,
                root: &dir,
            },
            None,
            None,
        )
        .unwrap_or_else(|e| panic!("record {index}: {e:?}"));
        // The inputs are the captured bytes, in vyre's input order.
        let inputs = rec["event"]["inputs"].as_array().unwrap();
        let mut k = 0;
        for b in &run.buffers {
            if k < inputs.len() && b.name != "out" && b.name != "y" {
                assert_eq!(b.data, blob(&inputs[k]), "record {index} buffer {}", b.name);
                k += 1;
            }
        }
        assert_eq!(k, inputs.len(), "record {index}: every input bound");
        // Run on our reference interpreter: the captured outputs come back.
        vyrescope::interp::run(&program, &run.shape, &mut run.buffers).unwrap();
        let out = &rec["event"]["outputs"][0];
        let name = ["out", "y", "acc"][index as usize];
        let got = &run.buffers.iter().find(|b| b.name == name).unwrap().data;
        assert_eq!(*got, blob(out), "record {index}");
    }
}

/// `y[i] = sinh(x[i])` (f32): our import refuses `sinh` (VY002); vyre's reference runs it.
fn sinh_program(n: u32) -> VP {
    VP::wrapped(
        vec![
            BufferDecl::read("x", 0, DataType::F32),
            BufferDecl::output("y", 1, DataType::F32).with_count(n),
        ],
        [64, 1, 1],
        vec![
            Node::let_bind("i", Expr::gid_x()),
            Node::if_then(
                Expr::lt(Expr::var("i"), Expr::buf_len("y")),
                vec![Node::store(
                    "y",
                    Expr::var("i"),
                    Expr::sinh(Expr::load("x", Expr::var("i"))),
                )],
            ),
        ],
    )
}

#[test]
fn a_refused_import_is_listed_with_its_code_and_replays_on_vyre_reference() {
    let (_t, dir) = tmp_capture();
    let backend = capture_boxed(Box::new(VyreReference), &dir, CaptureOptions::default());
    let cfg = DispatchConfig::default();
    backend
        .dispatch(&sinh_program(200), &[f32_bytes(9, 200)], &cfg)
        .unwrap();
    backend
        .dispatch(
            &xor_program(100),
            &[u32_bytes(&words(10, 100)), u32_bytes(&words(11, 100))],
            &cfg,
        )
        .unwrap();
    backend.flush_capture();
    drop(backend);
    let (code, screen, err) = inspect(&dir, "r");
    assert_eq!(code, 0, "{screen}{err}");
    // Listed with the code in the list and in the Capture tab.
    assert!(screen.contains("#0 dispatch_0 VY002"), "{screen}");
    assert!(screen.contains("refused VY002"), "{screen}");
    // The other dispatch opens as usual.
    assert!(screen.contains("#1 dispatch_1"), "{screen}");
    let want = replay_verdict(&dir, 0);
    assert_eq!(want, "verified");
    assert!(
        screen.contains("dispatch #0 (dispatch_0): replayed on vyre-reference: verified"),
        "{screen}"
    );
    // Our backend (`vyrescope-reference`, or `vyrescope-cuda` with a GPU) refused it.
    assert!(
        screen.contains("refused it (VY002") && screen.contains("; replayed on vyre-reference"),
        "{screen}"
    );
}

#[test]
fn damaged_captures_fail_headless_with_a_fix() {
    let (_t, dir) = tmp_capture();
    record_app_on(vyrescope_reference(), &dir, 1 << 30);
    // A record cut short: listed with the reader's reason; the run fails.
    let rec = dir.join("records/00000002.json");
    let text = std::fs::read(&rec).unwrap();
    std::fs::write(&rec, &text[..text.len() / 3]).unwrap();
    let (code, screen, err) = inspect(&dir, "j j r");
    assert_eq!(code, 1, "{screen}{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        screen.contains("record 2:") && screen.contains("ends early"),
        "{screen}"
    );
    assert!(err.contains("ends early") && err.contains("Fix:"), "{err}");
    std::fs::write(&rec, &text).unwrap();
    // Another format version: refused before the screen, with the reader's Fix.
    let m = dir.join("manifest.json");
    let text = std::fs::read_to_string(&m).unwrap();
    std::fs::write(&m, text.replace("\"version\": 1", "\"version\": 7")).unwrap();
    let (code, out, err) = inspect(&dir, "");
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("version 7") && err.contains("Fix:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    std::fs::write(&m, text).unwrap();
    // A capture opens on its own.
    let (code, out, err) = support::cli::run(&[
        "tui",
        dir.to_str().unwrap(),
        "fixtures/programs",
        "--keys",
        "",
        "--snapshot",
        "-",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("one capture at a time"), "{err}");
}

/// `r` with a GPU goes to the GPU worker process: the real `vyrescope gpu-worker` replays the
/// dispatch on `vyrescope-cuda` there. On a GPU machine that is `replay --backend cuda`'s
/// verdict; without one the worker's answer is the registry's refusal with its `Fix:`, never
/// a hang or a dead worker.
#[test]
fn the_gpu_worker_replays_a_dispatch_or_says_why_not() {
    use vyrescope::harness::worker_messages::{JobsClient, ReplayJob};
    let (_t, dir) = tmp_capture();
    record_app_on(vyrescope_reference(), &dir, 1 << 30);
    let mut worker = vyrescope::runtime::GpuWorker::with_exe(env!("CARGO_BIN_EXE_vyrescope"));
    let job = ReplayJob {
        capture: dir.clone(),
        index: 1,
    };
    let ask = |w: &mut vyrescope::runtime::GpuWorker| {
        w.replay_capture(&job)
            .map_err(vyrescope::util::Problem::from)
    };
    let first = ask(&mut worker);
    match &first {
        Ok(line) => {
            use vyrescope::harness::replay_record::Verdict;
            assert_eq!(line.verdict, Verdict::Verified, "{line:?}");
            assert_eq!(
                line.replayed_on.as_deref(),
                Some("vyrescope-cuda"),
                "{line:?}"
            );
        }
        Err(p) => {
            assert!(p.message.contains("vyrescope-cuda"), "{p}");
            assert!(!p.fix.is_empty(), "{p}");
        }
    }
    // The worker keeps serving: asked again, it answers the same.
    let second = ask(&mut worker);
    assert_eq!(
        first.map(|l| l.verdict).map_err(|p| p.message),
        second.map(|l| l.verdict).map_err(|p| p.message)
    );
}
