//! The real binary in tmux, for what only a live terminal shows (issue 24): a long pipeline
//! is planned and fused on the worker, so the screen comes up at once with a pending note and
//! `q` quits while the worker is still busy (item 2); switching pipeline steps redraws the
//! IR pane exactly as the headless replay draws it (item 16: the highlight cache painted the
//! previous step's line pieces over the new step's lines, which a replay, drawing once, never
//! shows).
//!
//! Each test runs its own tmux server (`-L`, private `TMUX_TMPDIR`) with `HOME` and the cache
//! folder in a temporary directory, so the plan cache it writes goes nowhere else. Without
//! tmux the tests fail when `CI=true` and otherwise skip with a notice.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// One private tmux server; killed on drop.
struct Tmux {
    dir: tempfile::TempDir,
    socket: String,
}

impl Tmux {
    /// None (after a notice) when tmux is missing outside CI.
    fn start(name: &str) -> Option<Tmux> {
        if !crate::support::tools::tmux(name) {
            return None;
        }
        Some(Tmux {
            dir: tempfile::tempdir().expect("temp dir"),
            socket: format!("vyrescope-{name}-{}", std::process::id()),
        })
    }

    fn home(&self) -> &Path {
        self.dir.path()
    }

    /// Runs tmux; panics with its stderr when it fails.
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .env("TMUX_TMPDIR", self.dir.path())
            .env_remove("TMUX")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts the inspector on `args` in session `s` (`w` x `h`); afterwards the pane writes
    /// the terminal modes to `<home>/s.stty` and stays open.
    fn inspector(&self, s: &str, args: &str, (w, h): (u16, u16)) -> PathBuf {
        let stty = self.home().join(format!("{s}.stty"));
        let cmd = format!(
            "env HOME={home} XDG_CACHE_HOME={home}/cache VYRESCOPE_CONFIG=/nonexistent TERM=xterm-256color {bin} {args} --device h200; stty -a > {stty} 2>&1; sleep 60",
            home = self.home().display(),
            bin = env!("CARGO_BIN_EXE_vyrescope"),
            stty = stty.display(),
        );
        let (w, h) = (w.to_string(), h.to_string());
        self.run(&["new-session", "-d", "-s", s, "-x", &w, "-y", &h, &cmd]);
        stty
    }

    fn screen(&self, s: &str) -> String {
        self.run(&["capture-pane", "-p", "-t", s])
    }

