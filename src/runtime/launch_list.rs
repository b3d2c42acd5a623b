//! Launch lists: the runtime's one way to run a sequence of kernel launches over buffers that
//! stay on the device. Every multi-launch execution goes through it: a pipeline run separately
//! or as a megakernel plan ([`Runtime::run_pipeline`]) and a timeline run
//! ([`Runtime::run_timeline`]), whose launches are the same list with a record buffer per
//! launch and kernels emitted instrumented.
//!
//! The steps are public so a caller can compose them: check the list ([`LaunchList`], pure
//! host code), compile its kernels ([`Runtime::compile_list`]), upload the buffers
//! ([`Runtime::upload`], the list's record buffers after the data ones), run passes
//! ([`Runtime::launch_list`]: enqueue, synchronise, device times per pass or per launch),
//! read back ([`Runtime::download`]) and release ([`Runtime::release`]).

use std::time::{Duration, Instant};

use super::dispatch::{DispatchOptions, LaunchMode, ReadyLaunch, ResidentSet};
use super::driver::{self, Event};
use super::jit::{JitOptions, KernelHandle};
use super::timeline::{emit_instrumented, TimelineLaunch};
use super::{profiler_range, Result, Runtime, RuntimeError, GENERIC_FIX};
use crate::emit::timeline::TimelineSpec;
use crate::emit::{EmitOptions, EmittedKernel};
use crate::inputs::{HostBuffer, LaunchShape};
use crate::ir::{Access, ElemType, Program};
use crate::megakernel::launch::PipelineLaunch;
use crate::util::Problem;

/// The timeline records of one list entry: what its instrumented kernel records and which
/// resident buffer the records go to.
#[derive(Debug, Clone, PartialEq)]
pub struct ListRecord {
    /// What the instrumented kernel records.
    pub spec: TimelineSpec,
    /// Index of the record buffer in the resident set (after the data buffers).
    pub buffer: usize,
}

/// One launch of a [`LaunchList`].
#[derive(Debug, Clone, PartialEq)]
pub struct ListEntry {
    /// What runs (a Program, a pipeline step or a fused kernel).
    pub program: Program,
    /// Its launch.
    pub shape: LaunchShape,
    /// Kernel buffer `i` (binding order) is resident data buffer `buffers[i]`.
    pub buffers: Vec<usize>,
    /// Timeline records of this launch (None: a plain kernel).
    pub record: Option<ListRecord>,
}

/// A checked sequence of launches over `data_buffers` resident data buffers, followed in the
/// resident set by one record buffer per recording entry, in entry order.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchList {
    /// Data buffers the launches index.
    pub data_buffers: usize,
    /// The launches, in order.
    pub entries: Vec<ListEntry>,
}

fn index_error(program: &str, bad: usize, of: usize) -> RuntimeError {
    RuntimeError::Abi(Problem::new(
        format!("launch of `{program}` names pipeline buffer {bad} of {of}"),
        "index the buffers given to the launch list (the pipeline's buffers, in order)",
    ))
}

impl LaunchList {
    /// The list of plain `launches` over `data_buffers` buffers (a pipeline run's).
    pub fn plain(launches: &[PipelineLaunch], data_buffers: usize) -> Result<LaunchList> {
        let entries = launches.iter().map(|l| ListEntry {
            program: l.program.clone(),
            shape: l.shape,
            buffers: l.buffers.clone(),
            record: None,
        });
        Self::checked(entries.collect(), data_buffers)
    }

    /// The timeline mode of a list: every launch records (its kernel is emitted instrumented)
    /// into a record buffer of its own, numbered after the `data_buffers` data buffers.
    pub fn timeline(launches: &[TimelineLaunch], data_buffers: usize) -> Result<LaunchList> {
        let entries = launches.iter().enumerate().map(|(i, l)| ListEntry {
            program: l.program.clone(),
            shape: l.shape,
            buffers: l.buffers.clone(),
            record: Some(ListRecord {
                spec: l.spec.clone(),
                buffer: data_buffers + i,
            }),
        });
        Self::checked(entries.collect(), data_buffers)
    }

