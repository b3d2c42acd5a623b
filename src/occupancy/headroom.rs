//! Headroom: how far each resource is from changing the number of resident blocks, found by
//! re-running the exact model on neighbouring inputs (so rounding and carveout steps count).

use serde::Serialize;

use super::arch::ArchConstants;
use super::estimate::{core, Core, FuncConfig, Limiter};
use super::{DeviceCaps, KernelResources};

/// How much one resource could grow before a block is lost, or must shrink to gain one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Headroom {
    /// The resource.
    pub resource: Limiter,
    /// Growth (registers per thread, bytes of shared memory per block, threads per block)
    /// after which fewer blocks fit; `None` when no growth within the limits loses one.
    pub to_lose_block: Option<u32>,
    /// Reduction that would let more blocks fit; `None` when no reduction gains one.
    pub to_gain_block: Option<u32>,
    /// Blocks per SM after that reduction.
    pub gained_blocks: Option<u32>,
    /// One-line explanation.
    pub text: String,
}

fn plural(n: u32, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

pub(crate) fn headroom(
    caps: &DeviceCaps,
    res: &KernelResources,
    block: u32,
    dynamic: u32,
    cfg: &FuncConfig,
    c: &Core,
) -> Vec<Headroom> {
    let mut out = vec![registers(caps, res, block, dynamic, cfg, c.blocks)];
    out.push(shared(caps, res, block, dynamic, cfg, c));
    out.push(warps(c));
    out.push(Headroom {
        resource: Limiter::BlocksPerSm,
        to_lose_block: None,
        to_gain_block: None,
        gained_blocks: None,
        text: format!(
            "blocks: {} of {} block slots per SM used",
            c.blocks, c.limits.blocks_per_sm
        ),
    });
    out
}

fn registers(
    caps: &DeviceCaps,
    res: &KernelResources,
    block: u32,
    dynamic: u32,
    cfg: &FuncConfig,
    blocks: u32,
) -> Headroom {
    let r = res.regs_per_thread;
    let at = |regs: u32| {
        let k = KernelResources {
            regs_per_thread: regs,
            ..res.clone()
        };
        core(caps, &k, block, dynamic, cfg).blocks
    };
    let lose = (r + 1..=255)
        .find(|&x| at(x) < blocks)
        .map(|x| (x - r, at(x)));
    let gain = (1..r)
        .rev()
        .find(|&x| at(x) > blocks)
        .map(|x| (r - x, at(x)));
    let mut text = String::from("registers: ");
    match lose {
        Some((d, b)) => text.push_str(&format!(
            "{d} more per thread ({}) would drop to {}",
            r + d,
            plural(b, "block per SM", "blocks per SM")
        )),
        None => text.push_str("no register count up to 255 would drop a block"),
    }
    if let Some((d, b)) = gain {
        text.push_str(&format!(
            "; {} fewer ({}) would allow {}",
            d,
            r - d,
            plural(b, "block per SM", "blocks per SM")
        ));
    }
    Headroom {
        resource: Limiter::Registers,
        to_lose_block: lose.map(|x| x.0),
        to_gain_block: gain.map(|x| x.0),
        gained_blocks: gain.map(|x| x.1),
        text,
    }
}

fn shared(
    caps: &DeviceCaps,
    res: &KernelResources,
    block: u32,
    dynamic: u32,
    cfg: &FuncConfig,
    c: &Core,
) -> Headroom {
    let unit = ArchConstants::for_caps(caps).map_or(128, |a| u64::from(a.smem_alloc_unit));
    let reserved = u64::from(caps.smem_reserved_per_block);
    let raw = u64::from(res.static_smem_bytes) + u64::from(dynamic) + reserved;
    let alloc = c.smem_per_block;
    // Blocks when the kernel uses `total` bytes of static + dynamic shared memory: growth goes
    // to dynamic memory, a reduction comes out of dynamic first, then static.
    let at = |total: u64| -> u32 {
        let Ok(total) = u32::try_from(total) else {
            return 0;
        };
        let (st, dy) = if total >= res.static_smem_bytes {
            (res.static_smem_bytes, total - res.static_smem_bytes)
        } else {
            (total, 0)
        };
        let k = KernelResources {
            static_smem_bytes: st,
            ..res.clone()
        };
        core(caps, &k, block, dy, cfg).blocks
    };
    let used = raw - reserved;
    let optin = u64::from(caps.smem_per_block_optin.max(caps.smem_per_block));
    // Each step moves the allocation by one unit: the smallest raw size allocating alloc + k*unit.
    let mut lose = None;
    let mut k = 1u64;
    while alloc + (k - 1) * unit < optin + reserved + unit {
        let new_raw = alloc + (k - 1) * unit + 1;
        let b = at(new_raw.saturating_sub(reserved));
        if b < c.blocks {
            lose = Some((new_raw - raw, b));
            break;
        }
        k += 1;
    }
    let mut gain = None;
    let mut k = 1u64;
    while k * unit <= alloc && alloc - k * unit >= reserved {
        let new_raw = alloc - k * unit;
        let b = at(new_raw - reserved);
        if b > c.blocks {
            gain = Some((raw - new_raw, b));
            break;
        }
        k += 1;
    }
    let to32 = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    let mut text = format!(
        "shared memory: {} B per block allocated ({} B used + {} B reserved) of {} B configured; ",
        alloc, used, reserved, c.smem_config
    );
    match lose {
        Some((d, 0)) => text.push_str(&format!("{d} more bytes per block would not launch")),
        Some((d, b)) => text.push_str(&format!(
            "{d} more bytes per block would drop to {}",
            plural(b, "block per SM", "blocks per SM")
        )),
        None => text.push_str("no size within the per-block limit would drop a block"),
    }
    if let Some((d, b)) = gain {
        text.push_str(&format!(
            "; {d} fewer bytes would allow {}",
            plural(b, "block per SM", "blocks per SM")
        ));
    }
    Headroom {
        resource: Limiter::SharedMemory,
        to_lose_block: lose.map(|x| to32(x.0)),
        to_gain_block: gain.map(|x| to32(x.0)),
        gained_blocks: gain.map(|x| x.1),
        text,
    }
}

fn warps(c: &Core) -> Headroom {
    let used = c.blocks * c.warps_per_block;
    let free = c.max_warps.saturating_sub(used);
    let text = if free == 0 {
        format!("warps: all {} warp slots per SM used", c.max_warps)
    } else if free < c.warps_per_block {
        format!(
            "warps: {used} of {} warp slots used; the {free} free slots cannot hold another block of {} warps",
            c.max_warps, c.warps_per_block
        )
    } else {
        format!(
            "warps: {used} of {} warp slots used; {free} free slots are held back by another limit",
            c.max_warps
        )
    };
    Headroom {
        resource: Limiter::Warps,
        to_lose_block: None,
        to_gain_block: None,
        gained_blocks: None,
        text,
    }
}
