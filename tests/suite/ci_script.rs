//! `.ci/run` prints its `total:` line even when the tests fail, and still exits with cargo's
//! failure status. Run against stand-ins for cargo, python3 (the ptxas and nvdisasm wheels) and tmux in a
//! private folder, so nothing is installed or built.

use std::path::Path;
use std::process::Command;

fn script(dir: &Path, name: &str, body: &str) {
    crate::support::script::sh_script(&dir.join(name), body);
}

fn run_ci(cargo_exit: i32) -> (i32, String) {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let ptxas = bin.join("fake-ptxas");
    script(
        &bin,
        "fake-ptxas",
        "echo 'Cuda compilation tools, release 13.0'",
    );
    // A stand-in nvdisasm where `pip show -f` says the wheel put it.
    let tools = d.path().join("tools");
    std::fs::create_dir_all(tools.join("nv/bin")).unwrap();
    script(
        &tools.join("nv/bin"),
        "nvdisasm",
        "echo 'nvdisasm: NVIDIA (R) CUDA disassembler'",
    );
    script(
        &bin,
        "python3",
        &format!(
            "case \"$*\" in\n\
               *'pip show -f'*) echo 'Location: {}'; echo '  nv/bin/nvdisasm' ;;\n\
               *'pip show'*) echo 'Version: 13.2.78' ;;\n\
               *'pip install'*) exit 0 ;;\n\
               *) cat >/dev/null; echo {} ;;\n\
             esac",
            tools.display(),
            ptxas.display()
        ),
    );
    script(&bin, "tmux", "exit 0");
    // A stand-in test executable for the pass without ptxas and nvdisasm: it reports what it
    // was given (the tool variables must be gone, skipping allowed) and one skip.
    let exe = bin.join("suite-test-exe");
    script(
        &bin,
        "suite-test-exe",
        "echo \"tools: ${VYRESCOPE_PTXAS:-unset} ${VYRESCOPE_NVDISASM:-unset} allow=${VYRESCOPE_ALLOW_MISSING_TOOLS:-0}\"\n\
         printf 'ptxas\\tsome check\\n' >> \"$VYRESCOPE_SKIP_LOG\"\n\
         echo 'test result: ok. 5 passed; 0 failed; 0 ignored'",
    );
    // The program the integration tests drive is in cargo's list too (its target is tested,
    // its profile is not a test one); it is no test harness and rejects `--skip` (exit 2).
    let cli = bin.join("vyrescope");
    script(
        &bin,
        "vyrescope",
        "echo \"error: unexpected argument '--skip' found\"; exit 2",
    );
    script(
        &bin,
        "cargo",
        &format!(
            "case \"$*\" in\n\
               *--message-format=json*) echo '{{\"target\":{{\"kind\":[\"bin\"],\"test\":true}},\"profile\":{{\"test\":false}},\"executable\":\"{}\"}}'; echo '{{\"profile\":{{\"test\":true}},\"executable\":\"{}\"}}'; exit 0 ;;\n\
             esac\n\
             echo 'test result: ok. 7 passed; 0 failed; 0 ignored'\n\
             echo 'test result: FAILED. 3 passed; 2 failed; 0 ignored'\n\
             exit {cargo_exit}",
            cli.display(),
            exe.display()
        ),
    );
    let out = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run"))
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("HOME", d.path())
        .env("TMPDIR", d.path())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn total_line_is_printed_when_tests_fail_and_the_exit_status_is_kept() {
    // cargo runs four times (the default build, `--features vyre`, the capture crate, the
    // dispatch benchmark crate), then the built test executables once more without the
    // tools; the total covers all five.
    let (code, text) = run_ci(101);
    assert_eq!(code, 101, "{text}");
    assert!(text.contains("total: 45 passed, 8 failed"), "{text}");
    let (code, text) = run_ci(0);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("total: 45 passed, 8 failed"), "{text}");
    assert!(text.contains("cargo test failed") == (code != 0), "{text}");
}

#[test]
fn the_suite_runs_once_more_without_ptxas_and_nvdisasm_and_counts_its_skips() {
    let (_, text) = run_ci(0);
    assert!(text.contains("tools: unset unset allow=1"), "{text}");
    assert!(
        text.contains(
            "without ptxas and nvdisasm: 1 tool checks skipped (1 for ptxas, 0 for nvdisasm)"
        ),
        "{text}"
    );
}
