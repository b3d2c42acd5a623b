//! Tests of the worker protocol: every request and message variant round-trips through one
//! line with random contents, lines of another protocol are parse errors, and runtime errors
//! keep their words across the pipe.

use std::path::PathBuf;

use proptest::prelude::{prop_oneof, Just, Strategy};
use serde::{Deserialize, Serialize};

use super::protocol::*;
use crate::inputs::LaunchShape;
use crate::runtime::cache::CacheReport;
use crate::runtime::dispatch::{DispatchReport, LaunchTiming};
use crate::runtime::jit::KernelInfo;
use crate::runtime::parity::ParityReport;
use crate::runtime::{RuntimeError, Telemetry};

fn roundtrip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(v: &T) {
    let mut buf = Vec::new();
    write_line(&mut buf, v).expect("writes");
    assert_eq!(buf.iter().filter(|&&b| b == b'\n').count(), 1, "one line");
    let line = read_line(&mut &buf[..]).expect("reads").expect("a line");
    let back: T = serde_json::from_str(&line).expect("parses");
    assert_eq!(&back, v);
}

/// Which variant a request is. No wildcard: a new variant does not compile until the
/// round-trip test below makes one.
fn request_kind(r: &Request) -> usize {
    match r {
        Request::Probe => 0,
        Request::Run(_) => 1,
        Request::Resources(_) => 2,
        Request::Tune(_) => 3,
        Request::Stats => 4,
        Request::Job(j) => match *j {},
        Request::RawFault { .. } => 5,
        Request::Test { .. } => 6,
        Request::Shutdown => 7,
    }
}

/// Which variant a message is (the reply by its response or error), as
/// [`request_kind`].
fn message_kind(m: &Message) -> usize {
    match m {
        Message::Hello { .. } => 0,
        Message::Progress(_) => 1,
        Message::Reply(r) => match &r.result {
            Ok(Response::Caps(_)) => 2,
            Ok(Response::Ran(_)) => 3,
            Ok(Response::Resources(_)) => 4,
            Ok(Response::Tuned(_)) => 5,
            Ok(Response::Stats(_)) => 6,
            Ok(Response::Done(d)) => match *d {},
            Ok(Response::Launched(_)) => 7,
            Ok(Response::Bye) => 8,
            Err(WireError::NoDriver { .. }) => 9,
            Err(WireError::NoDevice { .. }) => 10,
            Err(WireError::Fault { .. }) => 11,
            Err(WireError::Timeout { .. }) => 12,
            Err(WireError::Other { .. }) => 13,
        },
    }
}

/// Text with what JSON must escape (quotes, backslashes, newlines, control and non-ASCII
/// characters) in random places.
fn awkward_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("\"".to_string()),
            Just("\\".to_string()),
            Just("\n".to_string()),
            Just("\u{1}".to_string()),
            Just("ü€𝄞".to_string()),
            "[a-z0-9 ._/-]{0,12}",
        ],
        0..8,
    )
    .prop_map(|parts| parts.concat())
}

