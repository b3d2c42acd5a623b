//! The GPU worker process and its client, on any machine (CI has no GPU and no driver):
//! the real `vyrescope gpu-worker` binary speaks the protocol, the client gets the same
//! no-driver error through it as an in-process runtime, and a worker that dies or hangs
//! mid-session is reported clearly, reaped, and replaced on the next request.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use vyrescope::harness::worker_messages::{WorkerMessage as Message, WorkerRequest as Request};
use vyrescope::runtime::worker::protocol::{Reply, Response, TestAction, WireError};
use vyrescope::runtime::{GpuWorker, Runtime, RuntimeError};

const BIN: &str = env!("CARGO_BIN_EXE_vyrescope");

fn client() -> GpuWorker {
    GpuWorker::with_exe(BIN)
}

/// True while a process with this pid exists (a zombie counts: it would still be listed).
#[cfg(target_os = "linux")]
fn process_exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// What an in-process runtime says on this machine: Ok on a GPU machine, else the one-line
/// error every GPU request must also give through the worker.
fn in_process() -> Result<String, String> {
    Runtime::open(0)
        .map(|rt| rt.caps().name.clone())
        .map_err(|e| e.to_string())
}

#[test]
fn the_worker_binary_speaks_the_protocol() {
    let mut child = Command::new(BIN)
        .arg("gpu-worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("worker starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut next = || {
        let mut line = String::new();
        out.read_line(&mut line).expect("reads");
        serde_json::from_str::<Message>(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    match next() {
        Message::Hello { protocol, pid } => {
            assert_eq!(
                protocol,
                vyrescope::runtime::worker::protocol::PROTOCOL_VERSION
            );
            assert_eq!(pid, child.id());
        }
        other => panic!("first line must be hello: {other:?}"),
    }
    // A request it cannot read is answered (with a Fix), and the worker keeps serving.
    writeln!(stdin, "{{\"op\":\"no_such_op\"}}").expect("writes");
    match next() {
        Message::Reply(Reply {
            result: Err(WireError::Other { message, fix }),
            exiting: false,
        }) => assert!(!fix.is_empty(), "{message}"),
        other => panic!("{other:?}"),
    }
    let probe = serde_json::to_string(&Request::Probe).expect("encodes");
    writeln!(stdin, "{probe}").expect("writes");
    let reply = next();
    match (in_process(), reply) {
        (
            Err(_),
            Message::Reply(Reply {
                result: Err(WireError::NoDriver { lib, reason }),
                exiting: false,
            }),
        ) => {
            assert_eq!(lib, "libcuda.so.1");
            assert!(!reason.is_empty());
        }
        (
            Err(e),
            Message::Reply(Reply {
                result: Err(WireError::NoDevice { .. }),
                ..
            }),
        ) => {
            assert!(e.contains("no CUDA device"), "{e}");
        }
        (
            Ok(name),
            Message::Reply(Reply {
                result: Ok(Response::Caps(caps)),
                ..
            }),
        ) => {
            assert_eq!(caps.name, name);
        }
        (local, reply) => panic!("in-process {local:?} but the worker replied {reply:?}"),
    }
    let bye = serde_json::to_string(&Request::Shutdown).expect("encodes");
    writeln!(stdin, "{bye}").expect("writes");
    match next() {
        Message::Reply(Reply {
            result: Ok(Response::Bye),
            exiting: true,
        }) => {}
        other => panic!("{other:?}"),
    }
    let status = child.wait().expect("exits");
    assert!(status.success(), "{status:?}");
}

#[test]
fn requests_fail_with_the_in_process_error_without_a_driver() {
    let mut w = client();
    assert_eq!(
        w.workers_started(),
        0,
        "nothing starts before the first request"
    );
    match (in_process(), w.probe()) {
        (Err(local), Err(remote)) => {
            // The same words, line for line: one line of what, one `Fix:` line.
            assert_eq!(remote.to_string(), local);
            assert_eq!(local.lines().count(), 2, "{local}");
            assert!(local
                .lines()
                .nth(1)
                .is_some_and(|l| l.trim_start().starts_with("Fix:")));
        }
        (Ok(name), Ok(caps)) => assert_eq!(caps.name, name),
        (local, remote) => panic!("in-process {local:?}, through the worker {remote:?}"),
    }
    // Later requests are served by the same worker, with the same answer.
    let pid = w.pid().expect("a worker is running");
    let again = w.stats().map(|_| ()).map_err(|e| e.to_string());
    if let Err(local) = in_process() {
        assert_eq!(again, Err(local));
    }
    assert_eq!(w.pid(), Some(pid));
    assert_eq!(w.workers_started(), 1);
}

#[test]
fn a_worker_that_dies_is_reported_and_replaced() {
    let mut w = client();
    // Start one (any request does), then make it exit without replying.
    let _ = w.stats();
    let first = w.pid().expect("running");
    let e = w
        .test_action(TestAction::Exit { code: 3 })
        .expect_err("a dead worker is an error");
    let text = e.to_string();
    assert!(
        matches!(e, RuntimeError::WorkerDied { pid, .. } if pid == first),
        "{text}"
    );
    assert!(
        text.contains(&format!("pid {first}")) && text.contains("exit code 3"),
        "{text}"
    );
    assert!(
        text.contains("next GPU request starts a fresh worker"),
        "{text}"
    );
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l.trim_start().starts_with("Fix:")),
        "{text}"
    );
    assert_eq!(w.pid(), None);
    assert!(w
        .last_end()
        .is_some_and(|end| end.pid == first && end.why.contains("exit code 3")));
    #[cfg(target_os = "linux")]
    assert!(!process_exists(first), "the dead worker was reaped");

    // The next request starts a fresh worker and gets a real answer.
    let r = w.stats().map(|_| ()).map_err(|e| e.to_string());
    if let Err(local) = in_process() {
        assert_eq!(r, Err(local));
    } else {
        assert!(r.is_ok(), "{r:?}");
    }
    let second = w.pid().expect("a fresh worker");
    assert_ne!(second, first);
    assert_eq!(w.workers_started(), 2);

    // A signal is named.
    let e = w.test_action(TestAction::Abort).expect_err("abort");
    let text = e.to_string();
    assert!(text.contains("signal 6 (SIGABRT)"), "{text}");
    assert!(text.contains(&format!("pid {second}")), "{text}");
    let _ = w.stats();
    assert_eq!(w.workers_started(), 3);
}

#[test]
fn a_hung_worker_is_killed_within_the_margin() {
    let mut w = client();
    w.set_hang_margin(Duration::from_millis(300));
    let _ = w.stats();
    let pid = w.pid().expect("running");
    let t = Instant::now();
    let e = w
        .test_action(TestAction::Hang { budget_ms: 200 })
        .expect_err("a hang is an error");
    let waited = t.elapsed();
    let text = e.to_string();
    assert!(
        matches!(e, RuntimeError::WorkerHung { waited_ms: 500, .. }),
        "{text}"
    );
    assert!(
        text.contains("within 500 ms") && text.contains("killed"),
        "{text}"
    );
    assert!(
        text.lines().last().is_some_and(|l| l.contains("Fix:")),
        "{text}"
    );
    // Budget + margin, plus scheduling slack on a loaded 2-core machine.
    assert!(
        waited >= Duration::from_millis(450) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    #[cfg(target_os = "linux")]
    assert!(
        !process_exists(pid),
        "the hung worker was killed and reaped"
    );
    assert!(w
        .last_end()
        .is_some_and(|end| end.pid == pid && end.why.contains("killed")));
    // And the next request is served by a fresh worker.
    let _ = w.stats();
    assert!(w.pid().is_some_and(|p| p != pid));
    assert_eq!(w.workers_started(), 2);
}

#[test]
fn dropping_the_client_reaps_its_worker() {
    let mut w = client();
    let _ = w.stats();
    let pid = w.pid().expect("running");
    #[cfg(target_os = "linux")]
    assert!(process_exists(pid));
    let t = Instant::now();
    drop(w);
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "an idle worker ends at once"
    );
    #[cfg(target_os = "linux")]
    assert!(!process_exists(pid), "no zombie left behind");
}

#[test]
fn a_missing_worker_binary_is_a_clear_error() {
    let mut w = GpuWorker::with_exe("/nonexistent/vyrescope");
    let e = w.probe().expect_err("cannot start");
    let text = e.to_string();
    assert!(
        text.contains("cannot start the GPU worker process"),
        "{text}"
    );
    assert!(text.contains("Fix:"), "{text}");
    assert_eq!(w.pid(), None);
}

#[test]
fn a_malformed_program_is_reported_through_the_worker_with_its_location() {
    let mut w = client();
    let mut job = vyrescope::runtime::worker::protocol::RunJob::new(
        "{\"format\": 1, \"name\": \"k\",\n \"workgroup_size\": [32, 1, 1], \"buffers\": [], \"body\": [{\"lett\": \"x\"}]}".into(),
        "broken.json",
        std::path::PathBuf::from("."),
    );
    job.request.timeout = Some(std::time::Duration::from_millis(1000));
    let e = w.run_job(&job, &mut |_| {}).expect_err("does not parse");
    let text = e.to_string();
    assert!(text.starts_with("broken.json:2:"), "{text}");
    assert!(text.contains("body[0]") && text.contains("Fix:"), "{text}");
    // Nothing about the worker went wrong: it keeps serving.
    assert_eq!(w.workers_started(), 1);
    assert!(w.pid().is_some());
}

/// The inspector's GPU seam goes through a worker process too, and says what an in-process
/// runtime would say.
#[test]
fn the_inspector_backend_dispatches_through_the_worker() {
    use vyrescope::emit::EmitOptions;
    use vyrescope::tui::gpu::{Gpu, WorkerGpu};
    let path = std::path::Path::new("fixtures/programs/vadd_f32.json");
    let program = vyrescope::ir::load_program(path).expect("fixture");
    let opts = EmitOptions {
        sm: 80,
        workgroup_size: [128, 1, 1],
        ..EmitOptions::for_program(&program)
    };
    let mut gpu = WorkerGpu::new();
    let probe = gpu.probe();
    let files = vyrescope::tui::gpu::InputFolder {
        base: "fixtures/programs".into(),
        root: None,
    };
    let run = gpu.dispatch(&program, &files, &opts);
    match in_process() {
        Err(local) => {
            assert_eq!(probe.map_err(String::from), Err(local.clone()));
            assert_eq!(run.map(|_| ()).map_err(String::from), Err(local.clone()));
            assert_eq!(gpu.telemetry().map_err(String::from), Err(local.clone()));
            assert_eq!(gpu.cache_stats().map_err(String::from), Err(local));
        }
        Ok(_) => {
            let caps = probe.expect("probe");
            if caps.cc_major * 10 + caps.cc_minor >= 80 {
                let r = run.expect("dispatch");
                assert_eq!((r.sm, r.workgroup), (80, [128, 1, 1]), "target sm honoured");
                assert!(r.parity.is_some_and(|p| p.ok));
            }
        }
    }
}

/// A stand-in worker: a script that says `hello` (a line of protocol version `version`),
/// then answers the first request with `answer` and waits for the end of its input.
fn fake_worker(dir: &std::path::Path, version: u32, answer: &str) -> GpuWorker {
    let hello = serde_json::to_string(&Message::Hello {
        protocol: version,
        pid: 1,
    })
    .expect("encodes");
    let exe = dir.join("fake-worker");
    // JSON has no single quotes of its own here, so single-quoting keeps each line whole.
    crate::support::script::sh_script(
        &exe,
        &format!(
            "printf '%s\\n' '{hello}'\nread -r request\nprintf '%s\\n' '{answer}'\ncat >/dev/null"
        ),
    );
    GpuWorker::with_exe(exe)
}

/// A worker binary of another build (another protocol version) is refused at the handshake,
/// before it is asked anything, with both versions named and a `Fix:`; it is stopped.
#[test]
fn a_worker_of_another_protocol_version_is_refused_at_the_handshake() {
    use vyrescope::runtime::worker::protocol::PROTOCOL_VERSION;
    let dir = tempfile::tempdir().expect("tempdir");
    for other in [PROTOCOL_VERSION - 1, PROTOCOL_VERSION + 7] {
        let mut w = fake_worker(dir.path(), other, "unused");
        let e = w.probe().expect_err("refused");
        let text = e.to_string();
        assert!(matches!(e, RuntimeError::Worker(_)), "{text}");
        assert!(
            text.contains(&format!("protocol version {other}"))
                && text.contains(&format!("speaks version {PROTOCOL_VERSION}")),
            "{text}"
        );
        assert!(
            text.lines()
                .last()
                .is_some_and(|l| l.trim_start().starts_with("Fix:")),
            "{text}"
        );
        assert_eq!(w.pid(), None, "the worker was stopped");
        assert!(w
            .last_end()
            .is_some_and(|end| end.why.contains(&format!("protocol {other}"))));
    }
}

/// An answer that is not a message of this protocol (garbage, an unknown kind, a reply of
/// the wrong kind) is an error naming the request, never a panic; the worker is stopped
/// when it cannot be understood, and the error says how to fix it.
#[test]
fn an_unknown_or_garbled_answer_is_an_error() {
    use vyrescope::runtime::worker::protocol::PROTOCOL_VERSION;
    let dir = tempfile::tempdir().expect("tempdir");
    let bye = serde_json::to_string(&Message::Reply(Reply {
        result: Ok(Response::Bye),
        exiting: false,
    }))
    .expect("encodes");
    for (answer, says) in [
        ("this is not a message", "cannot read"),
        (
            "{\"reply\":{\"result\":{\"Ok\":{\"warp_drive\":{}}},\"exiting\":false}}",
            "cannot read",
        ),
        (
            "{\"reply\":{\"result\":{\"Ok\":{\"caps\":{\"name\":7}}},\"exiting\":false}}",
            "cannot read",
        ),
        (bye.as_str(), "unexpected"),
    ] {
        let mut w = fake_worker(dir.path(), PROTOCOL_VERSION, answer);
        let e = w.probe().expect_err("not an answer to a probe");
        let text = e.to_string();
        assert!(text.contains(says), "{answer}: {text}");
        assert!(text.contains("Fix:"), "{answer}: {text}");
        if says == "cannot read" {
            assert!(text.contains("the device probe"), "{text}");
            assert_eq!(w.pid(), None, "an unreadable worker is stopped");
        }
    }
}

/// The harness's jobs travel through the real worker binary as typed requests: without a
/// GPU each answers with the in-process runtime's error, with one it records and runs.
#[test]
fn harness_jobs_run_through_the_worker_binary() {
    use vyrescope::harness::worker_messages::{JobsClient, PipelineJob, TimelineJob};
    let mut w = client();
    let program = std::fs::read_to_string("fixtures/programs/vadd_f32.json").expect("fixture");
    let timeline = w.record_timeline(&TimelineJob {
        program,
        file: "vadd_f32.json".into(),
        base_dir: "fixtures/programs".into(),
        root: None,
        workgroup: [128, 1, 1],
        timeout_ms: Some(10_000),
    });
    let pipeline = w.run_pipeline(
        &PipelineJob {
            file: "fixtures/pipelines/reduce_total_normalize.json".into(),
            root: None,
            sync: Default::default(),
            repeat: 1,
            timeout_ms: Some(10_000),
            timeline: false,
            fault_after: false,
        },
        &mut |_| {},
    );
    match in_process() {
        Err(local) => {
            assert_eq!(timeline.map_err(|e| e.to_string()), Err(local.clone()));
            assert_eq!(pipeline.map(|_| ()).map_err(|e| e.to_string()), Err(local));
        }
        Ok(_) => {
            let text = timeline.expect("recorded");
            assert!(vyrescope::tui::timeline::from_recorded(&text).is_ok());
            let (report, _) = pipeline.expect("ran");
            assert!(report.verified(), "{report:?}");
        }
    }
    assert_eq!(w.workers_started(), 1, "errors of jobs keep the worker");
}

/// `profile`'s GPU work is a job of the worker too: without a GPU the job answers with the
/// in-process runtime's error (a `Fix:` included) and keeps the worker; with one it gives an
/// instrumented run per kernel (a pipeline's per step) from the same device.
#[test]
fn the_profile_job_runs_through_the_worker_binary() {
    use vyrescope::harness::worker_messages::{JobsClient, ProfileJob};
    let mut w = client();
    let job = |file: &str| ProfileJob {
        file: file.into(),
        repeat: 3,
        timeout_ms: Some(10_000),
    };
    let program = w.profile(&job("fixtures/programs/vadd_f32.json"));
    let pipeline = w.profile(&job("fixtures/pipelines/reduce_total_normalize.json"));
    match in_process() {
        Err(local) => {
            assert!(local.contains("Fix:"), "{local}");
            assert_eq!(program.map_err(|e| e.to_string()), Err(local.clone()));
            assert_eq!(pipeline.map_err(|e| e.to_string()), Err(local));
        }
        Ok(device) => {
            let runs = program.expect("profiled");
            assert_eq!(runs.len(), 1, "{runs:?}");
            assert!(runs[0].table.iter().any(|&c| c > 0), "{runs:?}");
            assert_eq!(runs[0].device, device);
            let steps = pipeline.expect("profiled");
            assert!(steps.len() > 1, "one run per step: {steps:?}");
        }
    }
    // A file that is not there is the job's own error, from the same loader as `profile`'s.
    let missing = w.profile(&job("fixtures/programs/no_such_program.json"));
    if in_process().is_ok() {
        let e = missing.expect_err("no file").to_string();
        assert!(
            e.contains("no_such_program.json") && e.contains("Fix:"),
            "{e}"
        );
    }
    assert_eq!(w.workers_started(), 1, "errors of jobs keep the worker");
}
