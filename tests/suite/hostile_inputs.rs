//! Inputs built to exhaust a command (issue 24): nested constant loops, long pipelines,
//! hostile caches and paths. Each test reproduces one finding; what it asserts is a count
//! (copies, pairs analysed, bytes) or an error with a `Fix:`, never a speed. Every test that
//! writes works in its own temp folder with a temp HOME.

use std::path::{Path, PathBuf};
use std::process::Command;

use vyrescope::emit::{emit, EmitOptions};
use vyrescope::inputs::pipeline::pipeline_shapes;
use vyrescope::ir::parse_program;
use vyrescope::megakernel::cache::{plan_cached, plan_key, PlanCache};
use vyrescope::megakernel::deps::analyse;
use vyrescope::megakernel::plan::{plan, CacheStatus, PlanOptions};
use vyrescope::megakernel::DepKind;

/// `let n = 4` and `depth` nested `loop iK from 0 to n` around one store.
fn nested_constant_loops(depth: usize) -> String {
    let mut body = r#"{"store": "a", "index": {"gid": "x"}, "value": "i0"}"#.to_string();
    for k in 0..depth {
        body = format!(r#"{{"loop": "i{k}", "from": 0, "to": "n", "body": [{body}]}}"#);
    }
    format!(
        r#"{{"format": 1, "name": "nest", "workgroup_size": [64, 1, 1],
            "buffers": [{{"name": "a", "binding": 0, "access": "read_write", "type": "u32"}}],
            "body": [{{"let": "n", "value": 4}}, {body}]}}"#
    )
}

#[test]
fn nested_loops_with_constant_bounds_share_one_unroll_budget() {
    for depth in [2usize, 8, 12] {
        let p = parse_program(&nested_constant_loops(depth), "nest.json").unwrap();
        let k = emit(&p, &EmitOptions::for_program(&p)).unwrap();
        let stores = k.ptx.matches("st.global").count();
        // Two levels of 4 fit the budget (16 copies); deeper nests unroll only the innermost
        // levels that fit and keep the rest as loops. Before, every level unrolled: 4^depth.
        assert!(stores >= 1, "depth {depth}: no store");
        assert!(
            stores <= vyrescope::emit::unroll::MAX_UNROLLED_NODES,
            "depth {depth}: {stores} stores"
        );
        if depth == 2 {
            assert_eq!(stores, 16, "depth 2 unrolls fully");
        }
        assert!(
            k.ptx.len() < 200_000,
            "depth {depth}: {} bytes",
            k.ptx.len()
        );
    }
}

const ADD1: &str = r#"{"format": 1, "name": "add1", "workgroup_size": [64, 1, 1],
  "buffers": [{"name": "src", "binding": 0, "access": "read", "type": "f32"},
              {"name": "dst", "binding": 1, "access": "write", "type": "f32"}],
  "body": [{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "i", "value": {"add": [{"load": "src", "index": "i"}, 1.0]}}]}]}"#;

