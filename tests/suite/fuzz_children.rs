//! `selftest --fuzz-pipelines` supervision without a GPU: stand-in workers (shell scripts that
//! print the worker protocol's JSON lines) stop at a fault, die mid-pipeline and finish; the
//! supervisor records each failing seed once, restarts after it and counts every pipeline.

use std::time::Duration;

use vyrescope::harness::fuzz_children::{supervise, ChildEvent, Progress};
use vyrescope::harness::fuzz_pipelines::{
    PipelineFinding, PipelineFuzzOptions, PipelineFuzzReport,
};
use vyrescope::megakernel::dataflow::SyncMode;

fn report(pipelines: u64, agreed: u64, findings: Vec<PipelineFinding>) -> PipelineFuzzReport {
    PipelineFuzzReport {
        pipelines,
        agreed,
        separate_launches: agreed * 3,
        fused_launches: agreed,
        mixed_groups: 0,
        passed: findings.is_empty(),
        findings,
        out: std::env::temp_dir(),
    }
}

fn lines(events: &[ChildEvent]) -> String {
    events
        .iter()
        .map(|e| format!("echo '{}'", e.line()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_fault_or_a_dying_worker_is_recorded_and_the_run_goes_on_from_the_next_seed() {
    let d = tempfile::tempdir().unwrap();
    let fault = PipelineFinding::new(
        101,
        "fault",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION".into(),
        None,
        SyncMode::Dataflow,
    );
    let first = lines(&[
        ChildEvent::Device("Test GPU".into()),
        ChildEvent::Done(1),
        ChildEvent::Finding(fault.clone()),
        ChildEvent::Done(2),
        ChildEvent::Report(report(2, 1, vec![fault.clone()])),
    ]);
    // Dies (as a kernel fault that kills the process would) inside its third pipeline.
    let second = lines(&[ChildEvent::Done(1), ChildEvent::Done(2)]);
    let third = lines(&[
        ChildEvent::Done(1),
        ChildEvent::Done(2),
        ChildEvent::Done(3),
        ChildEvent::Report(report(3, 3, Vec::new())),
    ]);
    let exe = d.path().join("worker");
    crate::support::script::write_executable(
        &exe,
        &format!(
            "#!/bin/sh\ncase \"$*\" in\n\
             *'--seed 100 --count 8'*)\n{first}\n;;\n\
             *'--seed 102 --count 6'*)\n{second}\nkill -ABRT $$\n;;\n\
             *'--seed 105 --count 3'*)\n{third}\n;;\n\
             *) echo \"unexpected: $*\" >&2; exit 2 ;;\nesac\n"
        ),
    );
    let o = PipelineFuzzOptions {
        count: 8,
        seed: 100,
        out: d.path().join("out"),
        timeout: Duration::from_secs(1),
        sync: SyncMode::Dataflow,
    };
    let args = |seed: u64, count: u64| {
        vec![
            "--seed".into(),
            seed.to_string().into(),
            "--count".into(),
            count.to_string().into(),
        ]
    };
    let mut seen = Vec::new();
    let mut last_done = 0;
    let rep = supervise(&exe, &o, &args, &mut |p| match p {
        Progress::Finding(f) => seen.push(f.seed),
        Progress::Done(n) => last_done = n,
        Progress::Device(d) => assert_eq!(d, "Test GPU"),
    })
    .unwrap();
    assert_eq!(seen, vec![101, 104]);
    assert_eq!(last_done, 8);
    assert_eq!(rep.pipelines, 8);
    assert_eq!(rep.agreed, 4);
    assert!(!rep.passed);
    let kinds: Vec<(u64, &str)> = rep
        .findings
        .iter()
        .map(|f| (f.seed, f.kind.as_str()))
        .collect();
    assert_eq!(kinds, vec![(101, "fault"), (104, "fault")]);
    // The dead worker's pipeline is regenerated and written, with the line that replays it.
    let crashed = &rep.findings[1];
    let file = crashed.file.as_ref().expect("written");
    assert!(file.starts_with(d.path().join("out")) && file.is_file());
    let replay = crashed.replay.as_deref().unwrap();
    assert!(
        replay.contains("--decide fuse") && replay.contains("--sync dataflow"),
        "{replay}"
    );
}

#[test]
fn a_worker_that_cannot_start_its_first_pipeline_is_one_error() {
    let d = tempfile::tempdir().unwrap();
    let exe = d.path().join("worker");
    crate::support::script::write_executable(
        &exe,
        "#!/bin/sh\necho 'error: no CUDA driver' >&2\nexit 1\n",
    );
    let o = PipelineFuzzOptions {
        count: 5,
        seed: 1,
        out: d.path().join("out"),
        timeout: Duration::from_secs(1),
        sync: SyncMode::Barrier,
    };
    let e = supervise(&exe, &o, &|_, _| Vec::new(), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("before its first pipeline"), "{e}");
}
