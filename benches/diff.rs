//! `vyrescope diff` of long Programs: one Program of 1,000 to 16,000 stores against itself at
//! another workgroup size, SASS left out (ptxas and nvdisasm are NVIDIA's cost, not ours).
//! The time per statement should stay about flat as the Program grows (issue 35: every
//! statement searched the PTX text and the source map anew, so the whole was quadratic).
//! Run: `cargo bench --bench diff`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use vyrescope::diff::{run, Level, SassFigures};

/// A Program of `n` stores inside one bounds check, each with its own constant.
fn many_statements(n: usize) -> String {
    let stores: Vec<String> = (0..n)
        .map(|k| {
            format!(
                r#"{{"store": "dst", "index": "i", "value": {{"add": [{{"load": "src", "index": "i"}}, {k}.5]}}}}"#
            )
        })
        .collect();
    format!(
        r#"{{"format": 1, "name": "many", "workgroup_size": [64, 1, 1],
  "buffers": [{{"name": "src", "binding": 0, "access": "read", "type": "f32"}},
              {{"name": "dst", "binding": 1, "access": "write", "type": "f32"}}],
  "body": [{{"let": "i", "value": {{"gid": "x"}}}},
           {{"if": {{"lt": ["i", {{"len": "dst"}}]}}, "then": [{}]}}]}}"#,
        stores.join(", ")
    )
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let caps = vyrescope::occupancy::profiles::bundled("h200")
        .expect("profile")
        .expect("h200");
    let mut g = c.benchmark_group("diff_against_wg128");
    g.sample_size(10);
    for n in [1_000usize, 4_000, 16_000] {
        let file = dir.path().join(format!("many{n}.json"));
        std::fs::write(&file, many_statements(n)).expect("write the Program");
        let old = file.display().to_string();
        let new = format!("{old}@wg=128");
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                run(&old, &new, Level::Ptx, 90, SassFigures::Skip, &caps).expect("diff");
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
