//! The runtime's launch list (issue 48): one list type runs every multi-launch execution,
//! and a timeline run is its record mode. Checked here on the host: the timeline list of a
//! compiled pipeline is the plain list of the same launches (order, Programs, shapes, buffer
//! maps) plus one zeroed record buffer per launch after the data buffers, in both pipeline
//! forms and both sync forms of every pipeline fixture; bad buffer indices and oversized
//! record buffers are refused with a Fix, for seeded random lists.

use std::sync::Arc;

use vyrescope::emit::timeline::{TimelineSpec, RECORD_BYTES};
use vyrescope::harness::timeline_run::{pipeline_launches, PipelineForm};
use vyrescope::inputs::pipeline::prepare_pipeline;
use vyrescope::inputs::prng::SplitMix64;
use vyrescope::inputs::LaunchShape;
use vyrescope::megakernel::compiled::CompiledPipeline;
use vyrescope::megakernel::launch::PipelineLaunch;
use vyrescope::megakernel::plan::{PlanOptions, SyncMode};
use vyrescope::occupancy::profiles;
use vyrescope::runtime::launch_list::LaunchList;
use vyrescope::runtime::{RuntimeError, TimelineLaunch};
use vyrescope::validate::pipeline::load_pipeline;

use crate::support::fixtures::fixtures;

fn pipeline_fixtures() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir("fixtures/pipelines")
        .expect("fixtures/pipelines")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

fn blocks(shape: &LaunchShape) -> u64 {
    shape.grid.iter().map(|&g| u64::from(g)).product()
}

/// Checks the timeline list of `timed` against the plain list of `plain` over `n` buffers.
fn check_modes(what: &str, plain: &[PipelineLaunch], timed: &[TimelineLaunch], n: usize) {
    let plain_list = LaunchList::plain(plain, n).expect("plain list");
    let timeline = LaunchList::timeline(timed, n).expect("timeline list");
    assert_eq!(
        timeline.entries.len(),
        plain.len(),
        "{what}: one entry per launch"
    );
    // Programs compared by fingerprint: a NaN literal makes `==` on Programs false.
    let shape_of = |l: &LaunchList| {
        let entries = l.entries.iter().map(|e| {
            let record = e.record.as_ref().map(|r| (r.spec.clone(), r.buffer));
            (e.program.fingerprint(), e.shape, e.buffers.clone(), record)
        });
        (l.data_buffers, entries.collect::<Vec<_>>())
    };
    assert_eq!(
        shape_of(&timeline.uninstrumented()),
        shape_of(&plain_list),
        "{what}: the timeline mode launches what the plain mode does, in its order"
    );
    let names = |l: &LaunchList| {
        l.entries
            .iter()
            .map(|e| e.program.name.clone())
            .collect::<Vec<_>>()
    };
    let expected: Vec<String> = plain.iter().map(|l| l.program.name.clone()).collect();
    assert_eq!(names(&timeline), expected, "{what}");
    assert_eq!(plain_list.resident_buffers(), n, "{what}");
    assert!(plain_list.record_buffers().expect("none").is_empty());
    assert_eq!(timeline.resident_buffers(), n + timed.len(), "{what}");
    let records = timeline.record_buffers().expect("record buffers");
    assert_eq!(records.len(), timed.len(), "{what}");
    for (i, (e, r)) in timeline.entries.iter().zip(&records).enumerate() {
        let rec = e.record.as_ref().expect("every timeline entry records");
        assert_eq!(
            rec.buffer,
            n + i,
            "{what} launch {i}: records after the data"
        );
        assert_eq!(rec.spec, timed[i].spec, "{what} launch {i}");
        let bytes = rec.spec.buffer_bytes(blocks(&e.shape));
        assert_eq!(r.data.len() as u64, bytes, "{what} launch {i}");
        assert!(
            bytes > 0 && r.data.iter().all(|&b| b == 0),
            "{what} launch {i}"
        );
        assert!(r.access.is_writable(), "{what} launch {i}: read back");
    }
}

#[test]
fn a_timeline_list_is_the_plain_list_plus_one_record_buffer_per_launch() {
    let opts = PlanOptions::new(profiles::load("h200").expect("bundled h200"));
    let mut checked = 0;
    for path in pipeline_fixtures() {
        let p = load_pipeline(&path)
            .pipeline
            .expect("valid pipeline fixture");
        let prepared = prepare_pipeline(&p, path.parent().expect("folder")).expect("prepare");
        let shapes: Vec<LaunchShape> = prepared.steps.iter().map(|s| s.shape).collect();
        let n = p.buffers.len();
        for sync in [SyncMode::Barrier, SyncMode::Dataflow] {
            let compiled =
                CompiledPipeline::compile(Arc::new(p.clone()), shapes.clone(), &opts, sync, None)
                    .expect("compile");
            let what = format!("{} {sync:?}", path.display());
            let separate = compiled.separate_launches().expect("separate launches");
            let timed = pipeline_launches(&compiled, PipelineForm::Separate).expect("timed");
            check_modes(&format!("{what} separate"), &separate, &timed, n);
            let fused = compiled.fused_launches().expect("fused launches");
            let timed = pipeline_launches(&compiled, PipelineForm::Fused).expect("timed");
            check_modes(&format!("{what} fused"), &fused, &timed, n);
            checked += 2;
        }
    }
    assert!(checked >= 40, "only {checked} lists checked");
}

