//! Reference runs of pipelines: every fixture's final buffers against a host computation from
//! its (random) initial contents, step shapes as the precedence rules say, and random chains
//! of elementwise steps with random data, workgroup sizes and element counts.

use std::path::{Path, PathBuf};

use vyrescope::inputs::pipeline::{prepare_pipeline, PreparedPipeline};
use vyrescope::interp::{self, pipeline::run_pipeline};
use vyrescope::ir::{load_pipeline, parse_pipeline, Pipeline};

use vyrescope::gen::Rng;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pipelines")
        .join(name)
}

/// Loads, prepares and runs a fixture; returns (pipeline, initial, final).
fn run_fixture(name: &str) -> (Pipeline, PreparedPipeline, PreparedPipeline) {
    let path = fixture(name);
    let p = load_pipeline(&path).unwrap();
    let initial = prepare_pipeline(&p, path.parent().unwrap()).unwrap();
    let mut done = initial.clone();
    let runs = run_pipeline(&p, &mut done, &interp::Options::default()).unwrap();
    assert_eq!(runs.len(), p.steps.len());
    assert!(runs.iter().all(|r| r.stats.invocations > 0));
    (p, initial, done)
}

fn f32s(pp: &PreparedPipeline, name: &str) -> Vec<f32> {
    let b = pp.buffers.iter().find(|b| b.name == name).unwrap();
    b.data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn assert_bits(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{what}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn chain_computes_two_x_plus_one() {
    let (_, init, done) = run_fixture("chain.json");
    let x = f32s(&init, "x");
    assert!(x.iter().any(|&v| v != 0.0), "random input expected");
    let y: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    assert_bits(&f32s(&done, "y"), &y, "y");
    let out: Vec<f32> = y.iter().map(|v| v + 1.0).collect();
    assert_bits(&f32s(&done, "out"), &out, "out");
    assert_bits(&f32s(&done, "x"), &x, "x unchanged");
}

#[test]
fn workgroup_rotate_reads_the_neighbour_inside_the_workgroup() {
    let (_, init, done) = run_fixture("workgroup_rotate.json");
    let y: Vec<f32> = f32s(&init, "x").iter().map(|v| v * 2.0).collect();
    let want: Vec<f32> = (0..y.len())
        .map(|i| {
            let j = i / 256 * 256 + (i % 256 + 1) % 256;
            y[i] + y[j]
        })
        .collect();
    assert_bits(&f32s(&done, "out"), &want, "out");
}

#[test]
fn reduce_normalize_divides_by_the_total() {
    let (p, init, done) = run_fixture("reduce_normalize.json");
    let x = f32s(&init, "x");
    // The Program's tree order, per workgroup of 256.
    let partial: Vec<f32> = x
        .chunks(256)
        .map(|c| {
            let mut t = c.to_vec();
            let mut stride = 128;
            while stride > 0 {
                for l in 0..stride {
                    t[l] += t[l + stride];
                }
                stride /= 2;
            }
            t[0]
        })
        .collect();
    assert_bits(&f32s(&done, "partial"), &partial, "partial");
    let total = partial.iter().fold(0.0f32, |a, &b| a + b);
    let want: Vec<f32> = x.iter().map(|v| v / total).collect();
    assert_bits(&f32s(&done, "out"), &want, "out");
    // Step 0 takes its grid from `elements`, not from the short partial buffer it writes.
    let prepared = prepare_pipeline(&p, fixture("").as_path()).unwrap();
    assert_eq!(prepared.steps[0].shape.grid, [16, 1, 1]);
}

#[test]
fn independent_pair_and_its_override() {
    let (_, init, done) = run_fixture("independent_pair.json");
    let b: Vec<f32> = f32s(&init, "a").iter().map(|v| v * 2.0).collect();
    assert_bits(&f32s(&done, "b"), &b, "b");
    let d = &done.buffers.iter().find(|b| b.name == "d").unwrap().data;
    for (i, c) in d.chunks_exact(4).enumerate() {
        let i = i as u32;
        assert_eq!(u32::from_le_bytes(c.try_into().unwrap()), i.wrapping_mul(i));
    }
    // The inline Program says 64 threads, the step overrides to 128: 2000 / 128 -> 16.
    assert_eq!(done.steps[1].shape.workgroup_size, [128, 1, 1]);
    assert_eq!(done.steps[1].shape.grid, [16, 1, 1]);
}

#[test]
fn transient_intermediate_is_carried_between_steps() {
    let (p, init, done) = run_fixture("transient_intermediate.json");
    assert!(p.buffer("t").unwrap().transient);
    assert!(
        done.buffers
            .iter()
            .find(|b| b.name == "t")
            .unwrap()
            .transient
    );
    let out: Vec<f32> = f32s(&init, "x").iter().map(|v| v * 2.0 + 1.0).collect();
    assert_bits(&f32s(&done, "out"), &out, "out");
    let out2: Vec<f32> = out.iter().map(|v| v * 2.0).collect();
    assert_bits(&f32s(&done, "out2"), &out2, "out2");
}

/// An inline elementwise Program `dst[i] = src[i] OP c` with workgroup size `wg`.
fn elementwise(name: &str, op: &str, c: f32, wg: u32) -> String {
    format!(
        r#"{{"format": 1, "name": "{name}", "workgroup_size": [{wg}, 1, 1],
          "buffers": [{{"name": "src", "binding": 0, "access": "read", "type": "f32"}},
                      {{"name": "dst", "binding": 1, "access": "write", "type": "f32"}}],
          "body": [{{"let": "i", "value": {{"gid": "x"}}}},
                   {{"if": {{"lt": ["i", {{"len": "dst"}}]}}, "then": [
                     {{"store": "dst", "index": "i",
                       "value": {{"{op}": [{{"load": "src", "index": "i"}}, {{"f32": {c:?}}}]}}}}]}}]}}"#
    )
}

