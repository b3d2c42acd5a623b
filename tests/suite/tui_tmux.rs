//! End to end: the real binary in a tmux pane. Keys go in with `send-keys`, the screen comes
//! back with `capture-pane`. Checks that the IR and PTX panes show, that moving the IR cursor
//! moves the PTX highlight (the pane's selected-node title and highlighted rows), that help
//! opens, and that `q` exits with the terminal restored (`stty -a` shows icanon and echo).
//!
//! Without tmux the test fails when `CI=true` and otherwise skips with a notice. tmux runs
//! with a private `TMUX_TMPDIR` (its own server, no other session or user config in the way),
//! and every tmux command's exit status is checked: a server that cannot start fails the test
//! with tmux's own error, not with an empty screen and a time-out.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The private `TMUX_TMPDIR` of this test process. Statics are never dropped, so it lives
/// under cargo's per-target temporary folder (`target/tmp`), not the system temp dir, where it
/// would outlive every run.
fn tmux_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("vyrescope-tmux-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir for TMUX_TMPDIR");
        dir
    })
}

fn tmux_command(args: &[&str]) -> Command {
    let mut c = Command::new("tmux");
    c.args(args)
        .env("TMUX_TMPDIR", tmux_dir())
        .env_remove("TMUX");
    c
}

/// Runs tmux; panics with its exit status and stderr when it fails.
fn tmux(args: &[&str]) -> String {
    let out = tmux_command(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run tmux {args:?}: {e}"));
    assert!(
        out.status.success(),
        "tmux {args:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn capture(session: &str, escapes: bool) -> String {
    let mut args = vec!["capture-pane", "-p", "-t", session];
    if escapes {
        args.push("-e");
    }
    tmux(&args)
}

#[test]
fn tmux_failures_are_reported_with_tmux_error() {
    if Command::new("tmux").arg("-V").output().is_err() {
        return;
    }
    // A session that does not exist: tmux exits non-zero, and the helper says why.
    let r = std::panic::catch_unwind(|| tmux(&["capture-pane", "-p", "-t", "no-such-session-x"]));
    let msg = r.expect_err("capture of a missing session must fail");
    let text = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        text.contains("failed") && text.contains("capture-pane"),
        "{text}"
    );
}

/// What the pane's shell prints once the inspector has ended, with its exit status.
const EXITED: &str = "[inspector exited:";

fn wait_for(session: &str, what: &str, f: impl Fn(&str) -> bool) -> String {
    let t = Instant::now();
    loop {
        let s = capture(session, false);
        if f(&s) {
            return s;
        }
        // An inspector that ended early fails at once with what it printed, instead of a
        // time-out (or a server gone with the pane) a minute later.
        assert!(
            !s.contains(EXITED),
            "the inspector ended while waiting for {what}; screen:\n{s}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}; screen:\n{s}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Rows of the capture (with escapes) whose PTX part has the correlated-line background.
fn highlighted_ptx_rows(escaped: &str, ptx_col: usize) -> Vec<usize> {
    escaped
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            // The dark theme's correlated-line background (lineHighlight #2c3340).
            let plain_prefix: String = strip(l).chars().take(ptx_col).collect();
            let cut = byte_index_after_visible(l, plain_prefix.chars().count());
            l[cut..].contains("48;2;44;51;64")
        })
        .map(|(i, _)| i)
        .collect()
}

fn strip(s: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for c in s.chars() {
        if esc {
            if c.is_ascii_alphabetic() {
                esc = false;
            }
        } else if c == '\u{1b}' {
            esc = true;
        } else {
            out.push(c);
        }
    }
    out
}

fn byte_index_after_visible(s: &str, n: usize) -> usize {
    let mut seen = 0;
    let mut esc = false;
    for (i, c) in s.char_indices() {
        if seen == n {
            return i;
        }
        if esc {
            if c.is_ascii_alphabetic() {
                esc = false;
            }
        } else if c == '\u{1b}' {
            esc = true;
        } else {
            seen += 1;
        }
    }
    s.len()
}

#[test]
fn real_binary_in_tmux() {
    if !crate::support::tools::tmux("the end-to-end inspector test") {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_vyrescope");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let fixture = root.join("fixtures/programs/vadd_f32.json");
    let session = format!("vyrescope-e2e-{}", std::process::id());
    // Removed with its folder however the test ends.
    let stty_dir = tempfile::tempdir().unwrap();
    let stty_out = stty_dir.path().join("stty");
    // After the inspector exits, say so with its status, record the terminal modes, then
    // keep the pane alive (the session is killed when the test ends, however it ends).
    let cmd = format!(
        "env VYRESCOPE_CONFIG=/nonexistent TERM=xterm-256color COLORTERM=truecolor {bin} {} --device h200; echo \"{EXITED} $?]\"; stty -a > {} 2>&1; sleep 600",
        fixture.display(),
        stty_out.display()
    );
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "120",
        "-y",
        "40",
        &cmd,
    ]);
    struct Kill(String);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = tmux_command(&["kill-session", "-t", &self.0]).output();
        }
    }
    let _kill = Kill(session.clone());

    let s = wait_for(&session, "IR and PTX panes", |s| {
        s.contains("IR vadd_f32") && s.contains(".entry vadd_f32") || s.contains("PTX sm_90")
    });
    assert!(s.contains("IR vadd_f32") && s.contains("PTX sm_90"), "{s}");
    let title_node = |s: &str| -> Option<String> {
        let l = s.lines().next()?;
        let i = l.find("· ")?;
        Some(l[i + 2..].split(':').next()?.to_string())
    };
    let s = wait_for(&session, "PTX title with the selected node", |s| {
        title_node(s).is_some()
    });
    let first = title_node(&s).unwrap();
    let top = s.lines().next().unwrap();
    let ptx_col = top[..top.find("PTX").unwrap()]
        .chars()
        .count()
        .saturating_sub(1);
    let before = highlighted_ptx_rows(&capture(&session, true), ptx_col);

    tmux(&["send-keys", "-t", &session, "j"]);
    let s = wait_for(&session, "the selection to move", |s| {
        title_node(s).is_some_and(|n| n != first)
    });
    let second = title_node(&s).unwrap();
    assert_ne!(first, second);
    let after = highlighted_ptx_rows(&capture(&session, true), ptx_col);
    assert_ne!(
        before, after,
        "the PTX highlight did not move (rows {before:?})"
    );

    tmux(&["send-keys", "-t", &session, "?"]);
    wait_for(&session, "help overlay", |s| {
        s.contains("Help - keys") && s.contains("focus next pane")
    });
    tmux(&["send-keys", "-t", &session, "Escape"]);
    wait_for(&session, "help closed", |s| !s.contains("Help - keys"));

    tmux(&["send-keys", "-t", &session, "q"]);
    let t = Instant::now();
    while !stty_out.exists() || std::fs::read_to_string(&stty_out).map_or(true, |s| s.is_empty()) {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the inspector did not exit on q"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(200));
    let modes = std::fs::read_to_string(&stty_out).unwrap();
    let words: Vec<&str> = modes.split_whitespace().collect();
    assert!(
        words.contains(&"icanon") && words.contains(&"echo"),
        "terminal left in raw mode:\n{modes}"
    );
    let screen = capture(&session, false);
    assert!(
        !screen.contains("IR vadd_f32"),
        "alternate screen not left:\n{screen}"
    );
}

