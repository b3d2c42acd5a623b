//! The few operating-system calls the standard library does not offer, behind safe
//! functions: tying a child process's life to its parent's (`PR_SET_PDEATHSIG`), limiting a
//! tool's memory and killing its process group, and asking whether a terminal's input is
//! still open. The only `unsafe` outside `runtime/driver`: each
//! block is one libc call on values owned here.

use std::process::Command;
use std::time::Duration;

/// What the terminal's input holds after waiting for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputState {
    /// Nothing arrived within the wait.
    Idle,
    /// Bytes are waiting to be read.
    Ready,
    /// The terminal is gone: hung up, an error, or readable with nothing to read (a read
    /// would return end of file). Reading from it again would only spin.
    Closed,
}

/// Makes `cmd`'s child receive SIGKILL when the thread that spawns it ends (on Linux; a
/// no-op elsewhere), so a worker process never outlives the program that started it, even
/// when that program is killed without a chance to clean up. A parent that died between the
/// fork and the call is caught too: the child then exits at once.
pub fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id();
        // Safety: the closure runs between fork and exec and calls only async-signal-safe
        // functions (prctl, getppid, _exit) on plain integers.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if u32::try_from(libc::getppid()).ok() != Some(parent) {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// Starts `cmd`'s child as the leader of a new process group (so [`kill_group`] reaches
/// whatever it starts in turn) whose address space is limited to `bytes` (`RLIMIT_AS`), so a
/// tool that needs more memory fails its allocations instead of taking the machine's. On
/// other systems only the group is set.
pub fn tool_child(cmd: &mut Command, bytes: u64) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // Within the limit this process already has (`ulimit -v`): only the soft limit is
        // lowered, and never above the hard one, which an unprivileged process may not raise.
        let mut now = libc::rlimit {
            rlim_cur: libc::RLIM_INFINITY,
            rlim_max: libc::RLIM_INFINITY,
        };
        // Safety: getrlimit fills the struct it is given.
        unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut now) };
        let limit = libc::rlimit {
            rlim_cur: (bytes as libc::rlim_t).min(now.rlim_max).min(now.rlim_cur),
            rlim_max: now.rlim_max,
        };
        // Safety: the closure runs between fork and exec and calls only setrlimit, which is
        // async-signal-safe, on a value copied into the closure.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = bytes;
}