/// A pipeline file of `steps` `add1` steps in `dir`: a chain `b0 -> b1 -> ...` of `len`
/// elements each (`in_place`: every step reads and writes `b0` instead, through `b1`).
fn chain_pipeline(dir: &Path, steps: usize, len: u64, in_place: bool) -> PathBuf {
    std::fs::write(dir.join("add1.json"), ADD1).unwrap();
    let mut buffers = Vec::new();
    let nbuf = if in_place { 2 } else { steps + 1 };
    for k in 0..nbuf {
        let fill = if k == 0 {
            format!(r#""fill": "random", "seed": {}"#, 7 + k)
        } else {
            r#""fill": "zeros""#.to_string()
        };
        buffers.push(format!(
            r#""b{k}": {{"type": "f32", "len": {len}, {fill}}}"#
        ));
    }
    let step_list: Vec<String> = (0..steps)
        .map(|i| {
            let (s, d) = if in_place {
                // Alternate directions, so that every step writes a buffer every other reads.
                if i % 2 == 0 {
                    (0, 1)
                } else {
                    (1, 0)
                }
            } else {
                (i, i + 1)
            };
            format!(r#"{{"program": "add1.json", "bind": {{"src": "b{s}", "dst": "b{d}"}}}}"#)
        })
        .collect();
    let text = format!(
        r#"{{"format": 1, "pipeline": "long", "buffers": {{{}}}, "steps": [{}]}}"#,
        buffers.join(", "),
        step_list.join(", ")
    );
    let path = dir.join("long.pipeline.json");
    std::fs::write(&path, text).unwrap();
    path
}

fn load_pipeline(path: &Path) -> vyrescope::ir::Pipeline {
    let loaded = vyrescope::validate::pipeline::load_pipeline(path);
    assert!(
        vyrescope::validate::is_valid(&loaded.diagnostics),
        "{:?}",
        loaded.diagnostics.first()
    );
    loaded.pipeline.expect("pipeline")
}

fn h200() -> PlanOptions {
    PlanOptions::new(
        vyrescope::occupancy::profiles::bundled("h200")
            .unwrap()
            .unwrap(),
    )
}

#[test]
fn a_ten_thousand_step_chain_compares_one_pair_per_step_and_plans() {
    let t = tempfile::tempdir().unwrap();
    let n = 10_000;
    let path = chain_pipeline(t.path(), n, 256, false);
    let p = load_pipeline(&path);
    let shapes = pipeline_shapes(&p, t.path()).unwrap();
    assert_eq!(shapes.len(), n);
    // Each step shares a written buffer with its neighbours only: n - 1 pairs compared,
    // where every pair (n^2 / 2 = 50 million) was compared before.
    let deps = analyse(&p, &shapes).unwrap();
    assert_eq!(deps.pairs.len(), n - 1);
    for d in &deps.pairs {
        assert_eq!(d.to, d.from + 1, "{d:?}");
        assert_eq!(d.kind, DepKind::Invocation, "{d:?}");
    }
    assert!(deps.get(0, 2).is_none() && deps.kind(0, 2) == DepKind::None);
    let plan = plan(&p, &shapes, &h200()).unwrap();
    let covered: usize = plan.groups.iter().map(|g| g.steps.len()).sum();
    assert_eq!(covered, n);
    assert_eq!(
        plan.grid_barriers, 0,
        "an elementwise chain needs no grid barrier"
    );
    assert_eq!(plan.dependences.len(), n - 1);
}

#[test]
fn too_many_steps_writing_one_buffer_is_an_error_with_a_fix() {
    let t = tempfile::tempdir().unwrap();
    // 1,001 steps on two buffers: every pair shares a written buffer (500,500 pairs).
    let path = chain_pipeline(t.path(), 1_001, 64, true);
    let p = load_pipeline(&path);
    let shapes = pipeline_shapes(&p, t.path()).unwrap();
    let e = analyse(&p, &shapes).unwrap_err().to_string();
    assert!(e.contains("more step pairs to compare"), "{e}");
    assert!(e.contains("Fix: "), "{e}");
    // A shorter in-place chain is compared pair by pair and plans.
    let path = chain_pipeline(t.path(), 40, 64, true);
    let p = load_pipeline(&path);
    let shapes = pipeline_shapes(&p, t.path()).unwrap();
    assert_eq!(analyse(&p, &shapes).unwrap().pairs.len(), 40 * 39 / 2);
    plan(&p, &shapes, &h200()).unwrap();
}

#[test]
fn plan_does_not_fill_the_pipeline_buffers() {
    let t = tempfile::tempdir().unwrap();
    // 4 buffers of 256 Mi f32 (4 GiB of random contents), planned in 1 GiB of address
    // space: only possible when the contents are never built.
    let path = chain_pipeline(t.path(), 3, 256 << 20, false);
    let script = format!(
        "ulimit -v 1048576; exec {} plan --no-cache {}",
        env!("CARGO_BIN_EXE_vyrescope"),
        path.display()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("HOME", t.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("long"), "{stdout}");
}

/// Item 11 (the inspector's half): opening and listing a pipeline plans it from shapes; its
/// buffers' contents are built only when `r` runs it. The same 4 GiB of buffers in 1 GiB of
/// address space: the replay opens the pipeline, checks the list and plans.
#[test]
fn the_inspector_lists_and_plans_a_pipeline_without_filling_its_buffers() {
    let t = tempfile::tempdir().unwrap();
    let path = chain_pipeline(t.path(), 3, 256 << 20, false);
    let script = format!(
        "ulimit -v 1048576; exec {} tui {} --device h200 --keys 7 --size 120x40",
        env!("CARGO_BIN_EXE_vyrescope"),
        path.display()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("HOME", t.path())
        .env("VYRESCOPE_CONFIG", "/nonexistent")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("IR step 1/3"), "{stdout}");
    assert!(
        stdout.contains("long on NVIDIA H200"),
        "the Plan tab:\n{stdout}"
    );
}

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Runs `f` on a thread and fails the test if it does not finish in `secs` (a blocked read
/// of a FIFO must fail the test, not hang it).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .expect("blocked: did not finish in time")
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// The stencil ping-pong pipeline (grid dependences), its shapes and H200 options.
fn stencil() -> (
    vyrescope::ir::Pipeline,
    Vec<vyrescope::inputs::LaunchShape>,
    PlanOptions,
) {
    let path = fixture("fixtures/pipelines/stencil_pingpong.json");
    let p = load_pipeline(&path);
    let shapes = pipeline_shapes(&p, path.parent().unwrap()).unwrap();
    // Fused with its barriers (the cost model runs the chain as a recomputed pass, whose
    // cache check `megakernel_halo` covers).
    let opts = PlanOptions {
        decide: vyrescope::megakernel::plan::Decide::Fuse,
        ..h200()
    };
    (p, shapes, opts)
}

#[test]
fn an_edited_plan_cache_entry_is_never_used() {
    let t = tempfile::tempdir().unwrap();
    let cache = PlanCache::at(t.path().join("plan"));
    let (p, shapes, opts) = stencil();
    let first = plan_cached(&p, &shapes, &opts, Some(&cache)).unwrap();
    assert!(first.plan.grid_barriers >= 1, "{:?}", first.plan);
    assert_eq!(first.plan.cache, CacheStatus::Miss);
    assert_eq!(
        plan_cached(&p, &shapes, &opts, Some(&cache))
            .unwrap()
            .plan
            .cache,
        CacheStatus::Hit
    );
    let file = cache.path(plan_key(&p, &shapes, &opts));
    // Drop every barrier: 0 grid barriers where the stencil needs them.
    let mut entry: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    for g in entry["plan"]["groups"].as_array_mut().unwrap() {
        for b in g["barriers"].as_array_mut().unwrap() {
            b["kind"] = "invocation".into();
        }
        g["kind"] = "launch".into();
    }
    entry["plan"]["grid_barriers"] = 0.into();
    std::fs::write(&file, serde_json::to_vec(&entry).unwrap()).unwrap();
    let again = plan_cached(&p, &shapes, &opts, Some(&cache)).unwrap();
    assert_eq!(
        again.plan.cache,
        CacheStatus::Miss,
        "the edited entry was used"
    );
    assert_eq!(again.plan.grid_barriers, first.plan.grid_barriers);
    let w = again.warning.expect("a warning about the entry");
    assert!(w.contains("disagrees") && w.contains("Fix: "), "{w}");
    // The rewritten entry is good again.
    let last = plan_cached(&p, &shapes, &opts, Some(&cache)).unwrap();
    assert_eq!(last.plan.cache, CacheStatus::Hit);
    assert_eq!(last.plan.groups, first.plan.groups);
}

#[cfg(unix)]
#[test]
fn fifo_and_device_plan_cache_entries_do_not_block_or_fill_memory() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("plan");
    std::fs::create_dir_all(&dir).unwrap();
    let cache = PlanCache::at(&dir);
    let (p, shapes, opts) = stencil();
    let file = cache.path(plan_key(&p, &shapes, &opts));
    for kind in ["fifo", "zero"] {
        let _ = std::fs::remove_file(&file);
        if kind == "fifo" {
            mkfifo(&file);
        } else {
            std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
        }
        let (p, shapes, opts, cache) = (p.clone(), shapes.clone(), opts.clone(), cache.clone());
        let got = within(60, move || {
            plan_cached(&p, &shapes, &opts, Some(&cache)).unwrap()
        });
        assert_eq!(got.plan.cache, CacheStatus::Miss, "{kind}");
        let w = got.warning.expect("a warning");
        assert!(
            // Reading refuses it; storing then refuses to replace it: either is said.
            (w.contains("not a regular file") || w.contains("refusing to replace"))
                && w.contains("Fix: "),
            "{kind}: {w}"
        );
    }
}

#[cfg(unix)]
#[test]
fn fifo_and_device_tune_cache_entries_are_errors_not_hangs() {
    use vyrescope::occupancy::tune::cache::{TuneCache, TuneKey};
    let t = tempfile::tempdir().unwrap();
    let cache = TuneCache::at(t.path());
    let key = TuneKey {
        program_hash: 7,
        device: "NVIDIA H200".into(),
        driver: 13000,
    };
    let file = cache.path(&key);
    mkfifo(&file);
    let c = cache.clone();
    let k = key.clone();
    let e = within(60, move || c.load(&k)).unwrap_err().to_string();
    assert!(
        e.contains("not a regular file") && e.contains("Fix: "),
        "{e}"
    );
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
    let e = cache.load(&key).unwrap_err().to_string();
    assert!(e.contains("not a regular file"), "{e}");
    std::fs::remove_file(&file).unwrap();
    // An entry with a row no tuning run writes (a 4096-thread workgroup) is a miss.
    std::fs::write(
        &file,
        r#"{"program": "p", "device": "NVIDIA H200", "driver": 13000,
            "default_workgroup": [256, 1, 1], "repeat": 3, "from_cache": false,
            "rows": [{"workgroup": [4096, 1, 1], "median_ms": 0.1, "occupancy_pct": 50.0,
                      "speedup_vs_default": 1.0, "status": {"kind": "ok"}}]}"#,
    )
    .unwrap();
    assert_eq!(cache.load(&key).unwrap(), None);
}

fn cli(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .env("XDG_CONFIG_HOME", cwd.join("config"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `a[i] += 1` over a `file` input of 4 seeded u32s named `data` relative to the Program.
fn program_with_file_input(dir: &Path, data: &str) {
    let values: Vec<u8> = [3u32, 141, 59, 2653]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    std::fs::write(dir.join("a.bin"), values).unwrap();
    std::fs::write(
        dir.join("prog.json"),
        format!(
            r#"{{"format": 1, "name": "inc", "workgroup_size": [4, 1, 1],
                "buffers": [{{"name": "a", "binding": 0, "access": "read_write", "type": "u32"}}],
                "body": [{{"let": "i", "value": {{"gid": "x"}}}},
                         {{"if": {{"lt": ["i", {{"len": "a"}}]}}, "then": [
                           {{"store": "a", "index": "i", "value": {{"add": [{{"load": "a", "index": "i"}}, 1]}}}}]}}],
                "run": {{"elements": 4, "inputs": {{"a": {{"file": "{data}"}}}}}}}}"#
        ),
    )
    .unwrap();
}

#[test]
fn a_program_named_without_a_folder_reads_its_file_inputs() {
    let t = tempfile::tempdir().unwrap();
    program_with_file_input(t.path(), "a.bin");
    for name in ["prog.json", "./prog.json"] {
        let (code, out, err) = cli(&["check", name], t.path());
        assert_eq!(code, 0, "check {name}: {out}{err}");
        assert!(!err.contains("cannot resolve"), "{err}");
        let (code, out, err) = cli(&["run", name, "--json"], t.path());
        assert_eq!(code, 0, "run {name}: {out}{err}");
    }
}

#[cfg(unix)]
#[test]
fn a_step_program_linked_from_outside_the_pipeline_folder_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let inside = t.path().join("pipe");
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::write(t.path().join("add1.json"), ADD1).unwrap();
    std::os::unix::fs::symlink(t.path().join("add1.json"), inside.join("add1.json")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", inside.join("passwd.json")).unwrap();
    for prog in ["add1.json", "passwd.json"] {
        let text = format!(
            r#"{{"format": 1, "pipeline": "p",
                "buffers": {{"x": {{"type": "f32", "len": 64, "fill": "random", "seed": 3}},
                             "y": {{"type": "f32", "len": 64, "fill": "zeros"}}}},
                "steps": [{{"program": "{prog}", "bind": {{"src": "x", "dst": "y"}}}}]}}"#
        );
        let path = inside.join("p.json");
        std::fs::write(&path, text).unwrap();
        let e = vyrescope::ir::load_pipeline(&path).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("outside the allowed folder"), "{prog}: {msg}");
        assert!(!e.fix.is_empty());
    }
    // The same Program copied into the folder loads.
    std::fs::remove_file(inside.join("add1.json")).unwrap();
    std::fs::write(inside.join("add1.json"), ADD1).unwrap();
    let text = std::fs::read_to_string(inside.join("p.json"))
        .unwrap()
        .replace("passwd.json", "add1.json");
    std::fs::write(inside.join("p.json"), text).unwrap();
    vyrescope::ir::load_pipeline(&inside.join("p.json")).unwrap();
}

