//! Kernel faults: plain-words descriptions of sticky driver errors, and the fault-recovery
//! check (raw PTX kernels that fault on purpose, since valid Programs cannot), run through a
//! GPU worker process so that later dispatches can be shown to work.

use std::time::Duration;

use serde::Serialize;

use super::driver::{DriverError, Geometry};
use super::worker::protocol::{FaultCase, RunJob};
use super::{GpuWorker, JitOptions, Result, Runtime, RuntimeError};

/// What a sticky error means, and what to do about it.
pub(super) fn describe(err: &DriverError) -> (String, String) {
    let (what, fix) = match err.code {
        700 => ("illegal memory address", "a load or store went outside any allocation; for an emitted kernel this is a vyrescope bug (bounds checks are emitted), please report it"),
        710 => ("device-side assert", "an assertion in the kernel failed"),
        714 => ("hardware stack error", "the kernel overflowed its call stack"),
        715 => ("illegal instruction", "the kernel executed an invalid instruction"),
        716 => ("misaligned address", "a load or store address was not aligned to its size"),
        717 => ("invalid address space", "a generic address pointed into the wrong state space"),
        718 => ("invalid program counter", "the kernel jumped outside its code"),
        719 => ("launch failure (trap or exception)", "the kernel trapped or hit an exception; run it under compute-sanitizer to see where"),
        _ => ("kernel error", "see the driver's message"),
    };
    (what.to_string(), fix.to_string())
}

/// Test kernels: a store through a given pointer, a trap, a timed spin, and a well-behaved
/// kernel (`out[i] = 3*i + 1`) that proves later dispatches still work.
pub const FAULT_PTX: &str = r#".version 7.8
.target sm_70
.address_size 64

.visible .entry vs_fault_store(.param .u64 p, .param .u32 v)
{
    .reg .b64 %rd<2>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [v];
    st.global.u32 [%rd1], %r1;
    ret;
}

.visible .entry vs_fault_trap()
{
    trap;
    ret;
}

.visible .entry vs_spin(.param .u64 ns)
{
    .reg .b64 %rd<5>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [ns];
    mov.u64 %rd2, %globaltimer;
SPIN:
    mov.u64 %rd3, %globaltimer;
    sub.u64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra SPIN;
    ret;
}

.visible .entry vs_iota(.param .u64 out, .param .u32 n)
{
    .reg .b64 %rd<4>;
    .reg .b32 %r<7>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd1, %rd1;
    mul.wide.u32 %rd2, %r5, 4;
    add.u64 %rd3, %rd1, %rd2;
    mad.lo.u32 %r6, %r5, 3, 1;
    st.global.u32 [%rd3], %r6;
DONE:
    ret;
}
"#;

/// One step of the fault-recovery check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultStep {
    /// What was tried.
    pub step: String,
    /// What had to happen.
    pub expected: String,
    /// What happened (first line of the error, or the verification outcome).
    pub got: String,
    /// Wall time of the step (ms).
    pub ms: f64,
    /// True when `got` is what was expected.
    pub ok: bool,
}

impl Runtime {
    /// Test-only: launches [`FAULT_PTX`]'s illegal-address store, the fault a broken fused
    /// kernel would raise (the worker's pipeline fault check). Always an error.
    #[doc(hidden)]
    pub fn fault_for_test(&mut self) -> Result<()> {
        self.launch_raw(
            FAULT_PTX,
            "vs_fault_store",
            [1, 1, 1],
            [32, 1, 1],
            &mut [0xdead_0000_0000, 7],
            None,
        )?;
        Err(RuntimeError::Other(crate::util::Problem::new(
            "the illegal-address test kernel did not fault",
            "report it with the driver version",
        )))
    }
}

/// Launches a raw kernel once (test-only entry point; no ABI).
impl Runtime {
    /// Launches kernel `name` of `ptx` with raw 8-byte argument slots.
    pub fn launch_raw(
        &mut self,
        ptx: &str,
        name: &str,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [u64],
        timeout: Option<Duration>,
    ) -> Result<super::dispatch::LaunchTiming> {
        let (h, _) = self.load_kernel(ptx, name, &JitOptions::default())?;
        let (f, _) = self.kernel_for_launch(&h)?;
        let t = self.launch_core(
            name,
            f,
            &Geometry {
                grid,
                block,
                dynamic_smem: 0,
            },
            args,
            super::dispatch::LaunchMode {
                cooperative: false,
                timeout,
                timed: true,
            },
        )?;
        let slots = grid.iter().chain(block.iter()).map(|&v| v as u64).product();
        self.telemetry
            .record_launch(false, slots, slots, t.device_ms);
        Ok(t)
    }
}

/// The Program dispatched before and after each fault: `out[i] = 3 * a[i] + 1` over 2^20
/// random `u32`s, verified against the reference interpreter.
pub const CHECK_PROGRAM: &str = r#"{"format": 1, "name": "vs_recovery_check",
  "doc": "dispatched between the faults of the fault-recovery check",
  "workgroup_size": [256, 1, 1],
  "buffers": [
    {"name": "a", "binding": 0, "access": "read", "type": "u32"},
    {"name": "out", "binding": 1, "access": "read_write", "type": "u32"}],
  "body": [
    {"let": "i", "value": {"gid": "x"}},
    {"if": {"lt": ["i", {"len": "out"}]}, "then": [
      {"store": "out", "index": "i",
       "value": {"add": [{"mul": [{"load": "a", "index": "i"}, 3]}, 1]}}]}],
  "run": {"elements": 1048576,
          "inputs": {"a": {"fill": "random", "seed": 7}, "out": {"fill": "ones"}}}}"#;

fn first_line(e: &RuntimeError) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

