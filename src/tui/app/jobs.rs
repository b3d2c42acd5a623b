//! The GPU session sub-state: live device or offline profile, dispatch and tune results,
//! cache and telemetry counters, and the jobs in flight on the worker (progress indicator).

use crate::megakernel::cache::{PlanCache, PlanCacheCounts};
use crate::occupancy::DeviceCaps;
use crate::tui::action::{Action, Cmd};
use crate::tui::background::{Job, Reply, Stats};
use crate::tui::gpu::{Counters, RunRecord, TuneRow, NO_RUNTIME};
use crate::util::Problem;

/// Work in progress, for the progress indicator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    /// What runs.
    pub label: &'static str,
    /// Steps done.
    pub done: usize,
    /// Total steps (0 = unknown: spinner only).
    pub total: usize,
}

/// Live device or offline profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Devices {
    /// Probed device, once the probe succeeds.
    pub live: Option<DeviceCaps>,
    /// Why there is no live device (until probed: "probing...").
    pub live_error: String,
    /// Offline profiles (name, caps).
    pub profiles: Vec<(String, DeviceCaps)>,
    /// Selected profile when offline (index into `profiles`).
    pub profile: usize,
}

impl Default for Devices {
    fn default() -> Self {
        Devices {
            live: None,
            live_error: "probing...".into(),
            profiles: Vec::new(),
            profile: 0,
        }
    }
}

impl Devices {
    /// The device estimates are made for: live first, else the selected profile.
    pub fn current(&self) -> Option<&DeviceCaps> {
        self.live
            .as_ref()
            .or_else(|| self.profiles.get(self.profile).map(|p| &p.1))
    }

    /// Status-bar label: the live device's name or `offline: <profile>`.
    pub fn label(&self) -> String {
        match (&self.live, self.profiles.get(self.profile)) {
            (Some(d), _) => d.name.clone(),
            (None, Some((n, _))) => format!("offline: {n}"),
            (None, None) => "offline: no profile".into(),
        }
    }
}

/// Results of GPU work this session.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// Dispatches, oldest first.
    pub runs: Vec<RunRecord>,
    /// Pipeline runs, oldest first.
    pub pipeline_runs: Vec<crate::tui::pipeline::PipelineRun>,
    /// Why the last dispatch failed (shown in the Run tab).
    pub run_error: Option<String>,
    /// Last tune sweep.
    pub tune: Option<Result<Vec<TuneRow>, Problem>>,
    /// Cache statistics, or why there are none.
    pub cache: Result<Counters, Problem>,
    /// Telemetry, or why there is none.
    pub telemetry: Result<Counters, Problem>,
    /// The plan cache pipelines are planned through (`None`: plan in memory only).
    pub plan_cache: Option<PlanCache>,
    /// Plan-cache counters of this session (planning happens in the inspector's process,
    /// so they are kept here rather than in the GPU worker's statistics).
    pub plan_counts: PlanCacheCounts,
    /// The last per-statement profile (`p`), or why it failed.
    pub profile: Option<crate::tui::profile::ProfileView>,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            runs: Vec::new(),
            pipeline_runs: Vec::new(),
            run_error: None,
            tune: None,
            cache: Err(Problem::new(NO_RUNTIME, "")),
            telemetry: Err(Problem::new(NO_RUNTIME, "")),
            plan_cache: None,
            plan_counts: PlanCacheCounts::default(),
            profile: None,
        }
    }
}

impl Session {
    /// The Cache tab's rows: the plan cache's counters once it was used, then the GPU
    /// runtime's (or why there are none).
    pub fn cache_rows(&self) -> Result<Counters, Problem> {
        self.with_plan_rows(&self.cache)
    }

    /// The Telemetry tab's rows, with the plan cache's counters like the CLI's telemetry.
    pub fn telemetry_rows(&self) -> Result<Counters, Problem> {
        self.with_plan_rows(&self.telemetry)
    }

    fn with_plan_rows(&self, runtime: &Result<Counters, Problem>) -> Result<Counters, Problem> {
        if self.plan_cache.is_none() && self.plan_counts == PlanCacheCounts::default() {
            return runtime.clone();
        }
        let mut rows = self.plan_counts.rows();
        match runtime {
            Ok(r) => rows.extend(r.iter().cloned()),
            Err(e) => rows.push((
                "runtime".into(),
                crate::tui::gpu::short_gpu_error(&e.to_string()),
            )),
        }
        Ok(rows)
    }

    /// Counts one planning, when it went through a plan cache (in-memory planning is not a
    /// cache miss).
    pub fn record_plan(&mut self, c: &crate::megakernel::cache::Cached) {
        if self.plan_cache.is_some() {
            self.plan_counts.record(c);
        }
    }

    /// Takes the counters a GPU job reported afterwards.
    pub fn take_stats(&mut self, stats: Stats) {
        self.cache = stats.cache;
        self.telemetry = stats.telemetry;
    }
}

/// Device, results and jobs in flight.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Jobs {
    /// Devices.
    pub devices: Devices,
    /// GPU results.
    pub session: Session,
    /// Running work.
    pub busy: Option<Busy>,
    /// Jobs queued or running on the worker.
    pub pending: usize,
}

impl Jobs {
    /// Counts `job` as in flight and returns the command that hands it to the worker.
    pub fn queue(&mut self, job: Job) -> Cmd {
        if self.busy.is_none() {
            self.busy = Some(Busy {
                label: job.label(),
                done: 0,
                total: 0,
            });
        }
        self.pending += 1;
        Cmd::Job(job)
    }

    /// Applies the progress replies (`Started`, `Progress`), which change nothing else, and
    /// a dead worker (nothing is in flight any more). Final replies are the caller's, which
    /// then calls [`Jobs::finished`].
    pub fn update(&mut self, action: &Action) -> Vec<Cmd> {
        match action {
            Action::Worker(Reply::Started(label, total)) => {
                self.busy = Some(Busy {
                    label,
                    done: 0,
                    total: *total,
                });
            }
            Action::Worker(Reply::Progress(done, total)) => {
                if let Some(b) = &mut self.busy {
                    b.done = *done;
                    b.total = *total;
                }
            }
            Action::WorkerGone => self.abandon(),
            _ => {}
        }
        Vec::new()
    }

    /// A final reply arrived: one job fewer in flight.
    pub fn finished(&mut self) {
        self.pending = self.pending.saturating_sub(1);
        if self.pending == 0 {
            self.busy = None;
        }
    }

    /// The worker is gone: nothing is in flight any more.
    pub fn abandon(&mut self) {
        self.busy = None;
        self.pending = 0;
    }
}
