//! The validator's facts ([`crate::validate::ProgramInfo`]) match what later stages used to
//! derive for themselves, and the emit and fuse paths validate each Program once. Here
//! rather than beside the validator because it drives the layers above it (generators,
//! emitter, planner).

use std::path::Path;
use std::sync::Arc;

use crate::emit::{emit, emit_valid, EmitOptions};
use crate::finding::Severity;
use crate::gen::{mutate, random_pipeline, valid_program, Config};
use crate::ir::print::{print_program, print_program_typed};
use crate::ir::StmtKind;
use crate::megakernel::compiled::CompiledPipeline;
use crate::megakernel::plan::{PlanOptions, SyncMode};
use crate::validate::info::runs;
use crate::validate::{analyze, prove};

fn opts(workgroup_size: [u32; 3]) -> EmitOptions {
    EmitOptions {
        sm: 90,
        workgroup_size,
        lineinfo: false,
        unroll: true,
        grid_barrier: Default::default(),
        version_bounds: false,
    }
}

#[test]
fn the_info_holds_what_the_stages_used_to_derive() {
    for seed in 0..150u64 {
        let p = valid_program(0x1f0_0000 + seed, &Config::default());
        let info = prove(&p).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        // Compared by fingerprint (the debug form): a generated NaN literal is unequal to itself.
        assert_eq!(info.program().fingerprint(), p.fingerprint(), "seed {seed}");
        // The typed Program is the one the emitter and interpreter elaborated for themselves.
        let elaborated = crate::ir::elaborate(&p);
        assert_eq!(
            info.typed().fingerprint(),
            elaborated.fingerprint(),
            "seed {seed}"
        );
        // The validator's `let` types print the Program as the printer's own derivation does.
        assert_eq!(
            print_program_typed(&p, info.let_types()).text(),
            print_program(&p).text(),
            "seed {seed}"
        );
        let mut lets = 0;
        let mut barriers = Vec::new();
        p.walk_stmts(&mut |s| match &s.kind {
            StmtKind::Let { .. } => lets += 1,
            StmtKind::Barrier(scope) => barriers.push((s.id.clone(), *scope)),
            _ => {}
        });
        assert_eq!(info.let_types().len(), lets, "seed {seed}");
        assert_eq!(info.barriers(), barriers.as_slice(), "seed {seed}");
        assert!(info
            .findings()
            .iter()
            .all(|d| d.severity != Severity::Error));
    }
}

#[test]
fn an_invalid_program_has_no_info_and_names_its_first_error() {
    let mut refused = 0;
    for seed in 0..200u64 {
        let p = mutate(&valid_program(seed, &Config::default()), seed ^ 0x5eed);
        let v = analyze(&p);
        let has_error = v.diagnostics.iter().any(|d| d.severity == Severity::Error);
        assert_eq!(
            v.info.is_none(),
            has_error,
            "seed {seed}: {:?}",
            v.diagnostics
        );
        if has_error {
            refused += 1;
            let e = prove(&p).unwrap_err();
            let first = v.diagnostics.iter().find(|d| d.severity == Severity::Error);
            assert_eq!(e.first_error(), first, "seed {seed}");
            assert!(e.to_string().contains(&p.name), "{e}");
            // The convenience refuses it with the same first error.
            match emit(&p, &opts(p.workgroup_size)) {
                Err(crate::emit::EmitError::Invalid { diagnostic, .. }) => {
                    assert_eq!(Some(diagnostic.as_ref()), first, "seed {seed}")
                }
                other => panic!("seed {seed}: emitted an invalid Program: {other:?}"),
            }
        }
    }
    assert!(
        refused >= 50,
        "only {refused} of 200 mutations were invalid"
    );
}

#[test]
fn emitting_from_the_info_gives_the_same_kernel_and_validates_once() {
    for seed in 0..40u64 {
        let p = valid_program(0xe417_0000 + seed, &Config::default());
        let o = opts(p.workgroup_size);
        runs::reset();
        let convenient = emit(&p, &o).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(
            runs::counts().get(&p.fingerprint()),
            Some(&1),
            "seed {seed}"
        );
        let info = prove(&p).unwrap();
        let staged = emit_valid(&info, &o).unwrap();
        assert_eq!(staged.ptx, convenient.ptx, "seed {seed}");
        assert_eq!(staged.source_map, convenient.source_map, "seed {seed}");
        // Emitting again from the info does not validate again.
        runs::reset();
        emit_valid(&info, &o).unwrap();
        assert!(
            runs::counts().is_empty(),
            "seed {seed}: {:?}",
            runs::counts()
        );
    }
}

/// Planning, fusing and emitting a pipeline validates each fused Program exactly once (fusing
/// proves it; emission reads the proof), and nothing is validated twice.
#[test]
fn the_fuse_and_emit_path_validates_each_program_once() {
    let h200 = crate::occupancy::profiles::load("h200").unwrap();
    let mut groups = 0;
    for seed in 0..8u64 {
        let p = random_pipeline(0xf05e_0000 + seed).unwrap_or_else(|e| panic!("{e}"));
        let shapes = crate::inputs::pipeline::pipeline_shapes(&p, Path::new("."))
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for sync in [SyncMode::Barrier, SyncMode::Dataflow] {
            runs::reset();
            let opts = PlanOptions::new(h200.clone());
            let c =
                CompiledPipeline::compile(Arc::new(p.clone()), shapes.clone(), &opts, sync, None)
                    .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            for (g, group) in c.groups.iter().enumerate() {
                let Ok(k) = &group.kernel else { continue };
                let fingerprint = k.program.fingerprint();
                assert_eq!(
                    k.info().program().fingerprint(),
                    fingerprint,
                    "seed {seed} group {g}"
                );
                c.emit_group(g, &opts_for(&k.program))
                    .unwrap_or_else(|e| panic!("{e}"));
                let counted = runs::counts().get(&fingerprint).copied();
                assert_eq!(counted, Some(1), "seed {seed} group {g}");
                groups += 1;
            }
            let twice: Vec<_> = runs::counts().into_iter().filter(|(_, n)| *n > 1).collect();
            assert!(twice.is_empty(), "seed {seed}: validated twice: {twice:?}");
        }
    }
    assert!(groups >= 8, "only {groups} fused groups emitted");
}

fn opts_for(p: &crate::ir::Program) -> EmitOptions {
    opts(p.workgroup_size)
}

/// The interpreter's checked entry runs the info's typed Program: the same results, bit for
/// bit, as elaborating the Program again.
#[test]
fn interpreting_from_the_info_gives_the_same_results() {
    let mut compared = 0;
    for seed in 0..60u64 {
        let p = valid_program(0x1e7_0000 + seed, &Config::differential());
        let info = prove(&p).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let prepared = crate::inputs::prepare(&p, Path::new("."), None, None)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let o = crate::interp::Options::default();
        let mut again = prepared.buffers.clone();
        let mut staged = prepared.buffers;
        let a = crate::interp::run_with(&p, &prepared.shape, &mut again, &o);
        let b = crate::interp::run_valid(&info, &prepared.shape, &mut staged, &o);
        match (a, b) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.node_evals, b.node_evals, "seed {seed}");
                for (x, y) in again.iter().zip(&staged) {
                    assert_eq!(x.data, y.data, "seed {seed}: buffer {}", x.name);
                }
                compared += 1;
            }
            (Err(a), Err(b)) => assert_eq!(a.code, b.code, "seed {seed}"),
            (a, b) => panic!("seed {seed}: {a:?} vs {b:?}"),
        }
    }
    assert!(compared >= 50, "only {compared} of 60 ran");
}