    fn checked(entries: Vec<ListEntry>, data_buffers: usize) -> Result<LaunchList> {
        for e in &entries {
            if let Some(&bad) = e.buffers.iter().find(|&&i| i >= data_buffers) {
                return Err(index_error(&e.program.name, bad, data_buffers));
            }
        }
        Ok(LaunchList {
            data_buffers,
            entries,
        })
    }

    /// The same launches without recording: the plain kernels a timeline run times beside
    /// the instrumented ones (the overhead). Record buffers stay in the resident set, unused.
    pub fn uninstrumented(&self) -> LaunchList {
        LaunchList {
            data_buffers: self.data_buffers,
            entries: self
                .entries
                .iter()
                .map(|e| ListEntry {
                    record: None,
                    ..e.clone()
                })
                .collect(),
        }
    }

    /// Buffers the resident set holds: the data buffers, then the record buffers.
    pub fn resident_buffers(&self) -> usize {
        let records = self.entries.iter().filter_map(|e| e.record.as_ref());
        records
            .map(|r| r.buffer + 1)
            .max()
            .unwrap_or(0)
            .max(self.data_buffers)
    }

    /// The zeroed record buffers, in resident order (append them to the data buffers before
    /// uploading). A record buffer over 4 GiB is refused (the grid is too large to record).
    pub fn record_buffers(&self) -> Result<Vec<HostBuffer>> {
        let mut out = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            let Some(r) = &e.record else { continue };
            let blocks: u64 = e.shape.grid.iter().map(|&g| u64::from(g)).product();
            let bytes = r.spec.buffer_bytes(blocks);
            if bytes > 1 << 32 {
                return Err(RuntimeError::Launch(Problem::new(
                    format!(
                        "timeline of launch {i} needs {bytes} bytes of records ({blocks} blocks x {} slots)",
                        r.spec.slots_per_block
                    ),
                    "run fewer workgroups with --timeline",
                )));
            }
            out.push(HostBuffer {
                name: format!("timeline_{i}"),
                elem: ElemType::U32,
                access: Access::ReadWrite,
                binding: u32::MAX,
                data: vec![0; bytes as usize],
            });
        }
        Ok(out)
    }
}

/// The kernel of one list entry, loaded on this device.
#[derive(Debug, Clone)]
pub struct ListKernel {
    /// The emitter's output (instrumented for a recording entry).
    pub emitted: EmittedKernel,
    /// Launchable kernel.
    pub handle: KernelHandle,
    /// Takes a record-buffer pointer after its other arguments.
    pub records: bool,
}

/// How one pass over a launch list is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListTiming {
    /// One pair of CUDA events around the whole pass, the launches enqueued back to back
    /// without host waits: the figure includes the gaps between kernels on the device (what
    /// fusing saves), so separate and fused executions compare like for like.
    Sequence,
    /// Events around each launch, each waited for: a device time per launch (a timeline
    /// run's, which reports each launch beside its records).
    PerLaunch,
}

/// Device times of one pass.
#[derive(Debug, Clone, PartialEq)]
pub struct PassTimes {
    /// The whole pass (ms): the sequence's events, or the sum of the launches'.
    pub total_ms: f64,
    /// Each launch's (ms), in order; empty for [`ListTiming::Sequence`].
    pub launch_ms: Vec<f64>,
}

impl Runtime {
    /// Compiles the kernel of every entry of `list` for this device: plain entries as
    /// [`Runtime::compile_program`] does, recording entries instrumented (see
    /// [`super::timeline::instrumented_kernel`]).
    pub fn compile_list(&mut self, list: &LaunchList, jit: &JitOptions) -> Result<Vec<ListKernel>> {
        let mut out = Vec::with_capacity(list.entries.len());
        for e in &list.entries {
            out.push(match &e.record {
                None => {
                    let c = self.compile_program(&e.program, e.shape.workgroup_size, jit)?;
                    ListKernel {
                        emitted: c.emitted,
                        handle: c.handle,
                        records: false,
                    }
                }
                Some(r) => self.compile_recording(e, &r.spec, jit)?,
            });
        }
        Ok(out)
    }

