//! Reference interpreter throughput on million-element elementwise Programs.
//!
//! Throughput is reported in "elements" = IR node evaluations (statements + expressions,
//! summed over invocations, as counted by `InterpStats::node_evals`), so criterion's
//! `elem/s` figure is node evaluations per second. Run: `cargo bench --bench interp`.
//! Set `VYRESCOPE_BENCH_THREADS=1` to measure one core.

use std::path::Path;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use vyrescope::inputs::prepare;
use vyrescope::interp;
use vyrescope::ir::parse_program;

const ELEMENTS: u32 = 1 << 20;

/// (name, buffers, body) of the benchmarked Programs.
fn programs() -> Vec<(&'static str, &'static str, &'static str)> {
    vec![
        (
            "vadd_f32",
            r#"{"name": "a", "binding": 0, "access": "read", "type": "f32"},
               {"name": "b", "binding": 1, "access": "read", "type": "f32"},
               {"name": "c", "binding": 2, "access": "read_write", "type": "f32"}"#,
            r#"{"let": "i", "value": {"gid": "x"}},
               {"if": {"lt": ["i", {"len": "c"}]}, "then": [
                 {"store": "c", "index": "i",
                  "value": {"add": [{"load": "a", "index": "i"}, {"load": "b", "index": "i"}]}}]}"#,
        ),
        (
            "saxpy_poly_f32",
            r#"{"name": "a", "binding": 0, "access": "read", "type": "f32"},
               {"name": "b", "binding": 1, "access": "read", "type": "f32"},
               {"name": "c", "binding": 2, "access": "read_write", "type": "f32"}"#,
            r#"{"let": "i", "value": {"gid": "x"}},
               {"if": {"ge": ["i", {"len": "c"}]}, "then": [{"return": {}}]},
               {"let": "x", "value": {"load": "a", "index": "i"}},
               {"let": "y", "value": {"fma": [2.5, "x", {"load": "b", "index": "i"}]}},
               {"let": "z", "value": {"add": [{"mul": ["y", "y"]}, {"mul": [0.5, "x"]}]}},
               {"store": "c", "index": "i", "value": {"select": [{"gt": ["z", 1.0]}, {"sqrt": "z"}, {"max": ["z", 0.0]}]}}"#,
        ),
        (
            "int_hash_u32",
            r#"{"name": "a", "binding": 0, "access": "read", "type": "u32"},
               {"name": "b", "binding": 1, "access": "read", "type": "u32"},
               {"name": "c", "binding": 2, "access": "read_write", "type": "u32"}"#,
            r#"{"let": "i", "value": {"gid": "x"}},
               {"if": {"lt": ["i", {"len": "c"}]}, "then": [
                 {"let": "h", "value": {"xor": [{"load": "a", "index": "i"}, {"mul": ["i", 2654435761]}]}},
                 {"assign": "h", "value": {"xor": ["h", {"shr": ["h", 16]}]}},
                 {"assign": "h", "value": {"mul": ["h", 2246822507]}},
                 {"assign": "h", "value": {"xor": ["h", {"rotl": ["h", 13]}]}},
                 {"store": "c", "index": "i", "value": {"add": ["h", {"load": "b", "index": "i"}]}}]}"#,
        ),
    ]
}

fn bench(c: &mut Criterion) {
    if let Some(n) = std::env::var("VYRESCOPE_BENCH_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global();
    }
    let mut g = c.benchmark_group("interp");
    g.sample_size(10);
    for (name, buffers, body) in programs() {
        let text = format!(
            r#"{{"format": 1, "name": "{name}", "workgroup_size": [256, 1, 1],
                "buffers": [{buffers}], "body": [{body}],
                "run": {{"elements": {ELEMENTS}, "inputs": {{
                  "a": {{"fill": "random", "seed": 1}}, "b": {{"fill": "iota"}}}}}}}}"#
        );
        let program = parse_program(&text, name).expect("benchmark program parses");
        let prepared = prepare(&program, Path::new("."), None, None).expect("inputs");
        let mut buffers = prepared.buffers.clone();
        let evals = interp::run(&program, &prepared.shape, &mut buffers)
            .expect("runs")
            .node_evals;
        g.throughput(Throughput::Elements(evals));
        // Cloning the input buffers is setup, not measured.
        g.bench_function(name, |b| {
            b.iter_batched(
                || prepared.buffers.clone(),
                |mut buffers| interp::run(&program, &prepared.shape, &mut buffers).expect("runs"),
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
