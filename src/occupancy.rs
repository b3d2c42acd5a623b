//! Occupancy: pure math over device capabilities and kernel resources (no CUDA).
//!
//! CONTRACT: [`DeviceCaps`] is what `runtime` probes and what device profiles hold;
//! [`KernelResources`] is what the driver (or `ptxas -v`) reports for one kernel.
//!
//! [`estimate`] reproduces `cuOccupancyMaxActiveBlocksPerMultiprocessor` (register allocation
//! per warp and per sub-partition, warp and block slots, shared-memory allocation unit,
//! reserved shared memory and carveout choice; see [`estimate`](mod@estimate) for the model
//! and [`arch`] for the cited constants) and explains it: the limiter, the blocks each
//! resource alone allows and the headroom of each. [`sweep`] runs it over block sizes,
//! registers and shared memory; [`profiles`] holds the bundled device descriptions;
//! [`table`] compares it with captured driver answers; [`tune`] holds the tuning results
//! cache and table.

use serde::{Deserialize, Serialize};

pub mod arch;
pub mod estimate;
pub mod headroom;
pub mod profiles;
pub mod sweep;
pub mod table;
pub mod tune;

pub use arch::ArchConstants;
pub use estimate::{
    blocks_per_sm, estimate, estimate_with, max_threads_for_regs, DynamicSmemAttr, Estimate,
    FuncConfig, LimitBlocks, Limiter, Unlaunchable,
};
pub use headroom::Headroom;
pub use sweep::{
    block_workgroup, suggest_block_sizes, sweep_block_sizes, sweep_dynamic_smem, sweep_registers,
    Refused, Suggestion, SweepRow, MAX_SWEEP_ROWS,
};
pub use table::{compare_rows, Comparison, TableRow};
pub use tune::{TuneResult, TuneRow, TuneStatus};

/// A device's capabilities (probed through `cuDeviceGetAttribute`, or from a profile).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceCaps {
    /// Marketing name.
    pub name: String,
    /// Compute capability major.
    pub cc_major: u32,
    /// Compute capability minor.
    pub cc_minor: u32,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Max threads per block.
    pub max_threads_per_block: u32,
    /// Max resident threads per SM.
    pub max_threads_per_sm: u32,
    /// Max resident blocks per SM.
    pub max_blocks_per_sm: u32,
    /// 32-bit registers per SM.
    pub regs_per_sm: u32,
    /// 32-bit registers per block.
    pub regs_per_block: u32,
    /// Default max shared memory per block (bytes).
    pub smem_per_block: u32,
    /// Shared memory per SM (bytes).
    pub smem_per_sm: u32,
    /// Opt-in max shared memory per block (bytes).
    pub smem_per_block_optin: u32,
    /// Shared memory reserved by the system per block (bytes).
    pub smem_reserved_per_block: u32,
    /// Warp width.
    pub warp_size: u32,
    /// Max block dimensions.
    pub max_block_dim: [u32; 3],
    /// Max grid dimensions.
    pub max_grid_dim: [u32; 3],
    /// L2 cache bytes.
    pub l2_bytes: u64,
    /// SM clock (kHz).
    pub clock_khz: u32,
    /// Memory clock (kHz).
    pub mem_clock_khz: u32,
    /// Memory bus width (bits).
    pub bus_width_bits: u32,
    /// Supports cooperative launch.
    pub cooperative_launch: bool,
    /// Global memory bytes.
    pub total_mem_bytes: u64,
    /// Driver version (e.g. 13000), 0 for table profiles.
    pub driver_version: u32,
    /// "probed" or "from tables".
    pub source: String,
    /// Free text: where the figures came from (date, driver, document).
    pub provenance: String,
}

/// One kernel's resource usage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct KernelResources {
    /// Registers per thread.
    pub regs_per_thread: u32,
    /// Static shared memory (bytes).
    pub static_smem_bytes: u32,
    /// Local (spill/stack) memory per thread (bytes).
    pub local_bytes: u32,
    /// Constant memory (bytes).
    pub const_bytes: u32,
    /// Max threads per block the kernel can launch with (register-limited); 0 when unknown
    /// (the model then derives it from the registers).
    pub max_threads_per_block: u32,
}