/// SIGTERM, SIGHUP, SIGINT and SIGQUIT sent with `kill` end the inspector the way `q` does: the
/// terminal is back in cooked mode and off the alternate screen. Runs on its own tmux server
/// (`-L`), so it does not race the other tmux test's server.
#[test]
fn signals_restore_the_terminal() {
    if !crate::support::tools::tmux("the inspector signal test") {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_vyrescope");
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json");
    let tmp = tempfile::tempdir().unwrap();
    let socket = format!("vyrescope-sig-{}", std::process::id());
    let tm = |args: &[&str]| -> (bool, String, String) {
        let out = Command::new("tmux")
            .env("TMUX_TMPDIR", tmp.path())
            .args(["-L", &socket])
            .args(args)
            .output()
            .expect("run tmux");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    struct KillServer(PathBuf, String);
    impl Drop for KillServer {
        fn drop(&mut self) {
            let _ = Command::new("tmux")
                .env("TMUX_TMPDIR", &self.0)
                .args(["-L", &self.1, "kill-server"])
                .output();
        }
    }
    let _kill = KillServer(tmp.path().to_path_buf(), socket.clone());
    for sig in ["TERM", "HUP", "INT", "QUIT"] {
        let session = format!("sig{sig}");
        let pid_file = tmp.path().join(format!("{sig}.pid"));
        let stty_out = tmp.path().join(format!("{sig}.stty"));
        // `exec` keeps the shell's pid, so the pid file names the inspector itself.
        let cmd = format!(
            "sh -c 'echo $$ > {pid}; exec env VYRESCOPE_CONFIG=/nonexistent TERM=xterm-256color {bin} {fix} --device h200'; stty -a > {stty} 2>&1; sleep 60",
            pid = pid_file.display(),
            fix = fixture.display(),
            stty = stty_out.display(),
        );
        let (ok, _, err) = tm(&[
            "new-session",
            "-d",
            "-s",
            &session,
            "-x",
            "100",
            "-y",
            "30",
            &cmd,
        ]);
        assert!(ok, "tmux new-session failed: {err}");
        let screen = || tm(&["capture-pane", "-p", "-t", &session]).1;
        let t = Instant::now();
        while !screen().contains("IR vadd_f32") {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "timed out waiting for the inspector; screen:\n{}",
                screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let status = Command::new("kill")
            .args([&format!("-{sig}"), pid.trim()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{sig} {pid}");
        let t = Instant::now();
        while std::fs::read_to_string(&stty_out).map_or(true, |s| s.is_empty()) {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the inspector did not exit on SIG{sig}; screen:\n{}",
                screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_millis(200));
        let modes = std::fs::read_to_string(&stty_out).unwrap();
        let words: Vec<&str> = modes.split_whitespace().collect();
        assert!(
            words.contains(&"icanon") && words.contains(&"echo"),
            "SIG{sig} left the terminal in raw mode:\n{modes}"
        );
        let s = screen();
        assert!(
            !s.contains("IR vadd_f32"),
            "SIG{sig}: alternate screen not left:\n{s}"
        );
        // The session stays until the server is killed: ending the last one would end the
        // server while the next new-session talks to it.
    }
}

/// True while `pid` is a live process (a zombie waiting for its reaper counts as gone: it
/// runs nothing and holds no GPU context).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next());
        !matches!(state, Some("Z" | "X"))
    })
}

/// Live processes whose parent is `pid`, with their command lines.
fn children(pid: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) && alive(child) {
            let cmd = std::fs::read(format!("/proc/{child}/cmdline"))
                .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                .unwrap_or_default();
            out.push((child, cmd));
        }
    }
    out
}

