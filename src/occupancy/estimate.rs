//! The occupancy model: blocks per SM for one kernel, block size and dynamic shared memory,
//! computed exactly as `cuOccupancyMaxActiveBlocksPerMultiprocessor` does.
//!
//! The four limits follow the model NVIDIA documents in the CUDA Occupancy Calculator and the
//! toolkit header `cuda_occupancy.h` (see [`super::arch`] for the constants):
//! - warps: `max_threads_per_sm / 32` warp slots, a block takes `ceil(threads / 32)`;
//! - registers: `regs * 32` rounded up to 256 per warp; each of the 4 sub-partitions holds
//!   `regs_per_sm / 4 / regs_per_warp` warps (a warp never straddles two), and the hardware
//!   rejects a block whose warps, rounded up to a multiple of 4, exceed `regs_per_block`;
//! - shared memory: static + dynamic + the reserved kilobyte, rounded up to 128 B, against the
//!   SM's shared-memory configuration: with no carveout preference the driver configures the
//!   largest carveout (the most blocks); with a preference, the preferred size aligned up to a
//!   supported carveout, raised to the next carveout that holds one block when it is smaller;
//! - blocks: the per-SM block slot count.

use serde::{Serialize, Serializer};

use super::arch::ArchConstants;
use super::headroom::{headroom, Headroom};
use super::{DeviceCaps, KernelResources};

/// What limits the number of resident blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    /// Warp slots per SM (block size).
    Warps,
    /// Register file.
    Registers,
    /// Shared memory.
    SharedMemory,
    /// Resident block slots per SM.
    BlocksPerSm,
}

impl Limiter {
    /// Short name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Warps => "warps",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared_memory",
            Limiter::BlocksPerSm => "blocks_per_sm",
        }
    }
}

impl std::fmt::Display for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How the kernel's `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DynamicSmemAttr {
    /// Raised to the launch's dynamic size whenever that exceeds the driver default (what
    /// vyrescope's runtime and selftest do before a launch).
    #[default]
    RaisedAsNeeded,
    /// Left at the driver default: the default per-block limit minus the static size.
    DriverDefault,
    /// Set to this many bytes.
    Set(u32),
}

/// Per-function launch settings that change the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct FuncConfig {
    /// The max-dynamic-shared-memory attribute.
    pub max_dynamic_smem: DynamicSmemAttr,
    /// `CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT` in percent (0..=100); `None` when
    /// unset (the driver then configures the largest carveout).
    pub carveout_pct: Option<u32>,
}

/// Blocks per SM each resource alone would allow (`None`: the resource is not used, no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LimitBlocks {
    /// By warp slots.
    pub warps: u32,
    /// By registers (`None` for a kernel using no registers).
    pub registers: Option<u32>,
    /// By shared memory (`None` when a block allocates none).
    pub shared_memory: Option<u32>,
    /// By block slots.
    pub blocks_per_sm: u32,
}

impl LimitBlocks {
    /// The limit of one resource (`u32::MAX` for an unused one).
    pub fn of(&self, l: Limiter) -> u32 {
        match l {
            Limiter::Warps => self.warps,
            Limiter::Registers => self.registers.unwrap_or(u32::MAX),
            Limiter::SharedMemory => self.shared_memory.unwrap_or(u32::MAX),
            Limiter::BlocksPerSm => self.blocks_per_sm,
        }
    }
}