    fn compile_recording(
        &mut self,
        e: &ListEntry,
        spec: &TimelineSpec,
        jit: &JitOptions,
    ) -> Result<ListKernel> {
        let caps = self.caps();
        let (sm, sms) = (caps.cc_major * 10 + caps.cc_minor, caps.sm_count);
        let eopts = EmitOptions {
            sm,
            grid_barrier: jit.grid_barrier,
            ..EmitOptions::for_program(&e.program)
        };
        let k = emit_instrumented(&e.program, e.shape.workgroup_size, spec, &eopts)?;
        let (mut h, _) = self.load_kernel(&k.ptx, &k.kernel_name, jit)?;
        // A cooperative grid was sized from the plain kernel's residency; recording costs
        // registers, and a persistent grid that no longer fits is refused. So the
        // instrumented kernel is built for that many blocks per SM (`.minnctapersm`; it may
        // spill a little: a timeline measures the schedule, not register pressure).
        if k.abi.grid_sync {
            let blocks: u64 = e.shape.grid.iter().map(|&g| u64::from(g)).product();
            let threads = e.shape.workgroup_size.iter().product::<u32>();
            if self.resident_blocks(&h, threads)? < blocks {
                let per_sm = blocks.div_ceil(u64::from(sms.max(1)));
                let ptx = crate::emit::with_min_blocks_per_sm(
                    &k.ptx,
                    u32::try_from(per_sm).unwrap_or(u32::MAX),
                );
                h = self.load_kernel(&ptx, &k.kernel_name, jit)?.0;
            }
        }
        Ok(ListKernel {
            emitted: k,
            handle: h,
            records: true,
        })
    }

    /// One pass over `list` with its compiled `kernels` on resident set `set` (the list's
    /// data buffers, then its record buffers): every launch checked and its arguments built
    /// first, then enqueued in order and waited for, timed as `timing` says. The one launch
    /// loop of every multi-launch execution.
    pub fn launch_list(
        &mut self,
        list: &LaunchList,
        kernels: &[ListKernel],
        set: &ResidentSet,
        timing: ListTiming,
        opts: &DispatchOptions,
    ) -> Result<PassTimes> {
        let mut ready = self.prepare_list(list, kernels, set, opts)?;
        let names: Vec<&str> = list
            .entries
            .iter()
            .map(|e| e.program.name.as_str())
            .collect();
        let _range = profiler_range("vyrescope launch list");
        if timing == ListTiming::Sequence {
            let sess = self.sess()?;
            sess.ev_start
                .record(&sess.stream)
                .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        }
        let mut launch_ms = Vec::new();
        for (k, launch) in ready.iter_mut().enumerate() {
            let name = names[k];
            let _step = profiler_range(&format!("vyrescope launch {k}: {name}"));
            self.arm_grid_sync(launch)?;
            let device_ms = match timing {
                ListTiming::Sequence => {
                    let sess = self.sess()?;
                    let (f, geo, coop) = (launch.f, &launch.geo, launch.cooperative);
                    if let Err(e) = driver::launch(f, geo, &sess.stream, &mut launch.args, coop) {
                        return Err(self.launch_error(name, e));
                    }
                    None
                }
                ListTiming::PerLaunch => {
                    let mode = LaunchMode {
                        cooperative: launch.cooperative,
                        timeout: opts.timeout,
                        timed: true,
                    };
                    let t =
                        self.launch_core(name, launch.f, &launch.geo, &mut launch.args, mode)?;
                    launch_ms.push(t.device_ms.unwrap_or(0.0));
                    t.device_ms
                }
            };
            self.telemetry
                .record_launch(launch.cooperative, launch.slots, launch.slots, device_ms);
        }
        let total_ms = match timing {
            ListTiming::Sequence => self.wait_sequence(&names, opts.timeout)?,
            ListTiming::PerLaunch => launch_ms.iter().sum(),
        };
        Ok(PassTimes {
            total_ms,
            launch_ms,
        })
    }

