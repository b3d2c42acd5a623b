//! Per-architecture allocation constants that the driver does not report as device attributes.
//!
//! Everything the driver *does* report (threads, blocks and registers per SM, shared memory
//! sizes, the reserved shared memory per block) comes from [`DeviceCaps`]; this table holds the
//! allocation rules around them. Sources, cited per constant below:
//! - [PG]: CUDA C++ Programming Guide, "Compute Capabilities", table "Technical Specifications
//!   per Compute Capability" and the per-architecture "Shared Memory" sections (7.x, 8.x, 9.0).
//! - [OCC]: the CUDA Occupancy Calculator ("GPU Data" sheet) and the CUDA Toolkit header
//!   `cuda_occupancy.h`, which documents the model behind `cuOccupancyMaxActiveBlocksPerMultiprocessor`.
//! - [TG]: NVIDIA Ampere / Hopper Tuning Guides ("Occupancy", "Unified Shared Memory/L1").

use super::DeviceCaps;

const KIB: u32 = 1024;

/// Allocation rules of one compute capability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchConstants {
    /// Compute capability, e.g. `(9, 0)`.
    pub cc: (u32, u32),
    /// Registers are allocated per warp in units of this many registers. [OCC] "Register
    /// allocation unit size" = 256 for every compute capability >= 3.0.
    pub reg_alloc_unit: u32,
    /// Warps per SM sub-partition scheduler; registers are split evenly across the
    /// sub-partitions and a warp's registers must fit in one, and the hardware's per-block
    /// register check rounds a block's warps up to a multiple of this. [OCC] "Warp allocation
    /// granularity" = 4 (`cudaOccSubPartitionsPerMultiprocessor` = 4 on 7.x/8.x/9.0).
    pub warp_alloc_granularity: u32,
    /// Most 32-bit registers one thread may use. [PG] "Maximum number of 32-bit registers per
    /// thread" = 255 for every listed compute capability.
    pub max_regs_per_thread: u32,
    /// Shared memory is allocated per block in units of this many bytes. [OCC] "Shared memory
    /// allocation unit size": 256 B on 7.x, 128 B on 8.x and 9.0.
    pub smem_alloc_unit: u32,
    /// Shared memory the driver reserves per block. [PG] 8.x/9.0 "Shared Memory": "1 KB of
    /// shared memory is reserved for system use" per block (`cudaDevAttrReservedSharedMemoryPerBlock`); 0 before 8.0.
    pub smem_reserved_per_block: u32,
    /// Shared memory capacities (carveouts) an SM can be configured with, ascending, bytes.
    /// [PG] 7.x: "0, 8, 16, 32, 64 or 96 KB" (7.0/7.2), "32 or 64 KB" (7.5); 8.x: "0, 8, 16, 32,
    /// 64, 100, 132 or 164 KB" (8.0/8.7), "0, 8, 16, 32, 64 or 100 KB" (8.6/8.9); 9.0: "0, 8,
    /// 16, 32, 64, 100, 132, 164, 196 or 228 KB". [TG] Hopper tuning guide lists the same.
    pub carveouts: &'static [u32],
    /// Max resident warps per SM. [PG] "Maximum number of resident warps per SM": 64 on
    /// 7.0/7.2/8.0/9.0, 48 on 8.6/8.7/8.9, 32 on 7.5.
    pub max_warps_per_sm: u32,
    /// Max resident blocks per SM. [PG] "Maximum number of resident blocks per SM".
    pub max_blocks_per_sm: u32,
    /// Max shared memory per SM (the largest carveout). [PG] "Maximum amount of shared memory per SM".
    pub max_smem_per_sm: u32,
    /// Max shared memory per block with opt-in. [PG] "Maximum amount of shared memory per thread block".
    pub max_smem_per_block_optin: u32,
}

const VOLTA_CARVEOUTS: [u32; 6] = [0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 96 * KIB];
const TURING_CARVEOUTS: [u32; 2] = [32 * KIB, 64 * KIB];
const GA100_CARVEOUTS: [u32; 8] = [
    0,
    8 * KIB,
    16 * KIB,
    32 * KIB,
    64 * KIB,
    100 * KIB,
    132 * KIB,
    164 * KIB,
];
const GA10X_CARVEOUTS: [u32; 6] = [0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 100 * KIB];
const HOPPER_CARVEOUTS: [u32; 10] = [
    0,
    8 * KIB,
    16 * KIB,
    32 * KIB,
    64 * KIB,
    100 * KIB,
    132 * KIB,
    164 * KIB,
    196 * KIB,
    228 * KIB,
];