    fn wait(&self, s: &str, what: &str, limit: Duration, f: impl Fn(&str) -> bool) -> String {
        let t = Instant::now();
        loop {
            let screen = self.screen(s);
            if f(&screen) {
                return screen;
            }
            assert!(
                t.elapsed() < limit,
                "timed out after {limit:?} waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .env("TMUX_TMPDIR", self.dir.path())
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// Waits for the pane's `stty -a` output, written once the inspector exited, and checks the
/// terminal is back in cooked mode.
fn exited_restored(stty: &Path, limit: Duration, what: &str) {
    let t = Instant::now();
    while std::fs::read_to_string(stty).map_or(true, |s| s.is_empty()) {
        assert!(t.elapsed() < limit, "{what}: not exited after {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    let modes = std::fs::read_to_string(stty).unwrap_or_default();
    let words: Vec<&str> = modes.split_whitespace().collect();
    assert!(
        words.contains(&"icanon") && words.contains(&"echo"),
        "{what}: terminal left in raw mode:\n{modes}"
    );
}

const ADD1: &str = r#"{"format": 1, "name": "add1", "workgroup_size": [64, 1, 1],
  "buffers": [{"name": "src", "binding": 0, "access": "read", "type": "f32"},
              {"name": "dst", "binding": 1, "access": "write", "type": "f32"}],
  "body": [{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "i", "value": {"add": [{"load": "src", "index": "i"}, 1.0]}}]}]}"#;

/// A chain of `steps` `add1` steps `b0 -> b1 -> ...` in `dir`.
fn long_pipeline(dir: &Path, steps: usize) -> PathBuf {
    std::fs::write(dir.join("add1.json"), ADD1).expect("write add1.json");
    let buffers: Vec<String> = (0..=steps)
        .map(|k| format!(r#""b{k}": {{"type": "f32", "len": 256, "fill": "zeros"}}"#))
        .collect();
    let list: Vec<String> = (0..steps)
        .map(|i| {
            format!(
                r#"{{"program": "add1.json", "bind": {{"src": "b{i}", "dst": "b{}"}}}}"#,
                i + 1
            )
        })
        .collect();
    let path = dir.join("long.pipeline.json");
    let text = format!(
        r#"{{"format": 1, "pipeline": "long", "buffers": {{{}}}, "steps": [{}]}}"#,
        buffers.join(", "),
        list.join(", ")
    );
    std::fs::write(&path, text).expect("write pipeline");
    path
}

/// Item 2: planning and fusing a 10,000-step pipeline (tens of seconds) happens on the worker:
/// the IR pane shows at once with the PTX pane's pending note, and `q` quits within a few
/// seconds while the worker is still busy, the terminal restored. Before, the UI thread
/// planned, so nothing showed and `q` waited for the whole plan.
#[test]
fn a_long_pipeline_plans_on_the_worker_and_q_quits_meanwhile() {
    let Some(tmux) = Tmux::start("longpipe") else {
        return;
    };
    let data = tempfile::tempdir().expect("temp dir");
    let path = long_pipeline(data.path(), 10_000);
    let stty = tmux.inspector("long", &path.display().to_string(), (100, 30));
    let s = tmux.wait(
        "long",
        "the step's IR and the pending note",
        Duration::from_secs(90),
        |s| s.contains("IR step 1/10000") && s.contains("planning"),
    );
    assert!(s.contains("kernel add1"), "{s}");
    tmux.run(&["send-keys", "-t", "long", "q"]);
    exited_restored(&stty, Duration::from_secs(5), "q during planning");
}

/// The IR pane's rows of a screen (the columns left of the PTX pane's frame).
fn ir_pane(screen: &str, rows: usize) -> Vec<String> {
    let top = screen.lines().next().unwrap_or("");
    let cut = top.find("┌ PTX").map_or(0, |b| top[..b].chars().count());
    screen
        .lines()
        .take(rows)
        .map(|l| {
            l.chars()
                .take(cut)
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

/// The headless replay's screen of `file` after `keys`.
fn replayed(home: &Path, file: &Path, keys: &str, (w, h): (u16, u16)) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .env("HOME", home)
        .env("VYRESCOPE_CONFIG", "/nonexistent")
        .args(["tui", &file.display().to_string(), "--device", "h200"])
        .args(["--keys", keys, "--size", &format!("{w}x{h}")])
        .output()
        .expect("run the replay");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Item 16: `)` and `(` between steps of one fused group (they share the fused kernel) draw
/// the new step's IR in a live terminal exactly as the replay does.
#[test]
fn switching_steps_redraws_the_ir_pane_as_the_replay_does() {
    let Some(tmux) = Tmux::start("steps") else {
        return;
    };
    let file =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/workgroup_rotate.json");
    let size = (120, 40);
    let stty = tmux.inspector("steps", &file.display().to_string(), size);
    let done = |step: &'static str| {
        move |s: &str| s.contains(step) && s.contains("│    ") && !s.contains("planning")
    };
    // The first frame: generous, as a loaded 2-core machine once left the pane blank for
    // 30 s (the other waits start from a running inspector).
    tmux.wait(
        "steps",
        "step 1",
        Duration::from_secs(90),
        done("IR step 1/2"),
    );
    for (key, keys, step) in [(")", ")", "IR step 2/2"), ("(", ") (", "IR step 1/2")] {
        tmux.run(&["send-keys", "-t", "steps", key]);
        tmux.wait("steps", step, Duration::from_secs(30), done(step));
        // Let the last frame land (estimates arrive after the kernel).
        std::thread::sleep(Duration::from_millis(500));
        let live = ir_pane(&tmux.screen("steps"), 24).join("\n");
        let want = ir_pane(&replayed(tmux.home(), &file, keys, size), 24).join("\n");
        assert_eq!(
            live, want,
            "after `{keys}` the live IR pane differs from the replay"
        );
    }
    tmux.run(&["send-keys", "-t", "steps", "q"]);
    exited_restored(&stty, Duration::from_secs(5), "q");
}