    /// Checks every launch of a pass and builds its arguments (a recording kernel's record
    /// pointer after its others).
    fn prepare_list(
        &mut self,
        list: &LaunchList,
        kernels: &[ListKernel],
        set: &ResidentSet,
        opts: &DispatchOptions,
    ) -> Result<Vec<ReadyLaunch>> {
        if kernels.len() != list.entries.len() || set.lens.len() < list.resident_buffers() {
            return Err(RuntimeError::Abi(Problem::new(
                format!(
                    "a launch list of {} launches over {} buffers was given {} kernels and a resident set of {} buffers",
                    list.entries.len(),
                    list.resident_buffers(),
                    kernels.len(),
                    set.lens.len()
                ),
                "compile the list with compile_list and upload its data buffers followed by its record_buffers",
            )));
        }
        // Grid-barrier kernels share one scratch: size it for the largest first, so that
        // preparing a later launch never replaces the scratch an earlier one points to.
        let words = kernels
            .iter()
            .filter(|k| k.emitted.abi.grid_sync)
            .map(|k| k.emitted.abi.scratch.words.max(1) as usize)
            .max();
        if let Some(words) = words {
            self.ensure_scratch(words)?;
        }
        let ptrs = self.resident_pointers(set)?;
        let mut ready = Vec::with_capacity(kernels.len());
        for (e, k) in list.entries.iter().zip(kernels) {
            let abi = &k.emitted.abi;
            let mut r = self.prepare_launch(&k.handle, abi, &e.shape, set, &e.buffers, opts)?;
            match (&e.record, k.records) {
                (Some(rec), true) => {
                    let p = ptrs.get(rec.buffer).ok_or(RuntimeError::StaleResident)?;
                    r.args.push(*p);
                }
                (None, false) => {}
                _ => {
                    return Err(RuntimeError::Abi(Problem::new(
                        format!(
                            "launch of `{}`: the list and its kernel disagree on recording a timeline",
                            e.program.name
                        ),
                        "compile the list with compile_list (uninstrumented() lists compile plain kernels)",
                    )))
                }
            }
            ready.push(r);
        }
        Ok(ready)
    }

    /// Waits for the sequence a [`ListTiming::Sequence`] pass enqueued (polling its stop
    /// event against `timeout`) and returns its device time.
    fn wait_sequence(&mut self, names: &[&str], timeout: Option<Duration>) -> Result<f64> {
        let sess = self.sess()?;
        sess.ev_stop
            .record(&sess.stream)
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        let t = Instant::now();
        let waited = loop {
            let sess = self.sess()?;
            match sess.ev_stop.query() {
                Ok(true) => break Ok(()),
                Ok(false) if timeout.is_none_or(|l| t.elapsed() < l) => {
                    std::thread::sleep(Duration::from_micros(50))
                }
                Ok(false) => {
                    self.telemetry.faults += 1;
                    let recover_ms = self.recreate()?;
                    return Err(RuntimeError::Timeout {
                        kernel: names.join(" + "),
                        timeout_ms: timeout.map_or(0, |l| l.as_millis() as u64),
                        recover_ms,
                    });
                }
                Err(e) => break Err(e),
            }
        };
        self.telemetry.sync_points += 1;
        if let Err(e) = waited {
            return Err(self.launch_error(&names.join(" + "), e));
        }
        let sess = self.sess()?;
        Event::elapsed_ms(&sess.ev_start, &sess.ev_stop)
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))
    }
}