#[test]
fn a_pipelines_fuel_is_one_budget_for_all_its_steps() {
    let t = tempfile::tempdir().unwrap();
    let path = chain_pipeline(t.path(), 3, 1000, false);
    let p = load_pipeline(&path);
    let run = |fuel: u64| {
        let mut prepared = vyrescope::inputs::pipeline::prepare_pipeline(&p, t.path()).unwrap();
        let opts = vyrescope::interp::Options {
            fuel,
            ..vyrescope::interp::Options::default()
        };
        vyrescope::interp::pipeline::run_pipeline(&p, &mut prepared, &opts)
    };
    let steps = run(vyrescope::interp::DEFAULT_FUEL).unwrap();
    let per_step = steps[0].stats.fuel_used;
    assert!(per_step > 0);
    let total: u64 = steps.iter().map(|s| s.stats.fuel_used).sum();
    // Enough for two and a half steps: each step alone fits, all three do not.
    let e = run(total - per_step / 2).unwrap_err();
    assert_eq!(e.code, "I003", "{e:?}");
    assert!(e.message.starts_with("steps[2]"), "{}", e.message);
    assert!(e.message.contains("one budget"), "{}", e.message);
    run(total).unwrap();
}

#[test]
fn run_pipeline_honours_root_for_file_contents() {
    let t = tempfile::tempdir().unwrap();
    let pipe = t.path().join("pipe");
    let data = t.path().join("data");
    std::fs::create_dir_all(&pipe).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(pipe.join("add1.json"), ADD1).unwrap();
    let xs: Vec<u8> = (0..64u32)
        .flat_map(|i| ((i * 37 % 11) as f32).to_le_bytes())
        .collect();
    std::fs::write(data.join("x.bin"), xs).unwrap();
    std::fs::write(
        pipe.join("p.json"),
        r#"{"format": 1, "pipeline": "p",
            "buffers": {"x": {"type": "f32", "len": 64, "file": "../data/x.bin"},
                        "y": {"type": "f32", "len": 64, "fill": "zeros"}},
            "steps": [{"program": "add1.json", "bind": {"src": "x", "dst": "y"}}]}"#,
    )
    .unwrap();
    let p = pipe.join("p.json");
    let (code, _, err) = cli(&["run", p.to_str().unwrap()], t.path());
    assert_ne!(code, 0, "a file outside the folder without --root");
    assert!(err.contains("--root"), "{err}");
    let root = t.path().to_str().unwrap();
    let (code, out, err) = cli(&["run", p.to_str().unwrap(), "--root", root], t.path());
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn pipeline_check_refuses_a_grid_that_run_and_plan_refuse() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("add1.json"), ADD1).unwrap();
    let path = t.path().join("p.json");
    std::fs::write(
        &path,
        r#"{"format": 1, "pipeline": "p",
            "buffers": {"x": {"type": "f32", "len": 64, "fill": "random", "seed": 3},
                        "y": {"type": "f32", "len": 64, "fill": "zeros"}},
            "steps": [{"program": "add1.json", "bind": {"src": "x", "dst": "y"},
                       "grid": [2147483647, 65535, 65535]}]}"#,
    )
    .unwrap();
    let loaded = vyrescope::validate::pipeline::load_pipeline(&path);
    let d = loaded
        .diagnostics
        .iter()
        .find(|d| d.code == "V106")
        .expect("V106");
    assert!(d.message.contains("global ids are u32"), "{}", d.message);
    let (code, out, err) = cli(&["check", "p.json"], t.path());
    assert_ne!(code, 0, "{out}{err}");
    let all = format!("{out}{err}");
    assert!(all.contains("V106"), "{all}");
}

#[test]
fn writing_the_output_over_the_input_is_refused() {
    let t = tempfile::tempdir().unwrap();
    program_with_file_input(t.path(), "a.bin");
    let before = std::fs::read(t.path().join("prog.json")).unwrap();
    for args in [
        vec!["emit", "prog.json", "-o", "prog.json"],
        vec!["emit", "prog.json", "-o", "./prog.json"],
        vec!["tui", "prog.json", "--keys", "", "--snapshot", "prog.json"],
    ] {
        let (code, _, err) = cli(&args, t.path());
        assert_ne!(code, 0, "{args:?}");
        assert!(
            err.contains("is the input file") && err.contains("Fix: "),
            "{args:?}: {err}"
        );
        assert_eq!(
            std::fs::read(t.path().join("prog.json")).unwrap(),
            before,
            "{args:?}"
        );
    }
    let (code, _, err) = cli(&["emit", "prog.json", "-o", "out.ptx"], t.path());
    assert_eq!(code, 0, "{err}");
}
