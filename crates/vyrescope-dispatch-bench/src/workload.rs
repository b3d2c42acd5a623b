//! A small application to record: the benchmark's cases at host sizes through `dispatch`
//! and `dispatch_borrowed`, then (where the backend has the resident API) the vector add on
//! resident buffers, once alone and once as a repeated sequence, with reads. Any backend runs
//! it: the race binary records vyre-driver-cuda's own dispatches with it, so that vyrescope
//! can replay them on its backends and say whether they agree.

use vyre_driver::backend::{
    BackendError, DispatchConfig, ResidentDispatchStep, ResidentReadRange, VyreBackend,
};

use crate::bench::{for_each_case, BenchSizes};
use crate::samples::vadd_f32;

/// What the workload did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// Host-buffer dispatches.
    pub dispatches: u32,
    /// Resident API calls (0 when the backend has none).
    pub resident_calls: u32,
    /// Every output and read equalled the host's.
    pub verified: bool,
}

/// Runs the workload on `be`, checking every result against the host.
pub fn record_workload(be: &dyn VyreBackend) -> Result<Workload, BackendError> {
    let cfg = DispatchConfig::default();
    let mut w = Workload {
        dispatches: 0,
        resident_calls: 0,
        verified: true,
    };
    for_each_case(&BenchSizes::HOST, |case| {
        let out = be.dispatch(&case.program, &case.inputs, &cfg)?;
        w.verified &= case.verifies(&out);
        let borrowed: Vec<&[u8]> = case.inputs.iter().map(Vec::as_slice).collect();
        let out = be.dispatch_borrowed(&case.program, &borrowed, &cfg)?;
        w.verified &= case.verifies(&out);
        w.dispatches += 2;
        Ok::<_, BackendError>(())
    })?;
    if be.supports_resident_dispatch() {
        resident(be, &mut w)?;
    }
    Ok(w)
}

/// `c = a + b` on resident buffers, then `c = a + b` again inside a repeated sequence whose
/// steps read back a range: the bytes must equal the host's each time.
fn resident(be: &dyn VyreBackend, w: &mut Workload) -> Result<(), BackendError> {
    const N: u32 = 4096;
    let a: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..N).map(|i| (N - i) as f32 * 0.25).collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let want = bytes(&a.iter().zip(&b).map(|(x, y)| x + y).collect::<Vec<_>>());
    let len = N as usize * 4;
    let p = vadd_f32(N);
    let res = [
        be.allocate_resident(len)?,
        be.allocate_resident(len)?,
        be.allocate_resident(len)?,
    ];
    be.upload_resident_many(&[(&res[0], &bytes(&a)), (&res[1], &bytes(&b))])?;
    be.dispatch_resident_timed(&p, &res, &DispatchConfig::default())?;
    let c = be.download_resident(&res[2])?;
    w.verified &= c == want;
    let step = ResidentDispatchStep {
        program: &p,
        resources: &res,
        grid_override: None,
        workgroup_override: None,
    };
    let read = [ResidentReadRange {
        resource: &res[2],
        byte_offset: 64,
        byte_len: 1024,
    }];
    let mut got = Vec::new();
    be.dispatch_resident_repeated_sequence_read_ranges_into(
        std::slice::from_ref(&step),
        std::slice::from_ref(&step),
        2,
        &read,
        &mut [&mut got],
    )?;
    w.verified &= got == want[64..64 + 1024];
    w.resident_calls = 7;
    for r in res {
        be.free_resident(r)?;
    }
    w.resident_calls += 3;
    Ok(())
}