/// Sends SIGKILL to every process of the group `leader` leads (see [`tool_child`]); a group
/// already gone is no error.
pub fn kill_group(leader: u32) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(leader) {
        if pid > 0 {
            // Safety: one kill call on plain integers; a negative pid names the group.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = leader;
}

/// Saves the modes of terminal `fd` now (call it before switching to raw mode) and, should
/// the process abort later (an allocation that fails, `std::process::abort`), puts them back
/// and leaves the alternate screen, mouse capture and hidden cursor on the way out: an abort
/// runs no destructor or panic hook, and left the shell raw. Only async-signal-safe calls
/// (`tcsetattr`, `write`) run in the handler; the abort then ends the process as before
/// (`abort` raises SIGABRT again with the default action once a handler returns).
#[cfg(unix)]
pub fn restore_terminal_on_abort(fd: std::os::fd::BorrowedFd<'_>) {
    use std::os::fd::AsRawFd;
    use std::sync::OnceLock;
    static SAVED: OnceLock<(libc::c_int, libc::termios)> = OnceLock::new();
    const RESET: &[u8] = b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1049l\x1b[?25h";
    extern "C" fn on_abort(_: libc::c_int) {
        if let Some((fd, t)) = SAVED.get() {
            // Safety: both calls are async-signal-safe and read only the saved value.
            unsafe {
                libc::tcsetattr(*fd, libc::TCSANOW, t);
                libc::write(*fd, RESET.as_ptr().cast(), RESET.len());
            }
        }
    }
    let raw = fd.as_raw_fd();
    // Safety: `termios` is plain data; tcgetattr fills it for a valid descriptor.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    if unsafe { libc::tcgetattr(raw, &mut t) } != 0 || SAVED.set((raw, t)).is_err() {
        return;
    }
    // Safety: installs a handler that touches only the value saved above.
    unsafe {
        libc::signal(
            libc::SIGABRT,
            on_abort as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

/// Asks the kernel to back the 2 MiB-aligned part of `buf` with transparent huge pages when
/// it first touches them (`MADV_HUGEPAGE`): one page fault per 2 MiB instead of per 4 KiB.
/// Advice only: contents never change, and where the kernel has huge pages off, or on
/// other systems, nothing happens.
pub fn advise_huge_pages(buf: &mut [u8]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = buf.as_mut_ptr() as usize;
        let first = start.next_multiple_of(HUGE);
        let end = (start + buf.len()) / HUGE * HUGE;
        if end > first {
            // Safety: the range lies inside `buf`, which is borrowed mutably for the call;
            // MADV_HUGEPAGE changes how the pages are backed, never what they hold.
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

/// Waits up to `timeout` for input on terminal descriptor `fd` and says what is there,
/// without reading it. A hung-up terminal (its window closed, `tmux kill-session`) reports
/// [`InputState::Closed`]: poll flags it as hung up or in error once nothing is left to read,
/// or it no longer answers FIONREAD. Readable with zero bytes waiting and no hang-up is
/// [`InputState::Idle`]: another thread reading the same terminal (the event loop, while the
/// watchdog asks) took the bytes between the poll and the count; calling that a hang-up ended
/// the inspector at random when a key or a terminal reply arrived. A signal that interrupts
/// the wait reports [`InputState::Idle`], so the caller looks at its signal flags at once.
#[cfg(unix)]
pub fn terminal_input(fd: std::os::fd::BorrowedFd<'_>, timeout: Duration) -> InputState {
    use std::os::fd::AsRawFd;
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // Safety: one pollfd that lives across the call; count 1.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::Interrupted {
            InputState::Idle
        } else {
            InputState::Closed
        };
    }
    if n == 0 {
        return InputState::Idle;
    }
    if pfd.revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
        return InputState::Closed;
    }
    if pfd.revents & (libc::POLLIN | libc::POLLHUP) == 0 {
        return InputState::Idle;
    }
    let mut waiting: libc::c_int = 0;
    // Safety: FIONREAD writes one c_int into `waiting`, which lives across the call.
    let r = unsafe { libc::ioctl(pfd.fd, libc::FIONREAD, &mut waiting) };
    // Bytes still waiting are read first (a pipe reports a hang-up with data left in it); a
    // terminal that no longer answers FIONREAD is hung up.
    if r != 0 {
        InputState::Closed
    } else if waiting > 0 {
        InputState::Ready
    } else if pfd.revents & libc::POLLHUP != 0 {
        InputState::Closed
    } else {
        InputState::Idle
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn a_pipe_reports_idle_ready_and_closed() {
        let (r, mut w) = std::io::pipe().unwrap();
        assert_eq!(
            terminal_input(r.as_fd(), Duration::from_millis(10)),
            InputState::Idle
        );
        w.write_all(b"q").unwrap();
        assert_eq!(
            terminal_input(r.as_fd(), Duration::from_millis(10)),
            InputState::Ready
        );
        drop(w);
        // Data still waiting: not closed until it is read.
        assert_eq!(
            terminal_input(r.as_fd(), Duration::from_millis(10)),
            InputState::Ready
        );
        let mut buf = [0u8; 1];
        std::io::Read::read(&mut &r, &mut buf).unwrap();
        assert_eq!(
            terminal_input(r.as_fd(), Duration::from_millis(10)),
            InputState::Closed
        );
    }

    /// The inspector's watchdog asks while the event loop reads the same terminal: bytes
    /// that the reader takes between the watcher's poll and its count must never look like
    /// a hang-up (before, they did, and the inspector quit by itself under load).
    #[test]
    fn bytes_taken_by_another_reader_are_not_a_hang_up() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let (r, mut w) = std::io::pipe().unwrap();
        let stop = AtomicBool::new(false);
        let closed = std::thread::scope(|s| {
            let stop = &stop;
            // The writer owns its end: dropping it when told to stop ends the reader's loop
            // (end of file), so neither thread can be left blocked.
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = w.write_all(b"k");
                    std::thread::yield_now();
                }
            });
            let reader = &r;
            s.spawn(move || {
                let mut buf = [0u8; 64];
                while std::io::Read::read(&mut &*reader, &mut buf).is_ok_and(|n| n > 0) {}
            });
            let mut closed = 0usize;
            for _ in 0..200_000 {
                if terminal_input(r.as_fd(), Duration::ZERO) == InputState::Closed {
                    closed += 1;
                }
            }
            stop.store(true, Ordering::Relaxed);
            closed
        });
        assert_eq!(closed, 0, "an open pipe reported closed {closed} times");
    }
}
