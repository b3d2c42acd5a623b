//! Without a CUDA driver every GPU command fails with one clear error (message + Fix line),
//! exit code 1 and no panic; on a machine with a driver the same commands must not say so.

fn vyrescope(args: &[&str]) -> (i32, String, String) {
    crate::support::cli::run(args)
}

#[test]
fn gpu_commands_fail_cleanly_without_a_driver() {
    let fixture = "fixtures/programs/vadd_f32.json";
    let out = tempfile::tempdir().unwrap();
    let out = out.path().to_str().unwrap();
    let csv = format!("{out}/occ.csv");
    let commands: &[&[&str]] = &[
        &["probe"],
        &["probe", "--json"],
        &["selftest", "--fixtures", "fixtures/programs"],
        &["tune", fixture],
        &["run", fixture, "--backend", "cuda", "--verify"],
        &[
            "run",
            fixture,
            "--backend",
            "cuda",
            "--no-device-timing",
            "--sm",
            "80",
        ],
        &["fault-test"],
        &["selftest", "--fuzz", "3", "--seed", "7", "--out", out],
        &["selftest", "--root", "fixtures", "--no-faults"],
        // Every launch path of the runtime: a pipeline's launch list, a Program's and a
        // pipeline's timeline mode, the bench harness and the occupancy recorder.
        &[
            "run",
            "fixtures/pipelines/softmax.json",
            "--backend",
            "cuda",
        ],
        &["run", fixture, "--backend", "cuda", "--timeline"],
        &[
            "run",
            "fixtures/pipelines/softmax.json",
            "--backend",
            "cuda",
            "--timeline",
        ],
        &["bench-kernel", fixture],
        &["occupancy-record", "--out", &csv],
    ];
    for &args in commands {
        let (code, stdout, stderr) = vyrescope(args);
        assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
        // With --json the error is JSON on stdout, with the same exit code.
        let (stdout, stderr) = match serde_json::from_str::<serde_json::Value>(stdout.trim()) {
            Ok(v) if args.contains(&"--json") && v.get("error").is_some() => (
                String::new(),
                format!(
                    "error: {}\n  Fix: {}\n",
                    v["error"].as_str().unwrap_or_default(),
                    v["fix"].as_str().unwrap_or_default()
                ),
            ),
            _ => (stdout, stderr),
        };
        if stderr.starts_with("error: no CUDA driver found") {
            let lines: Vec<&str> = stderr.lines().collect();
            assert_eq!(lines.len(), 2, "{args:?}: {stderr}");
            assert!(
                lines[0].starts_with("error: no CUDA driver found (libcuda.so.1): "),
                "{}",
                lines[0]
            );
            assert!(
                lines[1].starts_with("  Fix: run on a machine with an NVIDIA driver"),
                "{}",
                lines[1]
            );
            assert_eq!(code, 1, "{args:?}");
            assert!(stdout.is_empty(), "{args:?} printed {stdout}");
        } else {
            // A machine with a driver: the probe at least must work.
            if args == ["probe", "--json"] {
                assert_eq!(code, 0, "{stderr}");
                assert!(stdout.contains("\"source\": \"probed\""));
            }
            if args.starts_with(&["selftest", "--fuzz"]) {
                assert!(stdout.contains("fuzz: 3 programs"), "{stdout}");
            }
        }
    }
}

#[test]
fn offline_features_work_without_a_driver() {
    let (code, _, stderr) = vyrescope(&["check", "fixtures/programs/vadd_f32.json"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = vyrescope(&["emit", "fixtures/programs/vadd_f32.json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(".entry vadd_f32"));
}

#[test]
fn bench_kernel_refuses_bad_sizes_and_samples_before_touching_the_gpu() {
    // Checked before the driver is opened, so these read the same with or without a GPU.
    let (code, _, err) = vyrescope(&[
        "bench-kernel",
        "fixtures/programs/histogram_u8.json",
        "--sample",
        "4",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not independent"), "{err}");
    assert!(err.contains("Fix: leave out --sample"), "{err}");
    let (code, _, err) = vyrescope(&[
        "bench-kernel",
        "fixtures/programs/stencil5_f32.json",
        "--scale",
        "4096",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("too large") && err.contains("Fix:"), "{err}");
    for bad in [
        &["--scale", "0"][..],
        &["--scale", "2", "--elements", "64"],
        &["--sample", "2", "--no-verify"],
    ] {
        let mut args = vec!["bench-kernel", "fixtures/programs/stencil5_f32.json"];
        args.extend_from_slice(bad);
        let (code, _, err) = vyrescope(&args);
        assert_eq!(code, 2, "{bad:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