fn requests(text: String, n: u64, wg: [u32; 3]) -> Vec<Request> {
    let mut job = RunJob::new(text.clone(), &text, PathBuf::from(&text));
    job.request.workgroup = Some(wg);
    job.request.sm = Some(wg[0] % 100);
    job.request.timeout = Some(std::time::Duration::from_millis(n % 1_000_000));
    job.request.device_timing = n.is_multiple_of(2);
    job.request.repeat = wg[1];
    vec![
        Request::Probe,
        Request::Run(job),
        Request::Resources(ResourcesJob {
            ptx: text.clone(),
            kernel: text.clone(),
            lineinfo: n.is_multiple_of(3),
        }),
        Request::Tune(TuneJob {
            program: text.clone(),
            file: text.clone(),
            base_dir: PathBuf::from(&text),
            root: (n % 2 == 1).then(|| PathBuf::from(&text)),
            sm: Some(wg[2]),
            candidates: vec![wg, [wg[2], wg[1], wg[0]]],
            repeat: wg[0],
            timeout_ms: Some(n),
        }),
        Request::Stats,
        Request::RawFault {
            case: FaultCase::Spin { ns: n },
            timeout_ms: Some(n / 3),
        },
        Request::RawFault {
            case: FaultCase::IllegalAddress,
            timeout_ms: None,
        },
        Request::RawFault {
            case: FaultCase::Trap,
            timeout_ms: Some(n),
        },
        Request::Test {
            action: TestAction::Hang { budget_ms: n },
        },
        Request::Test {
            action: TestAction::Exit {
                code: (n % 256) as i32,
            },
        },
        Request::Test {
            action: TestAction::Abort,
        },
        Request::Shutdown,
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Every request variant, with random text and numbers, is one line that parses back
    /// to itself.
    #[test]
    fn every_request_round_trips(
        text in awkward_text(),
        n in proptest::prelude::any::<u64>(),
        wg in proptest::array::uniform3(1u32..=1024),
    ) {
        let all = requests(text, n, wg);
        let kinds: std::collections::BTreeSet<usize> = all.iter().map(request_kind).collect();
        proptest::prop_assert_eq!(kinds.len(), 8, "every request variant is made");
        for r in &all {
            roundtrip(r);
        }
    }
}

fn messages(text: String, n: u64, ms: f64) -> Vec<Message> {
    let n32 = (n % u64::from(u32::MAX)) as u32;
    let stats = StatsSnapshot {
        cache: CacheReport {
            ptx: Default::default(),
            module: crate::runtime::CacheStats {
                hits: n,
                saved_ms: ms,
                ..Default::default()
            },
            driver_cache_path: Some(text.clone()),
            driver_cache_user_set: n.is_multiple_of(2),
        },
        telemetry: Telemetry {
            launches: n / 7,
            device_ms_max: ms / 3.0,
            ..Default::default()
        },
    };
    let parity = ParityReport {
        mode: text.clone(),
        compared: n,
        mismatches: n / 2,
        first: vec![crate::runtime::Mismatch {
            buffer: text.clone(),
            index: n / 5,
            gpu: format!("{ms}"),
            reference: text.clone(),
        }],
        max_ulps_seen: n / 11,
        order_bounded: n / 13,
        passed: n % 2 == 1,
    };
    let shape = LaunchShape {
        workgroup_size: [n32 % 1024 + 1, 1, 2],
        grid: [n32, 3, 1],
    };
    let info = KernelInfo {
        resources: Default::default(),
        ptx_version: n32 % 90,
        binary_version: n32 % 100,
        max_dynamic_smem: n32,
        jit_ms: ms,
        driver_jit_ms: ms / 2.0,
        info_log: text.clone(),
        cached: n.is_multiple_of(5),
    };
    let outcome = RunOutcome {
        program: text.clone(),
        kernel: text.clone(),
        shape,
        sm: n32 % 120,
        device: text.clone(),
        device_sm: n32 % 100,
        dispatch: DispatchReport {
            kernel: text.clone(),
            grid: shape.grid,
            block: shape.workgroup_size,
            cooperative: n.is_multiple_of(3),
            device_ms: Some(crate::runtime::TimingStats::of(&[ms, ms * 2.0, ms / 2.0])),
            device_samples_ms: vec![ms, ms * 2.0, ms / 2.0],
            upload_ms: ms / 4.0,
            enqueue_ms: ms / 5.0,
            wait_ms: ms / 6.0,
            readback_ms: ms / 7.0,
            full_ms: ms,
            h2d_bytes: n,
            d2h_bytes: n / 2,
        },
        info: info.clone(),
        ptx_cached: n.is_multiple_of(7),
        parity: Some(parity),
        outputs: vec![OutputDigest {
            buffer: text.clone(),
            elem: "f32".into(),
            len: n as usize,
            checksum: format!("{n:016x}"),
        }],
        stats: stats.clone(),
    };
    let caps = crate::occupancy::profiles::bundled(crate::occupancy::profiles::DEFAULT_PROFILE)
        .and_then(Result::ok)
        .map(|mut c| {
            c.name = text.clone();
            c.sm_count = n32 % 200 + 1;
            c
        });
    let reply = |result| {
        Message::Reply(Reply {
            result,
            exiting: n.is_multiple_of(2),
        })
    };
    let mut all = vec![
        Message::Hello {
            protocol: n32,
            pid: n32 / 3,
        },
        Message::Progress(Progress {
            done: n32 / 2,
            total: n32,
            device: n % 2 == 1,
            budget_ms: Some(n),
        }),
        reply(Ok(Response::Ran(Box::new(outcome)))),
        reply(Ok(Response::Resources(Box::new(info)))),
        reply(Ok(Response::Stats(Box::new(stats)))),
        reply(Ok(Response::Tuned(vec![
            TuneOutcome {
                workgroup: [n32 % 1024 + 1, 1, 1],
                result: Ok(TunePoint {
                    median_ms: Some(ms),
                    occupancy_pct: ms % 100.0,
                    parity_ok: n.is_multiple_of(2),
                }),
            },
            TuneOutcome {
                workgroup: [2048, 1, 1],
                result: Err(TuneFailure {
                    message: text.clone(),
                    fix: format!("{text} ({n})"),
                }),
            },
        ]))),
        reply(Ok(Response::Launched(LaunchTiming {
            device_ms: Some(ms),
            enqueue_ms: ms / 2.0,
            wait_ms: ms / 3.0,
        }))),
        reply(Ok(Response::Bye)),
        reply(Err(WireError::Fault {
            kernel: text.clone(),
            what: text.clone(),
            driver: format!("{text} ({n})"),
            fix: text.clone(),
        })),
        reply(Err(WireError::NoDriver {
            lib: text.clone(),
            reason: text.clone(),
        })),
        reply(Err(WireError::NoDevice {
            ordinal: n32,
            detail: text.clone(),
        })),
        reply(Err(WireError::Timeout {
            kernel: text.clone(),
            timeout_ms: n,
            recover_ms: ms,
        })),
        reply(Err(WireError::Other {
            message: text.clone(),
            fix: text,
        })),
    ];
    all.extend(caps.map(|c| reply(Ok(Response::Caps(Box::new(c))))));
    all
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Every message variant (each response and each error of a reply), with random text
    /// and numbers, is one line that parses back to itself.
    #[test]
    fn every_message_round_trips(
        text in awkward_text(),
        n in proptest::prelude::any::<u64>(),
        ms in 0.0f64..1e9,
    ) {
        let all = messages(text, n, ms);
        let kinds: std::collections::BTreeSet<usize> = all.iter().map(message_kind).collect();
        proptest::prop_assert_eq!(kinds.len(), 14, "every message variant is made");
        for m in &all {
            roundtrip(m);
        }
    }
}

/// A line that is not a message of this protocol (garbage, another shape, an answer of
/// an unknown kind) is an error from the parser, never a panic.
#[test]
fn lines_of_another_protocol_are_errors() {
    for line in [
        "",
        "not json",
        "{\"hello\":{\"protocol\":\"three\"}}",
        "{\"reply\":{\"result\":{\"Ok\":{\"warp_drive\":1}},\"exiting\":false}}",
        "{\"reply\":{\"result\":{\"Ok\":{\"done\":{}}},\"exiting\":false}}",
        "[1, 2, 3]",
        "{\"progress\":{\"done\":-1}}",
    ] {
        assert!(serde_json::from_str::<Message>(line).is_err(), "{line}");
    }
    for line in [
        "{\"op\":\"job\"}",
        "{\"op\":\"run\"}",
        "{\"op\":\"warp\"}",
        "{}",
    ] {
        assert!(serde_json::from_str::<Request>(line).is_err(), "{line}");
    }
}

#[test]
fn runtime_errors_keep_their_words_across_the_pipe() {
    let e = RuntimeError::NoDriver {
        lib: "libcuda.so.1".into(),
        reason: "nope".into(),
    };
    let w = WireError::from_runtime(&e);
    assert!(!w.is_sticky());
    assert!(matches!(&w, WireError::NoDriver { reason, .. } if reason == "nope"));
    let err = crate::runtime::DriverError {
        call: "cuStreamSynchronize",
        code: 700,
        name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
        text: "an illegal memory access was encountered".into(),
    };
    let w = WireError::from_runtime(&RuntimeError::FaultUnrecovered {
        kernel: "k".into(),
        what: "illegal memory address".into(),
        err: Box::new(err),
        recovery: "x".into(),
    });
    assert!(w.is_sticky());
    match w {
        WireError::Fault { driver, fix, .. } => {
            assert!(driver.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{driver}");
            assert!(!fix.is_empty());
        }
        other => panic!("{other:?}"),
    }
    let w = WireError::from_runtime(&RuntimeError::Other(crate::util::Problem::new("boom", "x")));
    assert_eq!(
        w,
        WireError::Other {
            message: "boom".into(),
            fix: "x".into()
        }
    );
}

#[test]
fn overlong_or_binary_lines_are_errors() {
    let mut bad: &[u8] = b"\xff\xfe\n";
    assert!(read_line(&mut bad).is_err());
    let mut empty: &[u8] = b"";
    assert_eq!(read_line(&mut empty).expect("eof"), None);
}
