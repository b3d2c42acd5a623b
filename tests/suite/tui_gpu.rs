//! The inspector's GPU seam: a fake `Gpu` answers the dispatch that `update` asks for, and
//! the reply lands in the Run tab's state (and on screen) through `update`.

use std::path::PathBuf;

use crate::tui_helpers::{app, screen, update, NoGpu, NO_DRIVER};
use vyrescope::emit::{EmitOptions, EmittedKernel};
use vyrescope::ir::Program;
use vyrescope::occupancy::{DeviceCaps, KernelResources};
use vyrescope::tui::action::{Action, Cmd, Command};
use vyrescope::tui::background::Job;
use vyrescope::tui::component::tabs::{self, TabComponent};
use vyrescope::tui::gpu::{Counters, Gpu, InputFolder, Parity, RunRecord, TuneRow};
use vyrescope::tui::replay::perform;
use vyrescope::util::Problem;

/// What the fake was asked, and what it answers: a record with times drawn from `seed`.
struct FakeGpu {
    seed: u64,
    asked: Vec<(String, PathBuf, EmitOptions)>,
    stats_reads: usize,
}

impl FakeGpu {
    /// A pseudo-random number in [0, 1) (xorshift), so the times are not round constants.
    fn next(&mut self) -> f64 {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        (self.seed >> 11) as f64 / (1u64 << 53) as f64
    }
}

impl Gpu for FakeGpu {
    fn probe(&mut self) -> Result<DeviceCaps, Problem> {
        Err(crate::tui_helpers::no_driver())
    }
    fn live_resources(&mut self, _: &EmittedKernel) -> Option<Result<KernelResources, Problem>> {
        None
    }
    fn dispatch(
        &mut self,
        program: &Program,
        files: &InputFolder,
        opts: &EmitOptions,
    ) -> Result<RunRecord, Problem> {
        self.asked
            .push((program.name.clone(), files.base.clone(), opts.clone()));
        let device_ms = 0.05 + self.next();
        let jit_ms = 1.0 + 10.0 * self.next();
        Ok(RunRecord {
            program: program.name.clone(),
            grid: [1 + (self.next() * 4096.0) as u32, 1, 1],
            workgroup: opts.workgroup_size,
            sm: opts.sm,
            device_ms,
            jit_ms,
            parity: Some(Parity {
                ok: true,
                mismatches: 0,
                first: vec![],
            }),
            backend: vyrescope::tui::gpu::GPU_BACKEND.into(),
        })
    }
    fn tune(
        &mut self,
        _: &Program,
        _: &InputFolder,
        _: &EmitOptions,
        _: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<TuneRow>, Problem> {
        Err(Problem::new("not asked in this test", ""))
    }
    fn cache_stats(&mut self) -> Result<Counters, Problem> {
        self.stats_reads += 1;
        Ok(vec![("ptx.hits".into(), self.stats_reads.to_string())])
    }
    fn telemetry(&mut self) -> Result<Counters, Problem> {
        Ok(vec![("launches".into(), "5".into())])
    }
}

#[test]
fn a_fake_gpu_drives_a_dispatch_through_update_into_the_run_tab() {
    let (mut a, hl) = app(&[crate::tui_helpers::fixture("vadd_f32.json")], 120, 40);
    // The fake stands for a probed device (without one, r runs the reference interpreter).
    a.jobs.devices.live = a.jobs.devices.current().cloned();
    // A workgroup other than the program's, so the fake can tell it was passed on.
    update(&mut a, Action::Command(Command::WgDouble));
    let wg = a.workgroup();
    let sm = a.code.sm;

    // `update` itself runs nothing: it switches to the Run tab and returns the job.
    let cmds = vyrescope::tui::update::update(&mut a, Action::Command(Command::Dispatch));
    assert!(
        matches!(&cmds[..], [Cmd::Job(Job::Dispatch { .. })]),
        "{cmds:?}"
    );
    assert_eq!(a.detail.tab, tabs::Run.id());
    assert_eq!(a.jobs.pending, 1);
    assert!(a.jobs.busy.is_some());
    assert!(a.jobs.session.runs.is_empty());

    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0x9e37_79b9, |d| d.as_nanos() as u64)
        | 1;
    let mut gpu = FakeGpu {
        seed,
        asked: Vec::new(),
        stats_reads: 0,
    };
    assert!(!perform(&mut a, &mut gpu, cmds), "a dispatch does not quit");

    // The fake saw the open program with the options in effect.
    assert_eq!(gpu.asked.len(), 1);
    let (name, base, opts) = &gpu.asked[0];
    assert_eq!(name, "vadd_f32");
    assert!(base.ends_with("fixtures/programs"), "{}", base.display());
    assert_eq!((opts.workgroup_size, opts.sm), (wg, sm));

    // Its reply is the Run tab's state: the record, selected; the counters; nothing busy.
    let runs = &a.jobs.session.runs;
    assert_eq!(runs.len(), 1);
    let run = runs[0].clone();
    assert_eq!(
        (run.program.as_str(), run.workgroup, run.sm),
        ("vadd_f32", wg, sm)
    );
    assert!(run.device_ms > 0.05 && run.device_ms < 1.05);
    assert_eq!(a.jobs.session.run_error, None);
    assert_eq!(a.detail.pane.cursor, 0);
    assert_eq!(
        a.jobs.session.cache,
        Ok(vec![("ptx.hits".to_string(), "1".to_string())])
    );
    assert_eq!((a.jobs.pending, a.jobs.busy.clone()), (0, None));
    let msg = a.screen.message.clone().expect("a status message").1;
    assert!(msg.contains(&format!("{:.3} ms", run.device_ms)), "{msg}");
    // And the Run tab draws it.
    let text = screen(&mut a, &hl);
    assert!(text.contains(&format!("{:.4}", run.device_ms)), "{text}");

    // A second dispatch appends and selects the new row; the offline fake in the helpers
    // fails it with the driver's reason instead, which the Run tab keeps.
    let cmds = vyrescope::tui::update::update(&mut a, Action::Command(Command::Dispatch));
    perform(&mut a, &mut gpu, cmds);
    assert_eq!(a.jobs.session.runs.len(), 2);
    assert_eq!(a.detail.pane.cursor, 1);
    let cmds = vyrescope::tui::update::update(&mut a, Action::Command(Command::Dispatch));
    perform(&mut a, &mut NoGpu, cmds);
    assert_eq!(a.jobs.session.runs.len(), 2);
    assert_eq!(a.jobs.session.run_error.as_deref(), Some(NO_DRIVER));
}
