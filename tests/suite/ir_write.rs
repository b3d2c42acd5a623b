//! Property test: every generated well-typed Program written by `ir::program_to_json` parses
//! back to the same Program (node ids, literals bit for bit). The GPU worker process receives
//! the inspector's Programs this way, so a lossy writer would run a different kernel.

use proptest::prelude::*;
use vyrescope::gen::{valid_program, Config};
use vyrescope::ir::{parse_program, program_to_json};

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn generated_programs_round_trip(seed in any::<u64>()) {
        let p = valid_program(seed, &Config::default());
        let text = program_to_json(&p).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(!text.contains('\n'), "one line: {text}");
        let q = parse_program(&text, "written.json")
            .map_err(|e| TestCaseError::fail(format!("seed {seed}: {e}\n{text}")))?;
        // Debug text also compares NaN literals, which PartialEq would call unequal.
        prop_assert_eq!(format!("{q:?}"), format!("{p:?}"), "seed {}: {}", seed, text);
    }
}

/// Every Program a user can write round-trips: each fixture Program and each step Program of
/// each pipeline fixture, written and parsed back, is the same Program.
#[test]
fn every_fixture_program_round_trips() {
    let mut programs = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir("fixtures/programs")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    for f in &files {
        programs.push((
            f.display().to_string(),
            vyrescope::ir::load_program(f).unwrap(),
        ));
    }
    let mut pipelines: Vec<_> = std::fs::read_dir("fixtures/pipelines")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    pipelines.sort();
    for f in &pipelines {
        let loaded = vyrescope::validate::pipeline::load_pipeline(f);
        let p = loaded.pipeline.unwrap_or_else(|| panic!("{}", f.display()));
        for (k, s) in p.steps.into_iter().enumerate() {
            programs.push((format!("{} step {k}", f.display()), s.program));
        }
    }
    assert!(programs.len() > 40, "{} Programs", programs.len());
    for (name, p) in programs {
        let text = program_to_json(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
        let q = parse_program(&text, "written.json").unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(format!("{q:?}"), format!("{p:?}"), "{name}");
    }
}

/// A fused dataflow kernel's wait statements are internal: the writer refuses them with the
/// node instead of writing text that no parser reads back.
#[test]
fn the_writer_refuses_dataflow_waits() {
    use std::sync::Arc;
    use vyrescope::megakernel::compiled::CompiledPipeline;
    use vyrescope::megakernel::plan::{PlanOptions, SyncMode};
    let f = std::path::Path::new("fixtures/pipelines/softmax.json");
    let p = vyrescope::validate::pipeline::load_pipeline(f)
        .pipeline
        .unwrap();
    let shapes = vyrescope::inputs::pipeline::pipeline_shapes(&p, f.parent().unwrap()).unwrap();
    let opts = PlanOptions::new(vyrescope::occupancy::profiles::load("h200").unwrap());
    let c =
        CompiledPipeline::compile(Arc::new(p), shapes, &opts, SyncMode::Dataflow, None).unwrap();
    let mut refused = 0;
    for g in &c.groups {
        let k = g.kernel.as_ref().unwrap();
        let has_sync = format!("{:?}", k.program).contains("Sync(");
        match program_to_json(&k.program) {
            Ok(_) => assert!(!has_sync, "a kernel with waits was written"),
            Err(e) => {
                assert!(has_sync, "{e}");
                assert!(e.to_string().contains("dataflow wait"), "{e}");
                refused += 1;
            }
        }
    }
    assert!(refused > 0, "softmax's dataflow kernel has waits");
}
