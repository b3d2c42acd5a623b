//! The worker side (`vyrescope gpu-worker`): one [`Runtime`], opened on the first request
//! that needs it, serving requests from stdin until end of input or a sticky fault.
//!
//! After a sticky fault (illegal address, trap, ...) this process's CUDA state is poisoned
//! for good on current drivers, so the worker replies with the fault and exits at once
//! (without touching the driver again); its client starts a fresh worker for the next
//! request. Timeouts recover inside the worker (the runtime recreates its context).

use std::io::{BufRead, Write};
use std::path::Path;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::protocol::{
    read_line, write_line, FaultCase, Message, NoJob, OutputDigest, Progress, Reply, Request,
    Response, RunJob, RunOutcome, StatsSnapshot, TestAction, TuneFailure, TuneJob, TuneOutcome,
    TunePoint, WireError, WorkerJob, PROTOCOL_VERSION,
};
use crate::occupancy::estimate::estimate;
use crate::report::RunReport;
use crate::runtime::execute::{RunPhase, RunRequest};
use crate::runtime::fault::FAULT_PTX;
use crate::runtime::{JitOptions, Runtime, RuntimeError};
use crate::util::Problem;

/// Device budget announced for the raw fault kernels (they end in microseconds).
const RAW_FAULT_BUDGET_MS: u64 = 10_000;

struct Worker<'a, J: Jobs> {
    out: &'a mut dyn Write,
    device: u32,
    rt: Option<Result<Runtime, RuntimeError>>,
    jobs: &'a mut J,
}

/// The jobs built from the harnesses above this layer (a pipeline's forms, timelines, capture
/// replays), which the runtime cannot name: the `gpu-worker` command hands in the harness's
/// implementation, whose [`Jobs::Job`] and [`Jobs::Done`] are the payloads of
/// [`Request::Job`] and [`Response::Done`], so the worker runs exactly the code an
/// in-process run does. A sticky fault among their errors is recognised from the runtime's
/// state, not the text.
pub trait Jobs {
    /// The job requests.
    type Job: WorkerJob + DeserializeOwned;
    /// Their answers.
    type Done: Serialize;
    /// True when `job` runs on this worker's runtime (opened for it); false for a job that
    /// opens its own device (a capture replay on `vyrescope-cuda`, with its own context).
    fn uses_runtime(&self, job: &Self::Job) -> bool;
    /// Runs `job`, on `rt` when [`Jobs::uses_runtime`] said so (else `rt` is `None`).
    fn run(&mut self, job: Self::Job, rt: Option<&mut Runtime>) -> Result<Self::Done, Problem>;
}

/// [`Jobs`] of a worker without the harnesses (tests of the protocol): there are none to ask
/// for.
pub struct NoJobs;

impl Jobs for NoJobs {
    type Job = NoJob;
    type Done = NoJob;
    fn uses_runtime(&self, job: &NoJob) -> bool {
        match *job {}
    }
    fn run(&mut self, job: NoJob, _: Option<&mut Runtime>) -> Result<NoJob, Problem> {
        match job {}
    }
}

/// Serves requests from `input`, writing messages to `out`; returns the exit code.
pub fn serve<J: Jobs>(
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    device: u32,
    jobs: &mut J,
) -> i32 {
    let mut w = Worker {
        out,
        device,
        rt: None,
        jobs,
    };
    let hello = Message::<NoJob>::Hello {
        protocol: PROTOCOL_VERSION,
        pid: std::process::id(),
    };
    if write_line(w.out, &hello).is_err() {
        return 1;
    }
    loop {
        let line = match read_line(input) {
            Ok(Some(l)) => l,
            // End of input: the client is gone or done.
            Ok(None) => return 0,
            Err(_) => return 1,
        };
        if line.trim().is_empty() {
            continue;
        }
        let req: Request<J::Job> = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                let reply = Reply::<NoJob> {
                    result: Err(WireError::Other {
                        message: format!("the GPU worker could not read a request: {e}"),
                        fix: "the client and the worker must be the same vyrescope build (unset VYRESCOPE_WORKER_EXE or point it at this build)".into(),
                    }),
                    exiting: false,
                };
                if write_line(w.out, &Message::Reply(reply)).is_err() {
                    return 1;
                }
                continue;
            }
        };
        let shutdown = matches!(req, Request::Shutdown);
        let result = w.handle(req);
        let exiting = shutdown || result.as_ref().is_err_and(WireError::is_sticky);
        let sent = write_line(w.out, &Message::Reply(Reply { result, exiting }));
        if exiting || sent.is_err() {
            // After a sticky fault, leave without running any destructor: freeing device
            // memory in a poisoned context is pointless and may block. Process exit lets
            // the driver reclaim everything.
            let _ = w.out.flush();
            std::process::exit(if sent.is_ok() { 0 } else { 1 });
        }
    }
}

