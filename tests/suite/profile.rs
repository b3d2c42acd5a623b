//! The per-statement profile (issue 50): the instrumented build of every Program fixture
//! validates, assembles and computes exactly what the plain build computes on the reference
//! interpreter, with reseeded random inputs; its table attributes the interpreter's
//! statement ticks to the right statements on hand-checked Programs.

use vyrescope::emit::ptxas::assemble;
use vyrescope::emit::{emit, EmitOptions};
use vyrescope::inputs::prng::SplitMix64;
use vyrescope::inputs::{prepare, HostBuffer};
use vyrescope::interp::{run_with, Options};
use vyrescope::ir::{parse_program, Fill, InputSource, Program};
use vyrescope::profile::report::{from_table, Lowering};
use vyrescope::profile::{instrument, Source};
use vyrescope::validate::validate;

use crate::support::fixtures::fixtures;

/// The fixture with every `random` fill given a new seed from `rng`.
fn reseeded(p: &Program, rng: &mut SplitMix64) -> Program {
    let mut p = p.clone();
    if let Some(run) = p.run.as_mut() {
        for (_, spec) in run.inputs.iter_mut() {
            if let InputSource::Fill(Fill::Random { seed, .. }) = &mut spec.source {
                *seed = rng.next_u64();
            }
        }
    }
    p
}

/// Runs `program` sequentially (float atomics then sum in one order) over `buffers`.
fn interpret(
    program: &Program,
    shape: &vyrescope::inputs::LaunchShape,
    buffers: &mut [HostBuffer],
) {
    let opts = Options {
        parallel: false,
        ..Options::default()
    };
    run_with(program, shape, buffers, &opts).unwrap_or_else(|e| panic!("{}: {e}", program.name));
}

#[test]
fn instrumented_build_of_every_fixture_validates_assembles_and_matches_the_plain_build() {
    let mut rng = SplitMix64::new(0x5eed_0050);
    let ptxas = crate::support::tools::ptxas("assembling the instrumented PTX");
    let mut checked = 0;
    for (path, fixture) in fixtures() {
        let p = reseeded(&fixture, &mut rng);
        let base = path.parent().expect("folder");
        let prepared = prepare(&p, base, None, None).expect("prepare");
        // Every workgroup timed, and a stride that skips some, must both leave outputs alone.
        for stride in [1, 3] {
            let inst = instrument(&p, stride).expect("instrument");
            let errors: Vec<_> = validate(&inst.program)
                .into_iter()
                .filter(|d| d.severity == vyrescope::diagnostic::Severity::Error)
                .collect();
            assert!(errors.is_empty(), "{}: {errors:?}", path.display());
            let mut plain = prepared.buffers.clone();
            interpret(&p, &prepared.shape, &mut plain);
            let mut with = prepared.buffers.clone();
            with.push(inst.table_buffer());
            interpret(&inst.program, &prepared.shape, &mut with);
            let table = inst.read_table(&with).expect("table");
            with.retain(|b| b.name != inst.table);
            assert_eq!(
                with,
                plain,
                "{}: outputs differ (stride {stride})",
                path.display()
            );
            assert!(
                table.iter().any(|&t| t > 0),
                "{}: no statement was timed",
                path.display()
            );
            if stride == 1 {
                let o = EmitOptions {
                    workgroup_size: prepared.shape.workgroup_size,
                    ..EmitOptions::for_program(&inst.program)
                };
                let k = emit(&inst.program, &o).expect("emit instrumented");
                assert!(k.ptx.contains("%clock64"), "{}", path.display());
                if let Some(ptxas) = &ptxas {
                    if let Err(e) = assemble(ptxas, &k.ptx, 90, false) {
                        panic!(
                            "{}: ptxas refused the instrumented PTX: {e}",
                            path.display()
                        );
                    }
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} fixtures");
}

/// A loop of known trip count: the table holds, per sampled thread, one tick per run of each
/// statement, the loop's slot holds its whole body, and the report's own shares follow.
#[test]
fn the_table_attributes_ticks_to_the_right_statements() {
    let mut rng = SplitMix64::new(0x0050_7ab1e);
    for _ in 0..4 {
        let trips = 1 + rng.next_u64() % 9;
        let threads = 32 * (1 + rng.next_u64() % 3);
        let groups = 1 + rng.next_u64() % 4;
        let stride = 1 + (rng.next_u64() % 2) as u32;
        let text = format!(
            r#"{{"format": 1, "name": "loop_known", "workgroup_size": [{threads}, 1, 1],
            "buffers": [{{"name": "out", "binding": 0, "access": "read_write", "type": "u32"}}],
            "body": [
              {{"let": "acc", "value": {{"gid": "x"}}}},
              {{"loop": "i", "from": 0, "to": {trips}, "body": [
                {{"assign": "acc", "value": {{"mul": ["acc", 3]}}}},
                {{"assign": "acc", "value": {{"add": ["acc", "i"]}}}}
              ]}},
              {{"if": {{"lt": [{{"gid": "x"}}, 5]}}, "then": [
                {{"store": "out", "index": {{"gid": "x"}}, "value": "acc"}}
              ]}},
              {{"store": "out", "index": {{"gid": "x"}}, "value": {{"add": ["acc", 1]}}}}
            ],
            "run": {{"grid": [{groups}, 1, 1], "inputs": {{"out": {{"fill": "random", "seed": 7}}}}}}}}"#
        );
        let p = parse_program(&text, "loop_known.json").expect("parse");
        let prepared = prepare(&p, std::path::Path::new("."), None, None).expect("prepare");
        let inst = instrument(&p, stride).expect("instrument");
        let mut bufs = prepared.buffers.clone();
        bufs.push(inst.table_buffer());
        interpret(&inst.program, &prepared.shape, &mut bufs);
        let table = inst.read_table(&bufs).expect("table");
        let nodes: Vec<&str> = inst.slots.iter().map(|s| s.node.as_str()).collect();
        assert_eq!(
            nodes,
            [
                "body[0]",
                "body[1]",
                "body[1].body[0]",
                "body[1].body[1]",
                "body[2]",
                "body[2].then[0]",
                "body[3]"
            ]
        );
        let sampled_groups = (0..groups).filter(|g| g % stride as u64 == 0).count() as u64;
        let t = threads * sampled_groups;
        // Threads with gid < 5 (all in workgroup 0, which is always sampled) take the branch.
        let taken = 5.min(threads);
        assert_eq!(
            table,
            vec![
                t,
                t * (1 + 2 * trips),
                t * trips,
                t * trips,
                t + taken,
                taken,
                t
            ],
            "trips {trips}, threads {threads}, groups {groups}, stride {stride}"
        );
        let profile = from_table(&p, &inst, &table, Source::Estimate, Lowering::default());
        let total = t * (1 + 1 + 2 * trips + 1 + 1) + taken;
        assert_eq!(profile.total, total);
        let lp = profile.statement("body[1]").expect("loop");
        assert_eq!((lp.self_value, lp.total_value), (t, t * (1 + 2 * trips)));
        let body0 = profile.statement("body[1].body[0]").expect("body");
        assert!((body0.self_share - (t * trips) as f64 / total as f64).abs() < 1e-12);
        assert!(profile.render(10).contains("ESTIMATE"));
    }
}
