//! Launching a kernel that vyrescope did not emit (another compiler's PTX, e.g. vyre's): the
//! caller builds the raw parameter list (device pointers of resident buffers, scalars) in the
//! foreign kernel's own ABI; the runtime JITs, checks the shape and times the launches the
//! same way as its own kernels (CUDA events around each launch).

use super::dispatch::{LaunchMode, LaunchTiming};
use super::driver::Geometry;
use super::{KernelHandle, ResidentSet, Result, Runtime, RuntimeError};
use crate::shape::LaunchShape;

impl Runtime {
    /// Device pointers of the buffers of `set`, in the order they were uploaded.
    pub fn resident_pointers(&mut self, set: &ResidentSet) -> Result<Vec<u64>> {
        let sess = self.sess()?;
        if set.generation_of() != sess.generation {
            return Err(RuntimeError::StaleResident);
        }
        let bufs = sess
            .pool
            .resident
            .get(&set.id())
            .ok_or(RuntimeError::StaleResident)?;
        Ok(bufs.iter().map(|b| b.ptr()).collect())
    }

    /// Launches foreign kernel `h` `launches` times with the 8-byte parameters `args` (each
    /// a device pointer or a zero-extended scalar, in the kernel's parameter order) and
    /// returns each launch's timing (device time when `timed`).
    pub fn launch_foreign(
        &mut self,
        h: &KernelHandle,
        shape: &LaunchShape,
        args: &[u64],
        cooperative: bool,
        launches: u32,
        timed: bool,
    ) -> Result<Vec<LaunchTiming>> {
        let (f, _res) = self.kernel_for_launch(h)?;
        let geo = Geometry {
            grid: shape.grid,
            block: shape.workgroup_size,
            dynamic_smem: 0,
        };
        let mut args = args.to_vec();
        let mut out = Vec::with_capacity(launches as usize);
        for _ in 0..launches.max(1) {
            let mode = LaunchMode {
                cooperative,
                timeout: None,
                timed,
            };
            out.push(self.launch_core(&h.name, f, &geo, &mut args, mode)?);
        }
        Ok(out)
    }
}