#[test]
fn random_elementwise_chains_match_the_host() {
    for seed in 0..24u64 {
        let mut rng = Rng::new(seed * 7919 + 1);
        let n = 1 + rng.below(700);
        let steps = 1 + rng.below(4);
        let data: Vec<f32> = (0..n)
            .map(|_| (rng.next_u64() >> 40) as f32 / 65536.0 - 100.0)
            .collect();
        let data_json: Vec<String> = data.iter().map(|v| format!("{v:?}")).collect();
        let mut buffers = vec![format!(
            r#""b0": {{"type": "f32", "data": [{}]}}"#,
            data_json.join(", ")
        )];
        let mut step_json = Vec::new();
        let mut want = data.clone();
        let mut wants = vec![want.clone()];
        for k in 0..steps {
            let op = rng.pick(&["add", "mul", "sub"]);
            let c = (rng.below(2000) as f32 - 1000.0) / 8.0;
            let wg = rng.pick(&[1u32, 32, 64, 100, 256]);
            buffers.push(format!(
                r#""b{}": {{"type": "f32", "len": {n}, "fill": "random", "seed": {k}}}"#,
                k + 1
            ));
            let mut extra = String::new();
            if rng.chance(1, 2) {
                extra.push_str(&format!(
                    r#", "workgroup_size": [{}, 1, 1]"#,
                    rng.pick(&[16u32, 128])
                ));
            }
            if rng.chance(1, 3) {
                // More invocations than elements: the bounds check keeps them out.
                extra.push_str(&format!(r#", "elements": {}"#, n + rng.below(300)));
            }
            step_json.push(format!(
                r#"{{"program": {}, "bind": {{"src": "b{k}", "dst": "b{}"}}{extra}}}"#,
                elementwise(&format!("s{k}"), op, c, wg),
                k + 1
            ));
            want = want
                .iter()
                .map(|&v| match op {
                    "add" => v + c,
                    "mul" => v * c,
                    _ => v - c,
                })
                .collect();
            wants.push(want.clone());
        }
        let text = format!(
            r#"{{"format": 1, "pipeline": "rand{seed}", "buffers": {{{}}}, "steps": [{}]}}"#,
            buffers.join(", "),
            step_json.join(", ")
        );
        let p = parse_pipeline(&text, "random.json", Path::new(".")).unwrap();
        let diags = vyrescope::validate::pipeline::validate_pipeline(&p);
        assert!(
            vyrescope::validate::is_valid(&diags),
            "seed {seed}: {diags:#?}"
        );
        let mut pp = prepare_pipeline(&p, Path::new(".")).unwrap();
        run_pipeline(&p, &mut pp, &interp::Options::default()).unwrap();
        for (k, w) in wants.iter().enumerate() {
            assert_bits(
                &f32s(&pp, &format!("b{k}")),
                w,
                &format!("seed {seed} b{k}"),
            );
        }
    }
}

#[test]
fn step_grid_precedence() {
    let prog = |run: &str| {
        format!(
            r#"{{"format": 1, "name": "k", "workgroup_size": [32, 1, 1],
              "buffers": [{{"name": "a", "binding": 0, "access": "read", "type": "u32"}},
                          {{"name": "o", "binding": 1, "access": "read_write", "type": "u32"}}],
              "body": [] {run}}}"#
        )
    };
    let pipe = |step_extra: &str, run: &str| {
        format!(
            r#"{{"format": 1, "pipeline": "g", "buffers": {{
                 "a": {{"type": "u32", "len": 1000, "fill": "iota"}},
                 "o": {{"type": "u32", "len": 100, "fill": "zeros"}}}},
               "steps": [{{"program": {}, "bind": {{"a": "a", "o": "o"}} {step_extra}}}]}}"#,
            prog(run)
        )
    };
    let grid = |step_extra: &str, run: &str| {
        let p = parse_pipeline(&pipe(step_extra, run), "g.json", Path::new(".")).unwrap();
        prepare_pipeline(&p, Path::new(".")).unwrap().steps[0].shape
    };
    // Longest written buffer (o: 100, not the longer read-only a): ceil(100 / 32) = 4.
    assert_eq!(grid("", "").grid, [4, 1, 1]);
    assert_eq!(grid("", r#", "run": {"elements": 320}"#).grid, [10, 1, 1]);
    assert_eq!(grid("", r#", "run": {"grid": [3, 2, 1]}"#).grid, [3, 2, 1]);
    assert_eq!(
        grid(r#", "elements": 33"#, r#", "run": {"grid": [3, 2, 1]}"#).grid,
        [2, 1, 1]
    );
    assert_eq!(
        grid(r#", "grid": [7, 1, 1]"#, r#", "run": {"elements": 5}"#).grid,
        [7, 1, 1]
    );
    let s = grid(r#", "workgroup_size": [64, 1, 1]"#, "");
    assert_eq!((s.workgroup_size, s.grid), ([64, 1, 1], [2, 1, 1]));
}

/// Relative closeness for results that go through `exp` and float sums in a different order.
fn assert_close(got: &[f32], want: &[f32], rel: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let tol = rel * w.abs().max(f32::MIN_POSITIVE);
        assert!((g - w).abs() <= tol, "{what}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn softmax_is_exp_over_the_sum() {
    let (_, init, done) = run_fixture("softmax.json");
    let x = f32s(&init, "x");
    assert_eq!(x.len(), 1 << 18);
    assert!(x.iter().any(|&v| v != 0.0), "random input expected");
    // The maximum is exact in any order.
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f64> = x.iter().map(|&v| f64::from(v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    let want: Vec<f32> = e.iter().map(|&v| (v / s) as f32).collect();
    let y = f32s(&done, "y");
    assert_close(&y, &want, 1e-4, "y");
    let total: f64 = y.iter().map(|&v| f64::from(v)).sum();
    assert!((total - 1.0).abs() < 1e-3, "softmax sums to {total}");
}

#[test]
fn reduce_normalize_at_2_to_the_20_divides_by_the_total() {
    let (_, init, done) = run_fixture("reduce_normalize_2p20.json");
    let x = f32s(&init, "x");
    assert_eq!(x.len(), 1 << 20);
    assert!(x.iter().any(|&v| v != 0.0), "random input expected");
    let total: f64 = x.iter().map(|&v| f64::from(v)).sum();
    let want: Vec<f32> = x.iter().map(|&v| (f64::from(v) / total) as f32).collect();
    assert_close(&f32s(&done, "out"), &want, 1e-4, "out");
}
