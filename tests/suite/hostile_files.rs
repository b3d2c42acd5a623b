//! Hostile files and processes (issue 13, items 4-7, 9-11): non-regular or huge files are
//! refused without blocking or allocating, `file` inputs stay inside the Program's folder
//! unless `--root` widens it, writes are atomic and never go through links, ptxas leaves no
//! temp files, a closed stdout pipe ends the process quietly, and Program text reaches the
//! terminal without raw escape sequences. Every file test works in its own temp folder.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    crate::support::cli::command()
}

/// Runs the binary with a deadline (a blocked process fails the test instead of hanging it).
fn run_with(mut cmd: Command, limit: Duration) -> (i32, String, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("vyrescope {cmd:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn vyrescope(args: &[&str]) -> (i32, String, String) {
    let mut c = bin();
    c.args(args);
    run_with(c, Duration::from_secs(60))
}

/// A fresh, empty scratch folder for one test.
fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vyrescope-hostile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok, "mkfifo {}", p.display());
}

/// Pseudo-random f32 data (xorshift), so a wrong read cannot pass as zeros.
fn random_f32_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32 - 0.5).to_le_bytes()
        })
        .collect()
}

/// A Program copying `a` (read, from `file`) into `c`; `n` elements.
fn copy_program(file: &str, n: usize) -> String {
    format!(
        r#"{{"format": 1, "name": "copy", "workgroup_size": [64, 1, 1],
  "buffers": [
    {{"name": "a", "binding": 0, "access": "read", "type": "f32"}},
    {{"name": "c", "binding": 1, "access": "read_write", "type": "f32"}}],
  "body": [
    {{"let": "i", "value": {{"gid": "x"}}}},
    {{"if": {{"lt": ["i", {{"len": "c"}}]}}, "then": [
      {{"store": "c", "index": "i", "value": {{"load": "a", "index": "i"}}}}]}}],
  "run": {{"elements": {n}, "inputs": {{"a": {{"file": {file:?}}}}}}}}}"#
    )
}