/// Why a launch with this configuration cannot run (zero blocks per SM).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unlaunchable {
    /// Block of zero threads.
    EmptyBlock,
    /// More threads than the device allows per block.
    BlockTooLarge {
        /// Requested threads.
        block: u32,
        /// Device max threads per block.
        max: u32,
    },
    /// More threads than the kernel can launch with (register-limited or `.maxntid`).
    KernelBlockLimit {
        /// Requested threads.
        block: u32,
        /// Kernel max threads per block.
        max: u32,
    },
    /// More registers per thread than the architecture allows.
    TooManyRegisters {
        /// Registers per thread.
        regs: u32,
        /// Architecture max.
        max: u32,
    },
    /// The block's registers exceed the per-block register file limit.
    RegistersPerBlock {
        /// Registers per thread.
        regs: u32,
        /// Threads per block.
        block: u32,
        /// Registers the hardware check assumes.
        needed: u64,
        /// Device registers per block.
        available: u32,
        /// Largest block that fits.
        max_block: u32,
    },
    /// Dynamic shared memory above the kernel's max-dynamic attribute.
    DynamicAboveAttribute {
        /// Requested dynamic bytes.
        dynamic: u32,
        /// The attribute.
        attr: u32,
    },
    /// The block's shared memory exceeds the per-block limit.
    SharedMemoryPerBlock {
        /// Allocated bytes per block.
        needed: u64,
        /// Limit including the reserved bytes.
        limit: u64,
        /// Reserved bytes per block.
        reserved: u32,
        /// Allocation unit.
        unit: u32,
        /// Static + dynamic bytes that would fit.
        usable: u64,
    },
    /// The device's compute capability has no allocation table here.
    UnsupportedDevice {
        /// CC major.
        major: u32,
        /// CC minor.
        minor: u32,
        /// Supported list.
        supported: &'static str,
    },
    /// A device description with a zero where a positive number is needed.
    InvalidDevice(&'static str),
    /// Carveout preference out of range.
    InvalidCarveout(u32),
}

/// The occupancy of one kernel at one block size and dynamic shared-memory size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    /// Threads per block.
    pub block_threads: u32,
    /// Dynamic shared memory per block (bytes).
    pub dynamic_smem_bytes: u32,
    /// Resident blocks per SM (what `cuOccupancyMaxActiveBlocksPerMultiprocessor` returns).
    pub blocks_per_sm: u32,
    /// Resident warps per SM.
    pub active_warps_per_sm: u32,
    /// Warp slots per SM.
    pub max_warps_per_sm: u32,
    /// `active_warps_per_sm / max_warps_per_sm`, percent.
    pub occupancy_pct: f64,
    /// The limiting resource (the first of [`Estimate::limiters`]).
    pub limiter: Limiter,
    /// Every resource whose limit equals `blocks_per_sm` (ties), in the order warps,
    /// registers, shared memory, blocks.
    pub limiters: Vec<Limiter>,
    /// Blocks per SM each resource alone allows.
    pub limits: LimitBlocks,
    /// Warps per block.
    pub warps_per_block: u32,
    /// Registers allocated per warp (`regs * 32` rounded up to the allocation unit).
    pub regs_per_warp: u32,
    /// Registers allocated per block.
    pub regs_per_block: u64,
    /// Shared memory allocated per block, reserved bytes included (bytes).
    pub smem_per_block: u64,
    /// Shared-memory capacity the SM is configured with for this launch (bytes).
    pub smem_config_bytes: u64,
    /// How far each resource is from changing the answer.
    pub headroom: Vec<Headroom>,
    /// `Ok` when at least one block fits; otherwise why not (with a Fix).
    #[serde(serialize_with = "ser_launchable")]
    pub launchable: Result<(), Unlaunchable>,
}

fn ser_launchable<S: Serializer>(r: &Result<(), Unlaunchable>, s: S) -> Result<S::Ok, S::Error> {
    match r {
        Ok(()) => s.serialize_none(),
        Err(e) => s.serialize_str(&e.to_string()),
    }
}

/// The pure numbers of one estimate (no headroom), shared by the estimate, sweeps and the
/// headroom search.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Core {
    pub blocks: u32,
    pub limits: LimitBlocks,
    pub warps_per_block: u32,
    pub max_warps: u32,
    pub regs_per_warp: u32,
    pub regs_per_block: u64,
    pub smem_per_block: u64,
    pub smem_config: u64,
    pub why: Result<(), Unlaunchable>,
}