/// Where the previous step's work ran, to tell "recovered in the same worker" from
/// "recovered in a fresh worker".
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// The dispatch must run in the same worker process as the previous step.
    SameWorker,
    /// The dispatch must run in a new worker process.
    FreshWorker,
    /// Either.
    Any,
}

/// A verified dispatch of [`CHECK_PROGRAM`]; ok when every element matches and the worker is
/// the one `expect` asks for.
fn dispatch_ok(w: &mut GpuWorker, before: Option<u32>, expect: Expect) -> (String, bool) {
    let mut job = RunJob::new(
        CHECK_PROGRAM.to_string(),
        "vs_recovery_check.json",
        std::path::PathBuf::from("."),
    );
    // A broken recovery shows as an error here rather than a check that never ends.
    job.request.timeout = Some(std::time::Duration::from_millis(10_000));
    match w.run_job(&job, &mut |_| {}) {
        Err(e) => (first_line(&e), false),
        Ok(run) => {
            let pid = w.pid().unwrap_or(0);
            let (parity, exact) = match &run.parity {
                Some(p) if p.passed => (format!("all {} elements correct", p.compared), true),
                Some(p) => (
                    format!("{} of {} elements wrong", p.mismatches, p.compared),
                    false,
                ),
                None => ("not verified".into(), false),
            };
            let (where_, placed) = match (expect, before) {
                (Expect::SameWorker, Some(b)) if b == pid => {
                    (format!("same worker pid {pid}: recovered in-process"), true)
                }
                (Expect::SameWorker, _) => (
                    format!("worker pid {pid}, expected the same worker as before ({before:?})"),
                    false,
                ),
                (Expect::FreshWorker, Some(b)) if b != pid => (
                    format!("fresh worker pid {pid} (pid {b} exited): context recreated in a new process"),
                    true,
                ),
                (Expect::FreshWorker, _) => (
                    format!("worker pid {pid}, expected a fresh worker"),
                    false,
                ),
                (Expect::Any, _) => (format!("worker pid {pid}"), true),
            };
            (format!("{parity} ({where_})"), exact && placed)
        }
    }
}

/// The fault-recovery check through a GPU worker: a verified dispatch, then a timeout, an
/// illegal address and a trap, each followed by a verified dispatch that must be correct.
/// The timeout recovers inside the worker (same process); each sticky fault ends its worker
/// and the next dispatch runs in a fresh one. Every step records what was expected and what
/// happened.
pub fn fault_check(w: &mut GpuWorker) -> Vec<FaultStep> {
    let mut steps = Vec::new();
    let mut step = |name: &str, expected: &str, f: &mut dyn FnMut() -> (String, bool)| {
        let t = std::time::Instant::now();
        let (got, ok) = f();
        steps.push(FaultStep {
            step: name.into(),
            expected: expected.into(),
            got,
            ms: t.elapsed().as_secs_f64() * 1e3,
            ok,
        });
    };
    let w = std::cell::RefCell::new(w);
    let pid = || w.borrow().pid();
    step("baseline dispatch", "correct results", &mut || {
        dispatch_ok(&mut w.borrow_mut(), None, Expect::Any)
    });
    let before = pid();
    step(
        "2 s kernel with --timeout 200 ms",
        "timeout error; context recreated inside the worker",
        &mut || {
            let r = w.borrow_mut().raw_fault(
                FaultCase::Spin { ns: 2_000_000_000 },
                Some(Duration::from_millis(200)),
            );
            match r {
                Err(e @ RuntimeError::Timeout { .. }) => (first_line(&e), true),
                Err(e) => (first_line(&e), false),
                Ok(_) => ("no error".into(), false),
            }
        },
    );
    step(
        "dispatch after the timeout",
        "correct results in the same worker",
        &mut || dispatch_ok(&mut w.borrow_mut(), before, Expect::SameWorker),
    );
    for (case, label, name, words) in [
        (
            FaultCase::IllegalAddress,
            "kernel storing to an illegal address",
            "illegal address",
            "illegal memory address",
        ),
        (
            FaultCase::Trap,
            "kernel executing trap",
            "trap",
            "launch failure",
        ),
    ] {
        let before = pid();
        step(
            label,
            &format!("fault error ({words}); the worker exits"),
            &mut || {
                let r = w.borrow_mut().raw_fault(case, None);
                let gone = w.borrow().pid().is_none();
                match r {
                    Err(e @ RuntimeError::WorkerFault { .. }) => {
                        let ok = e.to_string().contains(words) && gone;
                        (first_line(&e), ok)
                    }
                    Err(e) => (first_line(&e), false),
                    Ok(_) => ("no error".into(), false),
                }
            },
        );
        step(
            &format!("dispatch after the {name}"),
            "correct results in a fresh worker",
            &mut || dispatch_ok(&mut w.borrow_mut(), before, Expect::FreshWorker),
        );
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sticky_errors_have_words_and_fixes() {
        for code in [700, 710, 714, 715, 716, 717, 718, 719] {
            let e = DriverError {
                call: "cuStreamSynchronize",
                code,
                name: "X".into(),
                text: "y".into(),
            };
            assert!(e.is_sticky());
            let (what, fix) = describe(&e);
            assert!(!what.is_empty() && !fix.is_empty() && what != "kernel error");
        }
        let e = DriverError {
            call: "cuMemAlloc",
            code: 2,
            name: "CUDA_ERROR_OUT_OF_MEMORY".into(),
            text: "out of memory".into(),
        };
        assert!(!e.is_sticky());
    }

    #[test]
    fn fault_ptx_declares_every_kernel() {
        for k in ["vs_fault_store", "vs_fault_trap", "vs_spin", "vs_iota"] {
            assert!(FAULT_PTX.contains(&format!(".visible .entry {k}(")), "{k}");
        }
    }
}
