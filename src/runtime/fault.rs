//! Kernel faults: plain-words descriptions of sticky driver errors, and the fault-recovery
//! check (raw PTX kernels that fault on purpose, since valid Programs cannot).

use std::time::Duration;

use serde::Serialize;

use super::driver::{DriverError, Geometry};
use super::{DispatchOptions, JitOptions, Result, Runtime, RuntimeError};
use crate::emit::{AbiParam, KernelAbi};
use crate::inputs::{HostBuffer, LaunchShape};
use crate::ir::{Access, ElemType};

/// What a sticky error means, and what to do about it.
pub(crate) fn describe(err: &DriverError) -> (String, String) {
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

    /// Runs `vs_iota` through the normal dispatch path and checks every element.
    fn iota_ok(&mut self, n: usize) -> Result<String> {
        let (h, _) = self.load_kernel(FAULT_PTX, "vs_iota", &JitOptions::default())?;
        let abi = KernelAbi {
            params: vec![AbiParam {
                buffer: "out".into(),
                binding: 0,
                elem: "u32".into(),
                ptr_param: "out".into(),
                len_param: "n".into(),
            }],
            ..KernelAbi::default()
        };
        // Poison the output so unwritten elements show.
        let mut bufs = vec![HostBuffer {
            name: "out".into(),
            elem: ElemType::U32,
            access: Access::ReadWrite,
            binding: 0,
            data: vec![0xAB; n * 4],
        }];
        let shape = LaunchShape {
            workgroup_size: [256, 1, 1],
            grid: [n.div_ceil(256) as u32, 1, 1],
        };
        self.dispatch(&h, &abi, &shape, &mut bufs, &DispatchOptions::default())?;
        let bad = bufs[0]
            .data
            .chunks_exact(4)
            .enumerate()
            .filter(|(i, c)| {
                u32::from_le_bytes([c[0], c[1], c[2], c[3]])
                    != (*i as u32).wrapping_mul(3).wrapping_add(1)
            })
            .count();
        if bad == 0 {
            Ok(format!("all {n} elements correct"))
        } else {
            Err(RuntimeError::Other(format!(
                "{bad} of {n} elements wrong after recovery\n  Fix: this is a vyrescope bug"
            )))
        }
    }

    /// The fault-recovery check: a baseline dispatch, then a timeout, an illegal address and
    /// a trap, each followed by a dispatch that must give correct results. The timeout goes
    /// first because it does not poison the device even where a sticky fault would.
    pub fn fault_check(&mut self) -> Vec<FaultStep> {
        let mut steps = Vec::new();
        let mut step = |rt: &mut Runtime,
                        name: &str,
                        expected: &str,
                        f: &mut dyn FnMut(&mut Runtime) -> (String, bool)| {
            let t = std::time::Instant::now();
            let (got, ok) = f(rt);
            steps.push(FaultStep {
                step: name.into(),
                expected: expected.into(),
                got,
                ms: t.elapsed().as_secs_f64() * 1e3,
                ok,
            });
        };
        let first_line =
            |e: &RuntimeError| e.to_string().lines().next().unwrap_or_default().to_string();
        let verify = |rt: &mut Runtime| match rt.iota_ok(1 << 20) {
            Ok(s) => (s, true),
            Err(e) => (first_line(&e), false),
        };
        step(self, "baseline dispatch", "correct results", &mut |rt| {
            verify(rt)
        });
        step(
            self,
            "2 s kernel with --timeout 200ms",
            "timeout, context recreated",
            &mut |rt| {
                let ns = 2_000_000_000u64;
                match rt.launch_raw(
                    FAULT_PTX,
                    "vs_spin",
                    [1, 1, 1],
                    [32, 1, 1],
                    &mut [ns],
                    Some(Duration::from_millis(200)),
                ) {
                    Err(e @ RuntimeError::Timeout { .. }) => (first_line(&e), true),
                    Err(e) => (first_line(&e), false),
                    Ok(_) => ("no error".into(), false),
                }
            },
        );
        step(
            self,
            "dispatch after the timeout",
            "correct results",
            &mut |rt| verify(rt),
        );
        // Sticky faults poison the whole process on current drivers (no new context can be
        // created afterwards), so each runs in a child process: the child must report the
        // fault clearly and refuse later work with the "restart" error, and this process's
        // own dispatches must stay correct.
        for (case, words) in [
            ("illegal-address", "illegal memory address"),
            ("trap", "launch failure"),
        ] {
            step(
                self,
                &format!("{case} in a child process"),
                &format!("child: fault reported ({words}), later work refused with a restart hint"),
                &mut |_| run_child(case, words),
            );
            step(
                self,
                &format!("dispatch here after the child's {case}"),
                "correct results",
                &mut |rt| verify(rt),
            );
        }
        steps
    }
}

/// Runs `vyrescope fault-test --child CASE` and judges its output.
fn run_child(case: &str, words: &str) -> (String, bool) {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return (format!("cannot find the vyrescope binary: {e}"), false),
    };
    match std::process::Command::new(exe)
        .args(["fault-test", "--child", case])
        .output()
    {
        Err(e) => (format!("cannot start the child: {e}"), false),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let fault = text
                .lines()
                .find(|l| l.starts_with("fault: "))
                .unwrap_or("fault: (none)");
            let after = text
                .lines()
                .find(|l| l.starts_with("after: "))
                .unwrap_or("after: (none)");
            let ok = out.status.success()
                && fault.contains(words)
                && (after.contains("restart vyrescope") || after.contains("recovered in-process"));
            (format!("{fault} | {after}"), ok)
        }
    }
}

impl Runtime {
    /// The child side of a sticky-fault case: launch the faulting kernel, then try a normal
    /// dispatch. Prints `fault: ...` and `after: ...`; returns true when both behaved as
    /// expected (a clear fault error, then either working dispatches or the poisoned error).
    pub fn fault_child(&mut self, case: &str) -> bool {
        let first_line =
            |e: &RuntimeError| e.to_string().lines().next().unwrap_or_default().to_string();
        let fix_line =
            |e: &RuntimeError| e.to_string().lines().last().unwrap_or_default().to_string();
        let r = match case {
            "trap" => self.launch_raw(
                FAULT_PTX,
                "vs_fault_trap",
                [1, 1, 1],
                [32, 1, 1],
                &mut [],
                None,
            ),
            _ => self.launch_raw(
                FAULT_PTX,
                "vs_fault_store",
                [1, 1, 1],
                [32, 1, 1],
                &mut [0xdead_0000_0000, 7],
                None,
            ),
        };
        let fault_ok = match &r {
            Err(e @ (RuntimeError::Fault { .. } | RuntimeError::FaultUnrecovered { .. })) => {
                println!("fault: {}", first_line(e));
                true
            }
            Err(e) => {
                println!("fault: unexpected error: {}", first_line(e));
                false
            }
            Ok(_) => {
                println!("fault: no error");
                false
            }
        };
        let after_ok = match self.iota_ok(1 << 16) {
            Ok(s) => {
                println!("after: recovered in-process: {s}");
                true
            }
            Err(e @ RuntimeError::Poisoned(_)) => {
                println!("after: {} {}", first_line(&e), fix_line(&e).trim());
                true
            }
            Err(e) => {
                println!("after: unexpected error: {}", first_line(&e));
                false
            }
        };
        fault_ok && after_ok
    }
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
