//! Device probe: [`DeviceCaps`] from `cuDeviceGetAttribute`, marked "probed" with the date
//! and driver version.

use cudarc::driver::sys::CUdevice_attribute as A;

use super::driver::{self, Device};
use super::{Result, Runtime, RuntimeError, GENERIC_FIX};
use crate::occupancy::DeviceCaps;

/// Probes device `ordinal` without keeping a context (loads the driver first).
pub fn probe(ordinal: u32) -> Result<DeviceCaps> {
    super::load_driver()?;
    read_caps(device(ordinal)?)
}

/// Device `ordinal` (the driver must be loaded), or `NoDevice` naming how many are visible.
pub(super) fn device(ordinal: u32) -> Result<Device> {
    let count = driver::device_count().map_err(|e| RuntimeError::NoDevice {
        ordinal,
        detail: e.to_string(),
    })?;
    if ordinal >= count {
        return Err(RuntimeError::NoDevice {
            ordinal,
            detail: format!("{count} device(s) visible"),
        });
    }
    Device::get(ordinal).map_err(|e| RuntimeError::NoDevice {
        ordinal,
        detail: e.to_string(),
    })
}

impl Runtime {
    /// Number of visible devices (after the driver is loaded).
    pub fn device_count() -> Result<u32> {
        super::load_driver()?;
        driver::device_count().map_err(|e| RuntimeError::driver(e, GENERIC_FIX))
    }
}

/// Reads every [`DeviceCaps`] field from the driver.
pub(super) fn read_caps(dev: Device) -> Result<DeviceCaps> {
    let d = |e| RuntimeError::driver(e, GENERIC_FIX);
    let a = |attr: A| -> Result<u32> { dev.attr(attr).map(|v| v.max(0) as u32).map_err(d) };
    let driver_version = driver::driver_version().map_err(d)?;
    let name = dev.name().map_err(d)?;
    let kernel_driver = kernel_driver_version();
    let provenance = format!(
        "probed with cuDeviceGetAttribute by vyrescope {} on {} (UTC); CUDA driver API {}.{}{}",
        env!("CARGO_PKG_VERSION"),
        utc_date(),
        driver_version / 1000,
        (driver_version % 1000) / 10,
        kernel_driver
            .map(|v| format!(", kernel driver {v}"))
            .unwrap_or_default()
    );
    Ok(DeviceCaps {
        name,
        cc_major: a(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        cc_minor: a(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        sm_count: a(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        max_threads_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_threads_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        max_blocks_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
        regs_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        regs_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
        smem_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        smem_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        smem_per_block_optin: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        smem_reserved_per_block: a(A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)?,
        warp_size: a(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        max_block_dim: [
            a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_grid_dim: [
            a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ],
        l2_bytes: a(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
        clock_khz: a(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
        mem_clock_khz: a(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
        bus_width_bits: a(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
        cooperative_launch: a(A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? != 0,
        total_mem_bytes: dev.total_mem().map_err(d)?,
        driver_version,
        source: "probed".into(),
        provenance,
    })
}

/// The kernel module's version string (`580.159.04`) from `/proc/driver/nvidia/version`,
/// where the platform has it.
fn kernel_driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    let idx = line.find("Kernel Module")?;
    // "Kernel Module  580.159.04" or "Open Kernel Module for x86_64  580.159.04": the first
    // dotted number after the marker.
    line[idx..]
        .split_whitespace()
        .find(|t| t.contains('.') && t.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(|s| s.to_string())
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 -> (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm: 400-year eras of 146097 days, March-based years).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

impl Runtime {
    /// Blocks per SM from the driver for kernel `h` (raising its dynamic shared limit first
    /// when `dynamic_smem` exceeds the default 48 KiB).
    pub fn driver_occupancy(
        &mut self,
        h: &super::KernelHandle,
        block: u32,
        dynamic_smem: u32,
    ) -> Result<u32> {
        let cached = self
            .sess()?
            .modules
            .peek(h.key)
            .map(|k| (k.function, k.info.max_dynamic_smem));
        let (f, default_dyn) = match cached {
            Some(c) => c,
            None => {
                let (f, info) = self.kernel(h)?;
                (f, info.max_dynamic_smem)
            }
        };
        // The attribute is set to exactly what this launch needs (or back to the default),
        // the configuration the estimator models ("raised as needed").
        f.set_max_dynamic_smem(dynamic_smem.max(default_dyn))
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        f.max_active_blocks(block, dynamic_smem)
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_match_known_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        // 2000-02-29 is day 11016; 2024-12-31 is day 20088.
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_088), (2024, 12, 31));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn probe_without_driver_is_one_clear_error() {
        // On CI machines there is no libcuda; on GPU machines the probe succeeds.
        match probe(0) {
            Ok(caps) => assert_eq!(caps.source, "probed"),
            Err(RuntimeError::NoDriver { lib, .. }) => assert_eq!(lib, "libcuda.so.1"),
            Err(RuntimeError::NoDevice { .. }) => {}
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
}