/// Random lists over random buffer counts: a list is refused exactly when a launch names a
/// buffer it was not given, with the Program and the index in the message and a Fix; the
/// timeline mode of an accepted list numbers its record buffers after the data buffers.
#[test]
fn random_lists_are_refused_exactly_when_a_buffer_index_is_out_of_range() {
    let programs: Vec<_> = fixtures().into_iter().map(|(_, p)| p).collect();
    let mut rng = SplitMix64::new(0x1a57_0048);
    let (mut refused, mut accepted) = (0, 0);
    for _ in 0..300 {
        let n = 1 + (rng.next_u64() % 6) as usize;
        let launches: Vec<PipelineLaunch> = (0..1 + rng.next_u64() % 5)
            .map(|_| {
                let program = programs[(rng.next_u64() % programs.len() as u64) as usize].clone();
                let buffers = (0..program.host_buffers().len())
                    .map(|_| (rng.next_u64() % (n as u64 + 2)) as usize)
                    .collect();
                let grid = [1 + (rng.next_u64() % 4096) as u32, 1, 1];
                PipelineLaunch {
                    shape: LaunchShape {
                        grid,
                        workgroup_size: program.workgroup_size,
                    },
                    program,
                    buffers,
                }
            })
            .collect();
        let bad = launches
            .iter()
            .find_map(|l| Some((l, *l.buffers.iter().find(|&&i| i >= n)?)));
        let timed: Vec<TimelineLaunch> = launches
            .iter()
            .enumerate()
            .map(|(k, l)| TimelineLaunch {
                program: l.program.clone(),
                shape: l.shape,
                buffers: l.buffers.clone(),
                spec: TimelineSpec::kernel(Some(k as u32)),
            })
            .collect();
        match (LaunchList::plain(&launches, n), bad) {
            (Ok(list), None) => {
                accepted += 1;
                check_modes("random list", &launches, &timed, n);
                assert_eq!(list.entries.len(), launches.len());
            }
            (Err(e), Some((l, index))) => {
                refused += 1;
                let text = e.to_string();
                assert!(
                    text.contains(&format!(
                        "`{}` names pipeline buffer {index} of {n}",
                        l.program.name
                    )) && text.contains("Fix:"),
                    "{text}"
                );
                assert!(LaunchList::timeline(&timed, n).is_err());
            }
            (r, bad) => panic!("list {r:?} for out-of-range index {bad:?}"),
        }
    }
    assert!(
        refused > 20 && accepted > 20,
        "{refused} refused, {accepted} accepted"
    );
}

#[test]
fn a_record_buffer_over_4_gib_is_refused_with_a_fix() {
    let (_, program) = fixtures().into_iter().next().expect("a fixture");
    let spec = TimelineSpec::kernel(None);
    let per_block = u64::from(spec.slots_per_block) * RECORD_BYTES as u64;
    let over = u32::try_from((1u64 << 32) / per_block + 1).expect("fits a grid");
    let mut rng = SplitMix64::new(48);
    for _ in 0..20 {
        let extra = (rng.next_u64() % 1000) as u32;
        let launch = |grid: u32| TimelineLaunch {
            program: program.clone(),
            shape: LaunchShape {
                grid: [grid, 1, 1],
                workgroup_size: program.workgroup_size,
            },
            buffers: (0..program.host_buffers().len()).collect(),
            spec: spec.clone(),
        };
        let n = program.host_buffers().len();
        let small = 1 + extra;
        let list = LaunchList::timeline(&[launch(small), launch(over + extra)], n).expect("list");
        match list.record_buffers() {
            Err(RuntimeError::Launch(p)) => {
                let text = p.to_string();
                assert!(text.contains("timeline of launch 1 needs"), "{text}");
                assert!(text.contains("run fewer workgroups"), "{text}");
            }
            other => panic!("grid {}: {other:?}", over + extra),
        }
        let ok = LaunchList::timeline(&[launch(small)], n).expect("list");
        let bufs = ok.record_buffers().expect("small enough");
        assert_eq!(bufs[0].data.len() as u64, u64::from(small) * per_block);
    }
}