impl<J: Jobs> Worker<'_, J> {
    fn progress(&mut self, p: Progress) {
        // A client that stopped reading will see the reply fail too; nothing to do here.
        let _ = write_line(self.out, &Message::<NoJob>::Progress(p));
    }

    fn runtime(&mut self) -> Result<&mut Runtime, WireError> {
        if self.rt.is_none() {
            let opened = Runtime::open(self.device).map(|mut rt| {
                rt.set_in_process_fault_recovery(false);
                rt
            });
            self.rt = Some(opened);
        }
        match self.rt.as_mut() {
            Some(Ok(rt)) => Ok(rt),
            Some(Err(e)) => Err(WireError::from_runtime(e)),
            None => Err(WireError::Other {
                message: "no runtime".into(),
                fix: "retry".into(),
            }),
        }
    }

    fn handle(&mut self, req: Request<J::Job>) -> Result<Response<J::Done>, WireError> {
        match req {
            Request::Shutdown => Ok(Response::Bye),
            Request::Test { action } => self.test(action),
            Request::Probe => Ok(Response::Caps(Box::new(self.runtime()?.caps().clone()))),
            Request::Stats => {
                let rt = self.runtime()?;
                Ok(Response::Stats(Box::new(snapshot(rt))))
            }
            Request::Resources(job) => {
                let rt = self.runtime()?;
                let opts = JitOptions {
                    lineinfo: job.lineinfo,
                    ..JitOptions::default()
                };
                let (_, info) = rt
                    .load_kernel(&job.ptx, &job.kernel, &opts)
                    .map_err(|e| WireError::from_runtime(&e))?;
                Ok(Response::Resources(Box::new(info)))
            }
            Request::RawFault { case, timeout_ms } => {
                self.runtime()?;
                let budget = timeout_ms.unwrap_or(RAW_FAULT_BUDGET_MS);
                self.progress(Progress {
                    device: true,
                    budget_ms: Some(budget),
                    ..Progress::default()
                });
                let rt = self.runtime()?;
                let timeout = timeout_ms.map(Duration::from_millis);
                let one = [1, 1, 1];
                let warp = [32, 1, 1];
                let r = match case {
                    FaultCase::IllegalAddress => rt.launch_raw(
                        FAULT_PTX,
                        "vs_fault_store",
                        one,
                        warp,
                        &mut [0xdead_0000_0000, 7],
                        timeout,
                    ),
                    FaultCase::Trap => {
                        rt.launch_raw(FAULT_PTX, "vs_fault_trap", one, warp, &mut [], timeout)
                    }
                    FaultCase::Spin { ns } => {
                        rt.launch_raw(FAULT_PTX, "vs_spin", one, warp, &mut [ns], timeout)
                    }
                };
                r.map(Response::Launched)
                    .map_err(|e| WireError::from_runtime(&e))
            }
            Request::Run(job) => self.run(job),
            Request::Tune(job) => self.tune(job),
            Request::Job(job) => self.job(job).map(Response::Done),
        }
    }

    /// Runs a harness job, on the runtime when it uses it. The job announces no device
    /// budget: its launches carry their own timeouts. An error after which the runtime is
    /// poisoned is a sticky fault, so this worker exits after replying.
    fn job(&mut self, job: J::Job) -> Result<J::Done, WireError> {
        self.progress(Progress::default());
        if !self.jobs.uses_runtime(&job) {
            return self.jobs.run(job, None).map_err(|p| WireError::Other {
                message: p.message,
                fix: p.fix,
            });
        }
        self.runtime()?;
        let Some(Ok(rt)) = self.rt.as_mut() else {
            return Err(WireError::Other {
                message: "no runtime".into(),
                fix: "retry".into(),
            });
        };
        let done = self.jobs.run(job, Some(&mut *rt));
        done.map_err(|p| match rt.poisoned() {
            Some(what) => WireError::Fault {
                kernel: String::new(),
                what: what.to_string(),
                driver: p.message.lines().next().unwrap_or_default().to_string(),
                fix: "a fault in an emitted kernel is a vyrescope bug: please report it with the pipeline file".into(),
            },
            None => WireError::Other {
                message: p.message,
                fix: p.fix,
            },
        })
    }

    fn test(&mut self, action: TestAction) -> Result<Response<J::Done>, WireError> {
        match action {
            TestAction::Exit { code } => {
                let _ = self.out.flush();
                std::process::exit(code)
            }
            TestAction::Abort => std::process::abort(),
            TestAction::Hang { budget_ms } => {
                self.progress(Progress {
                    device: true,
                    budget_ms: Some(budget_ms),
                    ..Progress::default()
                });
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
        }
    }

    fn run(&mut self, job: RunJob) -> Result<Response<J::Done>, WireError> {
        // A malformed Program is reported before (and without) touching the GPU.
        let program = parse(&job.program, &job.file)?;
        self.runtime()?;
        let req = RunRequest {
            repeat: job.request.repeat.max(1),
            ..job.request.clone()
        };
        let run = self
            .watched_run(&program, &job.base_dir, &req, 0, 0)
            .map_err(|e| WireError::from_runtime(&e))?;
        let rt = self.runtime()?;
        let caps = rt.caps();
        let report = RunReport::new(
            &program.name,
            "cuda",
            &run.shape,
            &run.buffers,
            run.report.full_ms,
            None,
        );
        let outputs = report
            .outputs
            .iter()
            .map(|(name, o)| OutputDigest {
                buffer: name.clone(),
                elem: o.elem.name().to_string(),
                len: o.len,
                checksum: o.checksum.clone(),
            })
            .collect();
        Ok(Response::Ran(Box::new(RunOutcome {
            program: program.name.clone(),
            kernel: run.compiled.emitted.kernel_name.clone(),
            shape: run.shape,
            sm: job.request.sm.unwrap_or(caps.cc_major * 10 + caps.cc_minor),
            device: caps.name.clone(),
            device_sm: caps.cc_major * 10 + caps.cc_minor,
            dispatch: run.report,
            info: run.compiled.info,
            ptx_cached: run.compiled.ptx_cached,
            parity: run.parity,
            outputs,
            stats: snapshot(rt),
        })))
    }

    /// Runs a Program, telling the client about each phase (step `done` of `total`).
    fn watched_run(
        &mut self,
        program: &crate::ir::Program,
        base: &Path,
        req: &RunRequest,
        done: u32,
        total: u32,
    ) -> Result<crate::runtime::execute::ProgramRun, RuntimeError> {
        let out = &mut *self.out;
        let Some(Ok(rt)) = self.rt.as_mut() else {
            return Err(RuntimeError::Other(crate::util::Problem::new(
                "the GPU runtime is not open",
                "retry",
            )));
        };
        rt.run_program_watched(program, base, req, &mut |phase| {
            let p = match phase {
                RunPhase::Host => Progress {
                    done,
                    total,
                    device: false,
                    budget_ms: None,
                },
                RunPhase::Device { budget } => Progress {
                    done,
                    total,
                    device: true,
                    budget_ms: budget.map(|b| b.as_millis() as u64),
                },
            };
            let _ = write_line(out, &Message::<NoJob>::Progress(p));
        })
    }

    fn tune(&mut self, job: TuneJob) -> Result<Response<J::Done>, WireError> {
        let program = parse(&job.program, &job.file)?;
        self.runtime()?;
        let total = job.candidates.len() as u32;
        let mut rows = Vec::with_capacity(job.candidates.len());
        for (i, wg) in job.candidates.iter().enumerate() {
            let req = RunRequest {
                workgroup: Some(*wg),
                sm: job.sm,
                repeat: job.repeat.max(1),
                verify: true,
                timeout: job.timeout_ms.map(Duration::from_millis),
                root: job.root.clone(),
                ..RunRequest::default()
            };
            let run = self.watched_run(&program, &job.base_dir, &req, i as u32, total);
            let result = match run {
                Ok(r) => {
                    let rt = self.runtime()?;
                    let threads = wg.iter().product();
                    let occ =
                        estimate(rt.caps(), &r.compiled.info.resources, threads, 0).occupancy_pct;
                    Ok(TunePoint {
                        median_ms: r.report.device_ms.as_ref().map(|d| d.median_ms),
                        occupancy_pct: occ,
                        parity_ok: r.parity.as_ref().is_some_and(|p| p.passed),
                    })
                }
                Err(e) => {
                    let w = WireError::from_runtime(&e);
                    if w.is_sticky() {
                        // The sweep cannot go on in this process.
                        return Err(w);
                    }
                    Err(TuneFailure::from_runtime(&e))
                }
            };
            rows.push(TuneOutcome {
                workgroup: *wg,
                result,
            });
            self.progress(Progress {
                done: i as u32 + 1,
                total,
                device: false,
                budget_ms: None,
            });
        }
        Ok(Response::Tuned(rows))
    }
}

