//! The baseline for host-overhead comparisons: a bare cudarc launch loop, kept apart from the
//! driver handles it is measured against. Part of the unsafe boundary (`runtime::driver`).

use std::ffi::{c_void, CString};

use cudarc::driver::sys;

use super::{range_error, DriverError, Geometry, Stream};

/// The baseline for host-overhead comparisons: a bare cudarc launch loop. Loads `ptx` with
/// cudarc's plain `cuModuleLoadData` wrapper and times `iters` x (`cuLaunchKernel` through
/// cudarc's `result::launch_kernel`, then a wait) on `stream`; returns each iteration's wall
/// time in microseconds. Without `events` the wait is `cuStreamSynchronize`; with `events`
/// each launch sits between two `cuEventRecord`s (cudarc's `result::event`), the host waits
/// on the second event and reads `cuEventElapsedTime`: the minimal timed launch, to compare
/// with vyrescope's timed dispatch.
pub(crate) fn bare_cudarc_launch_loop(
    ptx: &str,
    name: &str,
    geo: &Geometry,
    stream: &Stream,
    args: &mut [u64],
    iters: u32,
    events: bool,
) -> Result<Vec<f64>, DriverError> {
    use cudarc::driver::result;
    let cudarc_err = |call: &'static str| {
        move |e: result::DriverError| DriverError {
            call,
            code: e.0 as u32,
            name: format!("{:?}", e.0),
            text: String::new(),
        }
    };
    let image = CString::new(ptx).map_err(|_| range_error("cuModuleLoadData"))?;
    let cname = CString::new(name).map_err(|_| range_error("cuModuleGetFunction"))?;
    // Safety: NUL-terminated PTX alive for the call; the module is unloaded below.
    let module = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
        .map_err(cudarc_err("cuModuleLoadData"))?;
    let pair = if events {
        let a = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let b = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT);
        match (a, b) {
            (Ok(a), Ok(b)) => Some((a, b)),
            (a, b) => {
                for e in [a, b].into_iter().flatten() {
                    // Safety: a live event created above, destroyed once.
                    unsafe {
                        let _ = result::event::destroy(e);
                    }
                }
                // Safety: the module is live and unused.
                unsafe {
                    let _ = result::module::unload(module);
                }
                return Err(DriverError {
                    call: "cuEventCreate",
                    code: 0,
                    name: "event creation failed".into(),
                    text: String::new(),
                });
            }
        }
    } else {
        None
    };
    let mut times = Vec::with_capacity(iters as usize);
    let outcome = (|| -> Result<(), DriverError> {
        // Safety: live module and NUL-terminated name.
        let f = unsafe { result::module::get_function(module, cname) }
            .map_err(cudarc_err("cuModuleGetFunction"))?;
        let mut ptrs: Vec<*mut c_void> = args
            .iter_mut()
            .map(|a| a as *mut u64 as *mut c_void)
            .collect();
        for _ in 0..iters {
            let t = std::time::Instant::now();
            if let Some((start, _)) = pair {
                // Safety: live event and stream of the current context.
                unsafe { result::event::record(start, stream.0) }
                    .map_err(cudarc_err("cuEventRecord"))?;
            }
            // Safety: `ptrs` point at `args`, alive across the call; live function/stream.
            unsafe {
                result::launch_kernel(
                    f,
                    (geo.grid[0], geo.grid[1], geo.grid[2]),
                    (geo.block[0], geo.block[1], geo.block[2]),
                    geo.dynamic_smem,
                    stream.0,
                    &mut ptrs,
                )
            }
            .map_err(cudarc_err("cuLaunchKernel"))?;
            match pair {
                Some((start, stop)) => {
                    // Safety: live events recorded on a live stream; `stop` is waited for
                    // before the elapsed time is read.
                    unsafe {
                        result::event::record(stop, stream.0)
                            .map_err(cudarc_err("cuEventRecord"))?;
                        result::event::synchronize(stop)
                            .map_err(cudarc_err("cuEventSynchronize"))?;
                        result::event::elapsed(start, stop)
                            .map_err(cudarc_err("cuEventElapsedTime"))?;
                    }
                }
                None => stream.synchronize()?,
            }
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        Ok(())
    })();
    // Safety: the events and the module are live and nothing uses them any more (every
    // recorded event was waited for, or the loop failed before the launch).
    unsafe {
        if let Some((a, b)) = pair {
            let _ = result::event::destroy(a);
            let _ = result::event::destroy(b);
        }
        let _ = result::module::unload(module);
    }
    outcome.map(|_| times)
}