fn fnv(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

#[test]
fn a_fifo_or_device_as_program_file_is_refused_at_once() {
    let d = scratch("fifo-program");
    let fifo = d.join("p.json");
    mkfifo(&fifo);
    for cmd in ["check", "print", "emit", "run"] {
        let mut c = bin();
        c.arg(cmd).arg(&fifo);
        let (code, out, err) = run_with(c, Duration::from_secs(10));
        // `check` reports on stdout, the others on stderr.
        let err = out + &err;
        assert_eq!(code, 1, "{cmd}: {err}");
        assert!(
            err.contains("a FIFO") && err.contains("Fix:"),
            "{cmd}: {err}"
        );
    }
    let (code, out, err) = vyrescope(&["check", "/dev/zero"]);
    let err = out + &err;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("a device"), "{err}");
    // A device profile and the inspector's config go through the same reader.
    let (code, _, err) = vyrescope(&[
        "occupancy",
        "--device",
        fifo.to_str().unwrap(),
        "--regs",
        "32",
    ]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("a FIFO"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn file_inputs_stay_inside_the_programs_folder_unless_root_widens_it() {
    let outer = scratch("root");
    let d = outer.join("prog");
    std::fs::create_dir_all(&d).unwrap();
    let n = 1000;
    let data = random_f32_bytes(n, 0x5eed);
    std::fs::write(outer.join("secret.bin"), &data).unwrap();
    std::fs::write(d.join("inside.bin"), &data).unwrap();
    std::os::unix::fs::symlink(outer.join("secret.bin"), d.join("link_out.bin")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.bin")).unwrap();
    mkfifo(&d.join("fifo.bin"));
    let run = |file: &str, extra: &[&str]| {
        let p = d.join(format!("p{}.json", fnv(file.as_bytes())));
        std::fs::write(&p, copy_program(file, n)).unwrap();
        let mut c = bin();
        c.arg("run").arg(&p).arg("--json").args(extra);
        run_with(c, Duration::from_secs(20))
    };
    // Inside: read, and the copy's checksum is that of the file.
    let (code, out, err) = run("inside.bin", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&fnv(&data)), "{out}");
    for (file, needle) in [
        ("../secret.bin", "outside the allowed folder"),
        ("link_out.bin", "outside the allowed folder"),
        ("/etc/passwd", "outside the allowed folder"),
        ("zero.bin", "system file"),
        ("/proc/self/environ", "system file"),
        ("fifo.bin", "a FIFO"),
    ] {
        // `run --json`: the error is a JSON object on stdout.
        let (code, out, _) = run(file, &[]);
        assert_eq!(code, 1, "{file}: {out}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        let err = format!("{}\n  Fix: {}", v["error"], v["fix"]);
        assert!(
            err.contains(needle) && err.contains("Fix:"),
            "{file}: {err}"
        );
        if needle.starts_with("outside") {
            assert!(err.contains("--root"), "{file}: {err}");
        }
    }
    // `--root` widens the folder explicitly; system files stay refused.
    let root = outer.to_str().unwrap();
    let (code, out, err) = run("../secret.bin", &["--root", root]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&fnv(&data)), "{out}");
    let (code, out, _) = run("zero.bin", &["--root", "/"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("system file"), "{out}");
    // The inspector keeps the same rule: `r` (the reference interpreter here, no GPU) refuses
    // the file outside the Program's folder, and runs it under `--root`.
    let p = d.join(format!("p{}.json", fnv(b"../secret.bin")));
    let replay = |extra: &[&str]| {
        let mut c = bin();
        c.arg("tui")
            .arg(&p)
            .args(["--keys", "r", "--size", "160x40"]);
        c.args(extra).env("CI", "true");
        run_with(c, Duration::from_secs(30))
    };
    let (code, screen, err) = replay(&[]);
    assert_eq!(code, 0, "{err}");
    assert!(screen.contains("outside the allowed"), "{screen}");
    let (code, screen, err) = replay(&["--root", root]);
    assert_eq!(code, 0, "{err}");
    assert!(!screen.contains("outside the allowed"), "{screen}");
    assert!(screen.contains("reference"), "{screen}");
    std::fs::remove_dir_all(&outer).unwrap();
}

#[test]
fn sizes_from_input_are_refused_before_allocating() {
    let d = scratch("sizes");
    // 3 f32 buffers of 2^29 elements: 6 GiB of buffers, 12 GiB with their staging copies.
    let vadd = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json"),
    )
    .unwrap()
    .replace("\"elements\": 1048576", "\"elements\": 536870912");
    let p = d.join("big.json");
    std::fs::write(&p, vadd).unwrap();
    let (code, _, err) = vyrescope(&["run", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("staging copy") && err.contains("Fix:"),
        "{err}"
    );
    // The replay screen.
    let prog = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json");
    let (code, _, err) = vyrescope(&[
        "tui",
        prog.to_str().unwrap(),
        "--keys",
        "",
        "--size",
        "65535x65535",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("1000"), "{err}");
    // A device profile with absurd fields.
    let a100 = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/devices/a100.json"),
    )
    .unwrap();
    for (field, real) in [
        ("max_threads_per_block", "1024"),
        ("sm_count", "108"),
        ("regs_per_sm", "65536"),
    ] {
        let bad = a100.replacen(
            &format!("\"{field}\": {real}"),
            &format!("\"{field}\": 4294967295"),
            1,
        );
        assert_ne!(bad, a100, "{field}");
        let f = d.join(format!("{field}.json"));
        std::fs::write(&f, bad).unwrap();
        let (code, _, err) =
            vyrescope(&["occupancy", "--device", f.to_str().unwrap(), "--regs", "32"]);
        assert_ne!(code, 0, "{field}: {err}");
        assert!(err.contains(field) && err.contains("sane maximum"), "{err}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

fn names_in(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn writes_are_atomic_and_never_go_through_links() {
    let d = scratch("writes");
    let prog = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json");
    let prog = prog.to_str().unwrap();
    // emit -o replaces a regular file whole and leaves no temp file.
    let out = d.join("k.ptx");
    std::fs::write(&out, "old contents").unwrap();
    let (code, _, err) = vyrescope(&["emit", prog, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains(".entry") && !text.contains("old"), "{text}");
    assert_eq!(names_in(&d), ["k.ptx"]);
    // A link is refused, and neither it nor its target changes.
    let victim = d.join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    let link = d.join("link.ptx");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let (code, _, err) = vyrescope(&["emit", prog, "-o", link.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    // --dump: a planted link among the dump files is refused, nothing is written through
    // it, and no temp file is left; dumped files are 0644.
    let dump = d.join("dump");
    std::fs::create_dir_all(&dump).unwrap();
    std::os::unix::fs::symlink(&victim, dump.join("c.bin")).unwrap();
    let (code, _, err) = vyrescope(&["run", prog, "--dump", dump.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("c.bin") && err.contains("Fix:"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(
        names_in(&dump).iter().all(|n| !n.contains("tmp")),
        "{:?}",
        names_in(&dump)
    );
    std::fs::remove_file(dump.join("c.bin")).unwrap();
    let (code, _, err) = vyrescope(&["run", prog, "--dump", dump.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        names_in(&dump),
        ["a.bin", "a.in.bin", "b.bin", "b.in.bin", "c.bin", "c.in.bin"],
        "{err}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dump.join("c.bin"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);
    assert_eq!(
        std::fs::metadata(dump.join("c.bin")).unwrap().len(),
        4 << 20
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn ptxas_temp_files_never_outlive_the_call() {
    let d = scratch("ptxas");
    let tmp = d.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // A ptxas that fails after looking at its input: the error path must clean up too.
    let fake = d.join("fake-ptxas");
    crate::support::script::sh_script(&fake, "echo 'ptxas fatal: planted failure' >&2\nexit 3");
    let prog = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json");
    let mut ptxases = vec![fake.clone()];
    if let Some(real) = std::env::var_os("VYRESCOPE_PTXAS").map(PathBuf::from) {
        if real.is_file() {
            ptxases.push(real);
        }
    }
    for ptxas in &ptxases {
        let mut c = bin();
        c.args(["emit", "--resources"])
            .arg(&prog)
            .env("TMPDIR", &tmp)
            .env("VYRESCOPE_PTXAS", ptxas);
        let (code, out, err) = run_with(c, Duration::from_secs(60));
        if ptxas == &fake {
            assert_eq!(code, 1, "{out}{err}");
            assert!(err.contains("planted failure"), "{err}");
        } else {
            assert_eq!(code, 0, "{err}");
            assert!(out.contains("registers"), "{out}");
        }
        assert!(
            names_in(&tmp).is_empty(),
            "left behind: {:?}",
            names_in(&tmp)
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_closed_stdout_pipe_ends_the_process_quietly() {
    let prog = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json");
    for args in [&["run", "--json"][..], &["print"][..], &["emit"][..]] {
        let mut child = bin()
            .args(args)
            .arg(&prog)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before the report is written: the write meets a broken pipe.
        drop(child.stdout.take());
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(status.code(), Some(0), "{args:?}: {err}");
    }
    // And with a real consumer that stops after one line.
    let sh = format!(
        "{} emit {} | head -1 >/dev/null",
        env!("CARGO_BIN_EXE_vyrescope"),
        prog.display()
    );
    let out = Command::new("sh").arg("-c").arg(&sh).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("panicked"), "{err}");
}

#[test]
fn print_and_emit_send_no_escape_sequences_to_the_terminal() {
    let d = scratch("escapes");
    let vadd = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json"),
    )
    .unwrap()
    .replace(
        "\"doc\": \"c[i] = a[i] + b[i]; a random seed 1 in [-1, 1), b iota\"",
        "\"doc\": \"title \\u001b]0;pwned\\u0007 clear \\u001b[2J csi \\u009b1m del \\u007f\"",
    );
    assert!(vadd.contains("pwned"));
    let p = d.join("evil.json");
    std::fs::write(&p, vadd).unwrap();
    for cmd in ["print", "emit"] {
        let (code, out, err) = vyrescope(&[cmd, p.to_str().unwrap()]);
        assert_eq!(code, 0, "{cmd}: {err}");
        if cmd == "print" {
            assert!(out.contains("pwned"), "{cmd}: the doc is printed: {out}");
        }
        let bad: Vec<char> = out
            .chars()
            .filter(|&c| {
                (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
            })
            .collect();
        assert!(bad.is_empty(), "{cmd}: raw controls {bad:?} in {out}");
        if out.contains("pwned") {
            // Escaped, whichever spelling (`\u{1b}` or `\u{001b}`).
            assert!(
                out.contains("]0;pwned") && out.contains("\\u{"),
                "{cmd}: {out}"
            );
        }
    }
    // A name with controls is invalid; `check` and `run` quote it without passing them on.
    let named = std::fs::read_to_string(&p)
        .unwrap()
        .replace("\"name\": \"c\"", "\"name\": \"c\\u001b[2J\\u009b\"");
    let q = d.join("evil_name.json");
    std::fs::write(&q, named).unwrap();
    for cmd in ["check", "run"] {
        let (code, out, err) = vyrescope(&[cmd, q.to_str().unwrap()]);
        assert_eq!(code, 1, "{cmd}: {out}{err}");
        let all = out + &err;
        assert!(
            all.contains("\\u{1b}[2J"),
            "{cmd}: the name is quoted: {all}"
        );
        assert!(
            !all.chars().any(|c| c == '\u{1b}' || c == '\u{9b}'),
            "{cmd}: raw controls in {all}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}
