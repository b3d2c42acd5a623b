//! Planning and fusing long pipelines: `plan` plus `fuse_group` of every planned group, for
//! generated chains of 100 to 20,000 `add1` steps (a buffer of its own per step). The time per
//! step should stay about flat as the chain grows (issue 35: it grew linearly, so the whole
//! was quadratic). Run: `cargo bench --bench plan`.

use std::path::Path;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use vyrescope::inputs::pipeline::pipeline_shapes;
use vyrescope::ir::parse_pipeline;
use vyrescope::megakernel::fuse_group;
use vyrescope::megakernel::plan::{plan, PlanOptions};

const ADD1: &str = r#"{"format": 1, "name": "add1", "workgroup_size": [64, 1, 1],
  "buffers": [{"name": "src", "binding": 0, "access": "read", "type": "f32"},
              {"name": "dst", "binding": 1, "access": "write", "type": "f32"}],
  "body": [{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "i", "value": {"add": [{"load": "src", "index": "i"}, 1.0]}}]}]}"#;

fn chain_text(steps: usize) -> String {
    let buffers: Vec<String> = (0..=steps)
        .map(|k| format!(r#""b{k}": {{"type": "f32", "len": 4096, "fill": "zeros"}}"#))
        .collect();
    let list: Vec<String> = (0..steps)
        .map(|i| {
            format!(
                r#"{{"program": "add1.json", "bind": {{"src": "b{i}", "dst": "b{}"}}}}"#,
                i + 1
            )
        })
        .collect();
    format!(
        r#"{{"format": 1, "pipeline": "chain", "buffers": {{{}}}, "steps": [{}]}}"#,
        buffers.join(", "),
        list.join(", ")
    )
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("add1.json"), ADD1).expect("write add1.json");
    let opts = PlanOptions::new(
        vyrescope::occupancy::profiles::bundled("h200")
            .expect("profile")
            .expect("h200"),
    );
    let mut g = c.benchmark_group("plan_and_fuse_chain");
    g.sample_size(10);
    for steps in [100usize, 1_000, 5_000, 20_000] {
        let p = parse_pipeline(&chain_text(steps), "chain.pipeline.json", dir.path())
            .expect("pipeline");
        let shapes = pipeline_shapes(&p, Path::new(dir.path())).expect("shapes");
        g.throughput(Throughput::Elements(steps as u64));
        g.bench_with_input(BenchmarkId::from_parameter(steps), &steps, |b, _| {
            b.iter(|| {
                let planned = plan(&p, &shapes, &opts).expect("plan");
                for spec in planned.specs() {
                    fuse_group(&p, &shapes, &spec).expect("fuse");
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