fn parse(text: &str, file: &str) -> Result<crate::ir::Program, WireError> {
    crate::ir::parse_program(text, file).map_err(|e| WireError::Other {
        message: crate::util::HasFix::message(&e),
        fix: e.fix,
    })
}

fn snapshot(rt: &Runtime) -> StatsSnapshot {
    StatsSnapshot {
        cache: rt.cache_report(),
        telemetry: rt.telemetry().clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests that need no GPU behave the same on any machine.
    #[test]
    fn hello_first_then_replies_in_order() {
        let input = b"{\"op\":\"bogus\"}\n\n{\"op\":\"shutdown\"}\n".to_vec();
        // Shutdown exits the process, so test the pieces instead: a malformed request and
        // end of input.
        let only_bad = &input[..input.iter().position(|&b| b == b'\n').unwrap_or(0) + 1];
        let mut out = Vec::new();
        let code = serve(&mut &only_bad[..], &mut out, 0, &mut NoJobs);
        assert_eq!(code, 0, "end of input ends the worker cleanly");
        let text = String::from_utf8(out).expect("utf8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let hello: Message = serde_json::from_str(lines[0]).expect("hello");
        assert!(
            matches!(hello, Message::Hello { protocol: PROTOCOL_VERSION, pid } if pid == std::process::id())
        );
        let reply: Message = serde_json::from_str(lines[1]).expect("reply");
        match reply {
            Message::Reply(Reply {
                result: Err(WireError::Other { message, fix }),
                exiting: false,
            }) => assert!(
                message.contains("could not read a request")
                    && fix.contains("same vyrescope build"),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
    }
}