/// Closing the terminal (`tmux kill-session`: the pane's pty goes away) ends the inspector
/// and its GPU worker process within two seconds. Before the fix the inspector spun at a
/// full core reading end of file from the dead terminal, and its worker outlived it.
#[test]
fn a_closed_terminal_ends_the_inspector_and_its_worker() {
    if !crate::support::tools::tmux("the closed-terminal test") {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_vyrescope");
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json");
    let tmp = tempfile::tempdir().unwrap();
    let socket = format!("vyrescope-close-{}", std::process::id());
    let tm = |args: &[&str]| -> (bool, String, String) {
        let out = Command::new("tmux")
            .env("TMUX_TMPDIR", tmp.path())
            .env("HOME", tmp.path())
            .args(["-L", &socket])
            .args(args)
            .output()
            .expect("run tmux");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    struct KillServer(PathBuf, String);
    impl Drop for KillServer {
        fn drop(&mut self) {
            let _ = Command::new("tmux")
                .env("TMUX_TMPDIR", &self.0)
                .args(["-L", &self.1, "kill-server"])
                .output();
        }
    }
    let _kill = KillServer(tmp.path().to_path_buf(), socket.clone());
    let pid_file = tmp.path().join("inspector.pid");
    // A second session keeps the server up after the first one is killed.
    let (ok, _, err) = tm(&["new-session", "-d", "-s", "keep", "sleep 60"]);
    assert!(ok, "tmux new-session failed: {err}");
    let cmd = format!(
        "sh -c 'echo $$ > {pid}; exec env HOME={home} VYRESCOPE_CONFIG=/nonexistent TERM=xterm-256color {bin} {fix} --device h200'",
        pid = pid_file.display(),
        home = tmp.path().display(),
        fix = fixture.display(),
    );
    let (ok, _, err) = tm(&[
        "new-session",
        "-d",
        "-s",
        "closing",
        "-x",
        "100",
        "-y",
        "30",
        &cmd,
    ]);
    assert!(ok, "tmux new-session failed: {err}");
    let screen = || tm(&["capture-pane", "-p", "-t", "closing"]).1;
    let t = Instant::now();
    while !screen().contains("IR vadd_f32") {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "timed out waiting for the inspector; screen:\n{}",
            screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The device probe starts the GPU worker process (on a machine without a CUDA driver it
    // answers and stays idle). Without a worker the test would check only half of what it
    // claims, so its absence is a failure, not a pass.
    let t = Instant::now();
    let mut workers = children(pid);
    while workers.is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no GPU worker process appeared under the inspector {pid} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
        workers = children(pid);
    }
    assert!(alive(pid), "the inspector ended before the terminal closed");
    let (ok, _, err) = tm(&["kill-session", "-t", "closing"]);
    assert!(ok, "tmux kill-session failed: {err}");
    let t = Instant::now();
    while alive(pid) || workers.iter().any(|(w, _)| alive(*w)) {
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "2 s after the terminal closed: inspector {pid} alive: {}, workers still alive: {:?}",
            alive(pid),
            workers
                .iter()
                .filter(|(w, _)| alive(*w))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