fn check_device(caps: &DeviceCaps) -> Result<ArchConstants, Unlaunchable> {
    let arch = ArchConstants::for_caps(caps).ok_or(Unlaunchable::UnsupportedDevice {
        major: caps.cc_major,
        minor: caps.cc_minor,
        supported: ArchConstants::SUPPORTED,
    })?;
    for (name, v) in [
        ("max_threads_per_block", caps.max_threads_per_block),
        ("max_threads_per_sm", caps.max_threads_per_sm),
        ("max_blocks_per_sm", caps.max_blocks_per_sm),
        ("regs_per_sm", caps.regs_per_sm),
        ("regs_per_block", caps.regs_per_block),
        ("smem_per_block", caps.smem_per_block),
        ("smem_per_sm", caps.smem_per_sm),
        ("warp_size", caps.warp_size),
        ("sm_count", caps.sm_count),
    ] {
        if v == 0 {
            return Err(Unlaunchable::InvalidDevice(name));
        }
    }
    Ok(arch)
}

fn round_up(x: u64, unit: u64) -> u64 {
    x.div_ceil(unit) * unit
}

/// The kernel's largest launchable block (multiple of the warp size) given its registers per
/// thread: the register-limited `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
pub fn max_threads_for_regs(caps: &DeviceCaps, regs_per_thread: u32) -> u32 {
    let Ok(arch) = check_device(caps) else {
        return 0;
    };
    let ws = caps.warp_size;
    // Bounded by the largest valid block whatever the profile says (at most 32 steps).
    let top = caps
        .max_threads_per_block
        .min(crate::shape::MAX_WORKGROUP_THREADS as u32);
    let mut t = top / ws * ws;
    while t > 0 {
        if regs_fit_block(caps, &arch, regs_per_thread, t).is_ok() {
            return t;
        }
        t -= ws;
    }
    0
}

/// Registers allocated per warp.
fn regs_per_warp(caps: &DeviceCaps, arch: &ArchConstants, regs: u32) -> u64 {
    round_up(
        u64::from(regs) * u64::from(caps.warp_size),
        u64::from(arch.reg_alloc_unit),
    )
}

/// The per-block register checks: `Ok(allocated per block)` or the needed (hardware-assumed)
/// count.
fn regs_fit_block(
    caps: &DeviceCaps,
    arch: &ArchConstants,
    regs: u32,
    block: u32,
) -> Result<u64, u64> {
    let warps = u64::from(block.div_ceil(caps.warp_size));
    let per_warp = regs_per_warp(caps, arch, regs);
    let allocated = per_warp * warps;
    // The hardware check assumes registers go to all sub-partitions at once, so it rounds
    // the block's warps up to a multiple of the sub-partition count ([OCC]).
    let assumed = per_warp * round_up(warps, u64::from(arch.warp_alloc_granularity));
    let limit = u64::from(caps.regs_per_block);
    if assumed > limit || allocated > limit {
        Err(assumed.max(allocated))
    } else {
        Ok(allocated)
    }
}

