//! Emission time per fixture (`cargo bench --bench emit`): parse once, then time `emit`
//! (validation, elaboration, lowering, assembly and source map) for sm_90 with line info.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use vyrescope::emit::{emit, EmitOptions};
use vyrescope::ir::load_program;

fn fixtures() -> Vec<(String, vyrescope::ir::Program)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "json"));
    files.sort();
    files
        .into_iter()
        .filter_map(|f| {
            let stem = f.file_stem()?.to_string_lossy().to_string();
            load_program(&f).ok().map(|p| (stem, p))
        })
        .collect()
}

fn bench_emit(c: &mut Criterion) {
    let mut g = c.benchmark_group("emit");
    for (name, p) in fixtures() {
        let opts = EmitOptions {
            lineinfo: true,
            ..EmitOptions::for_program(&p)
        };
        g.bench_function(&name, |b| b.iter(|| emit(black_box(&p), black_box(&opts))));
    }
    g.finish();
}

criterion_group!(benches, bench_emit);
criterion_main!(benches);
