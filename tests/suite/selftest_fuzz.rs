//! `selftest --fuzz` without a GPU: the Programs it writes for a mismatch replay with
//! `vyrescope run FILE`, giving the interpreter's results bit for bit, and the option's
//! arguments are checked before any GPU work.

use std::path::Path;
use std::process::Command;

use vyrescope::harness::fuzz::{fuzz_program, write_case};
use vyrescope::inputs::prepare;
use vyrescope::report::OutputSummary;

#[test]
fn written_fuzz_programs_replay_with_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut nonzero = 0;
    for seed in [3u64, 0x5eed, 0x0123_4567_89ab_cdef] {
        let p = fuzz_program(seed);
        let file = write_case(dir.path(), seed, &p).unwrap();
        // What the interpreter gives in-process.
        let prepared = prepare(&p, Path::new("."), None, None).unwrap();
        let mut bufs = prepared.buffers;
        if vyrescope::interp::run(&p, &prepared.shape, &mut bufs).is_err() {
            continue;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
            .args([
                "run",
                file.to_str().unwrap(),
                "--backend",
                "reference",
                "--json",
            ])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "seed {seed}: {stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut compared = 0;
        for b in bufs
            .iter()
            .filter(|b| b.access.is_writable() && b.access.is_host())
        {
            let want = OutputSummary::of(b);
            nonzero += b.data.iter().any(|&x| x != 0) as usize;
            assert_eq!(
                v["outputs"][&b.name]["checksum"], want.checksum,
                "seed {seed} buffer {}",
                b.name
            );
            compared += 1;
        }
        assert!(compared >= 8, "seed {seed}: {compared} outputs");
    }
    // Real data came out, not zeroed buffers only.
    assert!(nonzero > 0);
}

#[test]
fn fuzz_options_need_fuzz() {
    let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args(["selftest", "--seed", "3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--fuzz"), "{stderr}");
}