pub(crate) fn core(
    caps: &DeviceCaps,
    res: &KernelResources,
    block: u32,
    dynamic: u32,
    cfg: &FuncConfig,
) -> Core {
    let arch = match check_device(caps) {
        Ok(a) => a,
        Err(e) => return zero_core(e),
    };
    let ws = caps.warp_size;
    let max_warps = caps.max_threads_per_sm / ws;
    let warps_per_block = block.div_ceil(ws);
    let mut why: Result<(), Unlaunchable> = Ok(());
    let mut fail = |e: Unlaunchable| {
        if why.is_ok() {
            why = Err(e);
        }
    };

    // Warps.
    let warps_limit = if block == 0 {
        fail(Unlaunchable::EmptyBlock);
        0
    } else if block > caps.max_threads_per_block {
        fail(Unlaunchable::BlockTooLarge {
            block,
            max: caps.max_threads_per_block,
        });
        0
    } else {
        max_warps / warps_per_block
    };

    // Registers.
    let rpw = regs_per_warp(caps, &arch, res.regs_per_thread);
    let (regs_limit, regs_per_block) = if block == 0 {
        (Some(0), 0)
    } else if res.regs_per_thread > arch.max_regs_per_thread {
        fail(Unlaunchable::TooManyRegisters {
            regs: res.regs_per_thread,
            max: arch.max_regs_per_thread,
        });
        (Some(0), rpw * u64::from(warps_per_block))
    } else {
        match regs_fit_block(caps, &arch, res.regs_per_thread, block) {
            Err(needed) => {
                fail(Unlaunchable::RegistersPerBlock {
                    regs: res.regs_per_thread,
                    block,
                    needed,
                    available: caps.regs_per_block,
                    max_block: max_threads_for_regs(caps, res.regs_per_thread),
                });
                (Some(0), rpw * u64::from(warps_per_block))
            }
            Ok(alloc) if rpw == 0 => (None, alloc),
            Ok(alloc) => {
                let parts = u64::from(arch.warp_alloc_granularity);
                let per_part = u64::from(caps.regs_per_sm) / parts / rpw;
                let warps_sm = per_part * parts;
                let lim = warps_sm / u64::from(warps_per_block);
                (Some(u32::try_from(lim).unwrap_or(u32::MAX)), alloc)
            }
        }
    };
    if res.max_threads_per_block > 0 && block > res.max_threads_per_block {
        fail(Unlaunchable::KernelBlockLimit {
            block,
            max: res.max_threads_per_block,
        });
    }

    // Shared memory.
    let (smem_limit, smem_per_block, smem_config) = smem_limit(caps, &arch, res, dynamic, cfg)
        .unwrap_or_else(|(e, alloc)| {
            fail(e);
            (Some(0), alloc, 0)
        });

    let limits = LimitBlocks {
        warps: warps_limit,
        registers: regs_limit,
        shared_memory: smem_limit,
        blocks_per_sm: caps.max_blocks_per_sm,
    };
    let mut blocks = [
        limits.warps,
        limits.registers.unwrap_or(u32::MAX),
        limits.shared_memory.unwrap_or(u32::MAX),
        limits.blocks_per_sm,
    ]
    .into_iter()
    .min()
    .unwrap_or(0);
    if why.is_err() {
        blocks = 0;
    }
    Core {
        blocks,
        limits,
        warps_per_block,
        max_warps,
        regs_per_warp: u32::try_from(rpw).unwrap_or(u32::MAX),
        regs_per_block,
        smem_per_block,
        smem_config,
        why,
    }
}

fn zero_core(e: Unlaunchable) -> Core {
    Core {
        blocks: 0,
        limits: LimitBlocks {
            warps: 0,
            registers: Some(0),
            shared_memory: Some(0),
            blocks_per_sm: 0,
        },
        warps_per_block: 0,
        max_warps: 0,
        regs_per_warp: 0,
        regs_per_block: 0,
        smem_per_block: 0,
        smem_config: 0,
        why: Err(e),
    }
}

/// `Ok((blocks limit, allocated per block, SM configuration))` or the failure with the
/// allocated size.
type SmemOutcome = Result<(Option<u32>, u64, u64), (Unlaunchable, u64)>;