impl ArchConstants {
    /// The constants of compute capability `major.minor`, or `None` when this crate has no
    /// table for it (supported: 7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0).
    pub fn for_cc(major: u32, minor: u32) -> Option<ArchConstants> {
        // (warps/SM, blocks/SM, smem/SM KiB, opt-in smem/block KiB, carveouts), all [PG].
        let (warps, blocks, smem_sm, optin, carveouts): (u32, u32, u32, u32, &'static [u32]) =
            match (major, minor) {
                (7, 0) | (7, 2) => (64, 32, 96, 96, &VOLTA_CARVEOUTS),
                (7, 5) => (32, 16, 64, 64, &TURING_CARVEOUTS),
                (8, 0) => (64, 32, 164, 163, &GA100_CARVEOUTS),
                (8, 6) => (48, 16, 100, 99, &GA10X_CARVEOUTS),
                (8, 7) => (48, 16, 164, 163, &GA100_CARVEOUTS),
                (8, 9) => (48, 24, 100, 99, &GA10X_CARVEOUTS),
                (9, 0) => (64, 32, 228, 227, &HOPPER_CARVEOUTS),
                _ => return None,
            };
        let ampere_plus = major >= 8;
        Some(ArchConstants {
            cc: (major, minor),
            reg_alloc_unit: 256,
            warp_alloc_granularity: 4,
            max_regs_per_thread: 255,
            smem_alloc_unit: if ampere_plus { 128 } else { 256 },
            smem_reserved_per_block: if ampere_plus { KIB } else { 0 },
            carveouts,
            max_warps_per_sm: warps,
            max_blocks_per_sm: blocks,
            max_smem_per_sm: smem_sm * KIB,
            max_smem_per_block_optin: optin * KIB,
        })
    }

    /// The constants for a device, or `None` for an unsupported compute capability.
    pub fn for_caps(caps: &DeviceCaps) -> Option<ArchConstants> {
        Self::for_cc(caps.cc_major, caps.cc_minor)
    }

    /// The smallest carveout that holds `bytes` (what the driver configures the SM to), or
    /// `None` when no carveout is that large. Mirrors the "align up to the next supported
    /// shared memory size" step of the occupancy model [OCC].
    pub fn align_up_carveout(&self, bytes: u64) -> Option<u32> {
        self.carveouts
            .iter()
            .copied()
            .find(|&c| u64::from(c) >= bytes)
    }

    /// Supported compute capabilities, for messages.
    pub const SUPPORTED: &'static str = "7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_carveout_is_smem_per_sm() {
        for (ma, mi) in [
            (7, 0),
            (7, 2),
            (7, 5),
            (8, 0),
            (8, 6),
            (8, 7),
            (8, 9),
            (9, 0),
        ] {
            let a = ArchConstants::for_cc(ma, mi).unwrap();
            assert_eq!(*a.carveouts.last().unwrap(), a.max_smem_per_sm, "{ma}.{mi}");
            assert!(a.carveouts.windows(2).all(|w| w[0] < w[1]));
            // Opt-in per block plus the reserved kilobyte never exceeds the SM's capacity.
            assert!(a.max_smem_per_block_optin + a.smem_reserved_per_block <= a.max_smem_per_sm);
        }
        assert!(ArchConstants::for_cc(6, 1).is_none());
    }

    #[test]
    fn align_up_picks_next_carveout() {
        let h = ArchConstants::for_cc(9, 0).unwrap();
        assert_eq!(h.align_up_carveout(0), Some(0));
        assert_eq!(h.align_up_carveout(1), Some(8 * KIB));
        assert_eq!(
            h.align_up_carveout(u64::from(100 * KIB) + 1),
            Some(132 * KIB)
        );
        assert_eq!(h.align_up_carveout(u64::from(228 * KIB) + 1), None);
        let t = ArchConstants::for_cc(7, 5).unwrap();
        assert_eq!(t.align_up_carveout(0), Some(32 * KIB));
    }
}