fn smem_limit(
    caps: &DeviceCaps,
    arch: &ArchConstants,
    res: &KernelResources,
    dynamic: u32,
    cfg: &FuncConfig,
) -> SmemOutcome {
    let unit = u64::from(arch.smem_alloc_unit);
    let reserved = u64::from(caps.smem_reserved_per_block);
    let static_total = u64::from(res.static_smem_bytes) + reserved;
    let dynamic = u64::from(dynamic);
    let alloc = round_up(static_total + dynamic, unit);
    let default_block = u64::from(caps.smem_per_block);
    let driver_default_attr = default_block.saturating_sub(u64::from(res.static_smem_bytes));
    let attr = match cfg.max_dynamic_smem {
        DynamicSmemAttr::RaisedAsNeeded => driver_default_attr.max(dynamic),
        DynamicSmemAttr::DriverDefault => driver_default_attr,
        DynamicSmemAttr::Set(v) => u64::from(v),
    };
    if dynamic > attr {
        return Err((
            Unlaunchable::DynamicAboveAttribute {
                dynamic: u32::try_from(dynamic).unwrap_or(u32::MAX),
                attr: u32::try_from(attr).unwrap_or(u32::MAX),
            },
            alloc,
        ));
    }
    // Per-block limit: the default limit, or the opt-in one once the kernel may use more than
    // the default (static + reserved + attribute, as the driver's check is written); the
    // reserved kilobyte is added on top from 8.0 on.
    let max_usage = static_total + attr;
    let mut per_block = if max_usage > default_block {
        u64::from(caps.smem_per_block_optin.max(caps.smem_per_block))
    } else {
        default_block
    };
    if caps.cc_major >= 8 {
        per_block += reserved;
    }
    if alloc > per_block {
        let base = if caps.cc_major >= 8 {
            per_block - reserved
        } else {
            per_block
        };
        return Err((
            Unlaunchable::SharedMemoryPerBlock {
                needed: alloc,
                limit: per_block,
                reserved: caps.smem_reserved_per_block,
                unit: arch.smem_alloc_unit,
                usable: base / unit * unit,
            },
            alloc,
        ));
    }
    // SM shared-memory configuration.
    let sm = u64::from(caps.smem_per_sm);
    let preferred = match cfg.carveout_pct {
        None => arch.align_up_carveout(sm),
        Some(p) if p > 100 => return Err((Unlaunchable::InvalidCarveout(p), alloc)),
        Some(p) => arch.align_up_carveout(u64::from(p) * sm / 100),
    }
    .map(u64::from)
    .unwrap_or(sm);
    let config = if preferred >= alloc {
        preferred
    } else {
        // A preference too small for one block is overridden by the smallest carveout that
        // holds one.
        arch.align_up_carveout(alloc).map(u64::from).unwrap_or(sm)
    };
    let limit = config
        .checked_div(alloc)
        .map(|b| u32::try_from(b).unwrap_or(u32::MAX));

    Ok((limit, alloc, config))
}

/// Blocks per SM only (no explanations): the fast path for sweeps and table checks.
pub fn blocks_per_sm(
    caps: &DeviceCaps,
    res: &KernelResources,
    block_threads: u32,
    dynamic_smem: u32,
    cfg: &FuncConfig,
) -> u32 {
    core(caps, res, block_threads, dynamic_smem, cfg).blocks
}

/// The occupancy estimate with the default [`FuncConfig`] (dynamic shared-memory attribute
/// raised as needed, no carveout preference): what the driver answers for vyrescope's launches.
pub fn estimate(
    caps: &DeviceCaps,
    res: &KernelResources,
    block_threads: u32,
    dynamic_smem: u32,
) -> Estimate {
    estimate_with(
        caps,
        res,
        block_threads,
        dynamic_smem,
        &FuncConfig::default(),
    )
}

/// The occupancy estimate under explicit function settings.
pub fn estimate_with(
    caps: &DeviceCaps,
    res: &KernelResources,
    block_threads: u32,
    dynamic_smem: u32,
    cfg: &FuncConfig,
) -> Estimate {
    let c = core(caps, res, block_threads, dynamic_smem, cfg);
    let order = [
        Limiter::Warps,
        Limiter::Registers,
        Limiter::SharedMemory,
        Limiter::BlocksPerSm,
    ];
    let min = order.iter().map(|&l| c.limits.of(l)).min().unwrap_or(0);
    let mut limiters: Vec<Limiter> = order
        .iter()
        .copied()
        .filter(|&l| c.limits.of(l) == min)
        .collect();
    if c.blocks == 0 {
        // A failed check names its resource even when another limit is also 0.
        if let Err(e) = &c.why {
            let l = match e {
                Unlaunchable::TooManyRegisters { .. } | Unlaunchable::RegistersPerBlock { .. } => {
                    Some(Limiter::Registers)
                }
                Unlaunchable::DynamicAboveAttribute { .. }
                | Unlaunchable::SharedMemoryPerBlock { .. }
                | Unlaunchable::InvalidCarveout(_) => Some(Limiter::SharedMemory),
                Unlaunchable::EmptyBlock
                | Unlaunchable::BlockTooLarge { .. }
                | Unlaunchable::KernelBlockLimit { .. } => Some(Limiter::Warps),
                _ => None,
            };
            if let Some(l) = l {
                limiters.retain(|&x| x != l);
                limiters.insert(0, l);
            }
        }
    }
    let active_warps = c.blocks * c.warps_per_block;
    let occupancy_pct = if c.max_warps == 0 {
        0.0
    } else {
        f64::from(active_warps) * 100.0 / f64::from(c.max_warps)
    };
    let headroom = if c.blocks > 0 {
        headroom(caps, res, block_threads, dynamic_smem, cfg, &c)
    } else {
        Vec::new()
    };
    Estimate {
        block_threads,
        dynamic_smem_bytes: dynamic_smem,
        blocks_per_sm: c.blocks,
        active_warps_per_sm: active_warps,
        max_warps_per_sm: c.max_warps,
        occupancy_pct,
        limiter: limiters.first().copied().unwrap_or(Limiter::Warps),
        limiters,
        limits: c.limits,
        warps_per_block: c.warps_per_block,
        regs_per_warp: c.regs_per_warp,
        regs_per_block: c.regs_per_block,
        smem_per_block: c.smem_per_block,
        smem_config_bytes: c.smem_config,
        headroom,
        launchable: c.why,
    }
}

impl crate::util::HasFix for Unlaunchable {
    fn message(&self) -> String {
        match self {
            Self::EmptyBlock => "a block of 0 threads cannot launch".to_string(),
            Self::BlockTooLarge { block, max, .. } => format!("{block} threads per block exceed the device limit of {max}"),
            Self::KernelBlockLimit { block, max, .. } => format!("{block} threads per block exceed this kernel's limit of {max} (its registers per thread bound the block size)"),
            Self::TooManyRegisters { regs, max, .. } => format!("{regs} registers per thread exceed the architecture limit of {max}"),
            Self::RegistersPerBlock { regs, block, needed, available, .. } => format!("a block of {block} threads at {regs} registers per thread needs {needed} registers (allocated per warp, warps rounded up to a multiple of 4) but a block may use {available}"),
            Self::DynamicAboveAttribute { dynamic, attr, .. } => format!("{dynamic} B of dynamic shared memory exceed the kernel's max dynamic shared memory attribute ({attr} B)"),
            Self::SharedMemoryPerBlock { needed, limit, reserved, unit, .. } => format!("a block needs {needed} B of shared memory (static + dynamic + {reserved} B reserved, rounded to {unit} B) but the per-block limit is {limit} B"),
            Self::UnsupportedDevice { major, minor, .. } => format!("compute capability {major}.{minor} is not supported by the occupancy model"),
            Self::InvalidDevice(a0) => format!("device description has `{a0}` = 0"),
            Self::InvalidCarveout(a0) => format!("shared memory carveout preference {a0}% is out of range"),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::EmptyBlock => "use a workgroup size of at least 32 threads".to_string(),
            Self::BlockTooLarge { max, .. } => format!("use at most {max} threads per workgroup"),
            Self::KernelBlockLimit { max, .. } => format!("use at most {max} threads per workgroup, or reduce register use"),
            Self::TooManyRegisters { max, .. } => format!("simplify the kernel so ptxas fits it in {max} registers"),
            Self::RegistersPerBlock { max_block, .. } => format!("use a workgroup of at most {max_block} threads, or reduce register use"),
            Self::DynamicAboveAttribute { dynamic, .. } => format!("set CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to at least {dynamic} before launching"),
            Self::SharedMemoryPerBlock { usable, .. } => format!("use less shared memory per workgroup (at most {usable} B of static + dynamic)"),
            Self::UnsupportedDevice { supported, .. } => format!("use a device or profile of compute capability {supported}"),
            Self::InvalidDevice(_) => "probe the device again or fix the profile file".to_string(),
            Self::InvalidCarveout(_) => "use 0..=100, or leave it unset".to_string(),
        }
    }
}

crate::util::problem::into_problem!(Unlaunchable);
