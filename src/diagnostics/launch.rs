//! Launch diagnostics: will this Program launch with this workgroup and grid on this device,
//! and does the grid fit the buffers? Every failure is collected, not just the first.
//!
//! Codes: `L001` block dimensions, `L002` threads per block (device), `L003` threads per block
//! (kernel, register-limited), `L004` shared memory, `L005` grid dimensions, `L006` 32-bit
//! invocation id overflow, `L007` cooperative co-residency, `L008` buffer elements no
//! invocation writes, `L009` workgroups that write nothing, `L010` cooperative launch
//! unsupported, `L011` buffer longer than a `u32` index reaches, `L012` a workgroup-buffer
//! write past its count at this workgroup size ([`super::wg_overrun`]), `L015` a grid of more
//! than one workgroup for a Program whose barriers are uniform only in one (`V064`).

use super::Diagnostic;
use crate::analysis::affine::accesses;
use crate::ir::{Access as BufAccess, BarrierScope, Program, StmtKind};
use crate::occupancy::{
    estimate, max_threads_for_regs, DeviceCaps, KernelResources, Limiter, Unlaunchable,
};
use crate::validate::ProgramInfo;

const AXES: [&str; 3] = ["x", "y", "z"];

/// Bytes of the Program's workgroup buffers laid out as the emitter does (each aligned to its
/// element size).
pub fn workgroup_bytes(program: &Program) -> u64 {
    let mut off: u64 = 0;
    for b in program
        .buffers
        .iter()
        .filter(|b| b.access == BufAccess::Workgroup)
    {
        let size = b.elem.size_bytes() as u64;
        off = off.div_ceil(size) * size + size * u64::from(b.count.unwrap_or(0));
    }
    off
}

/// True when the Program has a `{"barrier": "grid"}` anywhere.
pub fn has_grid_barrier(program: &Program) -> bool {
    let mut found = false;
    program.walk_stmts(&mut |s| {
        if matches!(s.kind, StmtKind::Barrier(BarrierScope::Grid)) {
            found = true;
        }
    });
    found
}

/// All launch problems of the Program `info` describes at `workgroup` x `grid` on `caps`.
/// `resources` are the compiled kernel's (registers, static shared memory) when known;
/// `buffer_lens` are the host buffers' element counts by name. The rules that depend on what
/// the validator proved (a grid barrier, barriers uniform only in one workgroup) read it from
/// `info` instead of analysing the Program again.
pub fn launch_diagnostics(
    info: &ProgramInfo,
    caps: &DeviceCaps,
    resources: Option<&KernelResources>,
    workgroup: [u32; 3],
    grid: [u32; 3],
    buffer_lens: &[(&str, u64)],
) -> Vec<Diagnostic> {
    let program = info.program();
    let mut out = Vec::new();
    block_dims(caps, resources, workgroup, &mut out);
    shared_memory(program, caps, resources, workgroup, &mut out);
    grid_dims(caps, workgroup, grid, &mut out);
    cooperative(info, caps, resources, workgroup, grid, &mut out);
    coverage(program, workgroup, grid, buffer_lens, &mut out);
    out.extend(super::wg_overrun::workgroup_overruns(program, workgroup));
    one_workgroup(info, grid, &mut out);
    out
}

/// `L015`: the validator accepted barriers after a load-dependent `return` because the
/// Program's `run` section dispatches one workgroup (`V064`); on a larger grid threads of a
/// workgroup could disagree and the barrier would wait forever.
fn one_workgroup(info: &ProgramInfo, grid: [u32; 3], out: &mut Vec<Diagnostic>) {
    let workgroups: u64 = grid.iter().map(|&g| u64::from(g)).product();
    if workgroups <= 1 {
        return;
    }
    if info.needs_one_workgroup() {
        out.push(Diagnostic::error(
            "L015",
            None,
            format!(
                "{workgroups} workgroups, but the Program's barriers are uniform only when the \
                 grid is one workgroup (V064): threads could disagree at a barrier and wait \
                 forever"
            ),
            "launch one workgroup (`--grid 1,1,1`), as the Program's `run` section does",
        ));
    }
}

fn threads(wg: [u32; 3]) -> u64 {
    wg.iter().map(|&d| u64::from(d)).product()
}

fn block_dims(
    caps: &DeviceCaps,
    res: Option<&KernelResources>,
    wg: [u32; 3],
    out: &mut Vec<Diagnostic>,
) {
    for (i, &d) in wg.iter().enumerate() {
        if d == 0 {
            out.push(Diagnostic::error(
                "L001",
                None,
                format!("workgroup size {} is 0", AXES[i]),
                "give every workgroup dimension at least 1 thread",
            ));
        } else if d > caps.max_block_dim[i] {
            out.push(Diagnostic::error(
                "L001",
                None,
                format!(
                    "workgroup size {} = {d} exceeds the device limit of {} ({})",
                    AXES[i], caps.max_block_dim[i], caps.name
                ),
                format!(
                    "use at most {} threads along {}",
                    caps.max_block_dim[i], AXES[i]
                ),
            ));
        }
    }
    let t = threads(wg);
    if t > u64::from(caps.max_threads_per_block) {
        out.push(Diagnostic::error(
            "L002",
            None,
            format!(
                "{t} threads per workgroup ({}x{}x{}) exceed the device limit of {}",
                wg[0], wg[1], wg[2], caps.max_threads_per_block
            ),
            format!(
                "use at most {} threads per workgroup, e.g. [256, 1, 1]",
                caps.max_threads_per_block
            ),
        ));
        return;
    }
    let Some(r) = res else { return };
    let regs_max = max_threads_for_regs(caps, r.regs_per_thread);
    let kernel_max = if r.max_threads_per_block > 0 {
        r.max_threads_per_block.min(regs_max)
    } else {
        regs_max
    };
    if t > u64::from(kernel_max) && t > 0 {
        out.push(Diagnostic::error(
            "L003",
            None,
            format!(
                "{t} threads per workgroup exceed this kernel's limit of {kernel_max}: at {} registers per thread a block of more than {kernel_max} threads does not fit the {} registers a block may use",
                r.regs_per_thread, caps.regs_per_block
            ),
            format!(
                "use at most {kernel_max} threads per workgroup, or simplify the kernel so it needs fewer registers"
            ),
        ));
    }
}

fn shared_memory(
    program: &Program,
    caps: &DeviceCaps,
    res: Option<&KernelResources>,
    wg: [u32; 3],
    out: &mut Vec<Diagnostic>,
) {
    let static_bytes = match res {
        Some(r) => u64::from(r.static_smem_bytes),
        None => workgroup_bytes(program),
    };
    let default = u64::from(caps.smem_per_block);
    let optin = u64::from(caps.smem_per_block_optin.max(caps.smem_per_block));
    if static_bytes > optin {
        out.push(Diagnostic::error(
            "L004",
            None,
            format!(
                "workgroup buffers need {static_bytes} B of shared memory per workgroup, more than the device's opt-in maximum of {optin} B per block"
            ),
            format!(
                "shrink the workgroup buffers (counts) to at most {optin} B in total, or split the work across workgroups"
            ),
        ));
        return;
    }
    if static_bytes > default {
        out.push(Diagnostic::error(
            "L004",
            None,
            format!(
                "workgroup buffers need {static_bytes} B of static shared memory per workgroup; static shared memory is limited to {default} B per block (only dynamic shared memory may opt in to {optin} B)"
            ),
            format!("shrink the workgroup buffers to at most {default} B in total"),
        ));
        return;
    }
    // The remaining shared-memory failure is the reserved kilobyte and allocation rounding,
    // which the model checks exactly.
    let t = u32::try_from(threads(wg)).unwrap_or(u32::MAX);
    let r = KernelResources {
        static_smem_bytes: u32::try_from(static_bytes).unwrap_or(u32::MAX),
        ..res.cloned().unwrap_or_default()
    };
    if let Err(e @ Unlaunchable::SharedMemoryPerBlock { .. }) = estimate(caps, &r, t, 0).launchable
    {
        use crate::util::HasFix;
        out.push(Diagnostic::error("L004", None, e.message(), e.fix()));
    }
}

fn grid_dims(caps: &DeviceCaps, wg: [u32; 3], grid: [u32; 3], out: &mut Vec<Diagnostic>) {
    for i in 0..3 {
        if grid[i] == 0 {
            out.push(Diagnostic::error(
                "L005",
                None,
                format!("grid size {} is 0: nothing would run", AXES[i]),
                "launch at least 1 workgroup along every axis",
            ));
        } else if grid[i] > caps.max_grid_dim[i] {
            out.push(Diagnostic::error(
                "L005",
                None,
                format!(
                    "grid size {} = {} exceeds the device limit of {}",
                    AXES[i], grid[i], caps.max_grid_dim[i]
                ),
                if i == 0 {
                    "use larger workgroups or loop inside the kernel over several elements per invocation".to_string()
                } else {
                    format!(
                        "move work to the x axis (limit {}) or loop inside the kernel",
                        caps.max_grid_dim[0]
                    )
                },
            ));
        }
        let n = u64::from(grid[i]) * u64::from(wg[i]);
        if n > 1u64 << 32 {
            out.push(Diagnostic::error(
                "L006",
                None,
                format!(
                    "{} invocations along {} ({} workgroups x {} threads): `gid.{}` is a u32 and would wrap past 4294967295",
                    n, AXES[i], grid[i], wg[i], AXES[i]
                ),
                format!(
                    "launch at most 4294967296 invocations along {} and loop inside the kernel over the rest",
                    AXES[i]
                ),
            ));
        }
    }
}

fn cooperative(
    info: &ProgramInfo,
    caps: &DeviceCaps,
    res: Option<&KernelResources>,
    wg: [u32; 3],
    grid: [u32; 3],
    out: &mut Vec<Diagnostic>,
) {
    let program = info.program();
    if !info.has_grid_barrier() {
        return;
    }
    if !caps.cooperative_launch {
        out.push(Diagnostic::error(
            "L010",
            None,
            format!(
                "the Program has a grid barrier, which needs a cooperative launch, and {} does not support one",
                caps.name
            ),
            "run it on a device with cooperative launch, or split the Program at the grid barrier into two dispatches",
        ));
        return;
    }
    let t = u32::try_from(threads(wg)).unwrap_or(u32::MAX);
    let (r, exact) = match res {
        Some(r) => (r.clone(), true),
        None => (
            KernelResources {
                static_smem_bytes: u32::try_from(workgroup_bytes(program)).unwrap_or(u32::MAX),
                ..KernelResources::default()
            },
            false,
        ),
    };
    let e = estimate(caps, &r, t, 0);
    if e.blocks_per_sm == 0 {
        return; // the block itself cannot launch; reported by the other rules
    }
    let fit = u64::from(e.blocks_per_sm) * u64::from(caps.sm_count);
    let total: u64 = grid.iter().map(|&g| u64::from(g)).product();
    if total > fit {
        let basis = if exact {
            format!(
                "{} blocks per SM, limited by {}",
                e.blocks_per_sm, e.limiter
            )
        } else {
            format!(
                "at most {} blocks per SM before registers are counted (register use unknown), limited by {}",
                e.blocks_per_sm, e.limiter
            )
        };
        let hint = match e.limiter {
            Limiter::Registers => ", or reduce register use",
            Limiter::SharedMemory => ", or shrink the workgroup buffers",
            _ => "",
        };
        out.push(Diagnostic::error(
            "L007",
            None,
            format!(
                "the grid barrier needs all {total} workgroups resident at once, but only {fit} fit on {} ({basis} x {} SMs)",
                caps.name, caps.sm_count
            ),
            format!(
                "launch at most {fit} workgroups (the largest grid that fits, e.g. grid [{fit}, 1, 1]) and loop over the remaining elements inside the kernel{hint}"
            ),
        ));
    }
}

fn coverage(
    program: &Program,
    wg: [u32; 3],
    grid: [u32; 3],
    buffer_lens: &[(&str, u64)],
    out: &mut Vec<Diagnostic>,
) {
    for &(name, len) in buffer_lens {
        if len > 1u64 << 32 {
            out.push(Diagnostic::error(
                "L011",
                None,
                format!(
                    "buffer `{name}` has {len} elements; indices are u32 and reach only 4294967296"
                ),
                format!("split `{name}` into buffers of at most 4294967296 elements"),
            ));
        }
    }
    if grid.contains(&0) || wg.contains(&0) {
        return;
    }
    let n = u64::from(grid[0]) * u64::from(wg[0]);
    let acc = accesses(program);
    // Workgroups along x each written buffer needs; `None` once a write's footprint is unknown.
    let mut needed: Option<Vec<(String, u64, u128)>> = Some(Vec::new());
    for &(name, len) in buffer_lens {
        let Some(decl) = program.buffer(name) else {
            continue;
        };
        if !decl.access.is_writable() || !decl.access.is_host() {
            continue;
        }
        let writes: Vec<_> = acc.iter().filter(|a| a.write && a.buffer == name).collect();
        if writes.is_empty() {
            continue;
        }
        // Only a buffer whose every write is `stride * gid.x + constant` has a known footprint.
        let forms: Option<Vec<(i64, i64)>> = writes
            .iter()
            .map(|a| a.index.gid_x_only().filter(|&(g, c)| g > 0 && c >= 0))
            .collect();
        let Some(forms) = forms else {
            needed = None;
            continue;
        };
        let node = writes.first().map(|a| a.node.clone());
        // Highest element written + 1.
        let end = forms
            .iter()
            .map(|&(g, c)| c as u128 + g as u128 * (u128::from(n) - 1) + 1)
            .max()
            .unwrap_or(0);
        // Invocations that write in range: i < (len - c) / g for some write.
        let useful = forms
            .iter()
            .map(|&(g, c)| (u128::from(len).saturating_sub(c as u128)).div_ceil(g as u128))
            .max()
            .unwrap_or(0);
        let needed_wg = useful.div_ceil(u128::from(wg[0]));
        if let Some(v) = needed.as_mut() {
            v.push((name.to_string(), len, needed_wg));
        }
        if end < u128::from(len) {
            out.push(Diagnostic::warning(
                "L008",
                node,
                format!(
                    "the grid runs {n} invocations along x ({} workgroups x {}), so elements {end}..{len} of `{name}` are never written",
                    grid[0], wg[0]
                ),
                format!(
                    "launch {needed_wg} workgroups along x (the elements over the workgroup size, rounded up), or give `{name}` {end} elements"
                ),
            ));
        }
    }
    // Workgroups past what every written buffer needs do nothing.
    let Some(needed) = needed.filter(|v| !v.is_empty()) else {
        return;
    };
    let most = needed.iter().map(|x| x.2).max().unwrap_or(0);
    if u128::from(grid[0]) > most {
        let idle = u128::from(grid[0]) - most;
        let list: Vec<String> = needed
            .iter()
            .map(|(n, l, w)| format!("`{n}` ({l} elements: {w})"))
            .collect();
        out.push(Diagnostic::warning(
            "L009",
            None,
            format!(
                "{idle} of the {} workgroups along x write nothing: the written buffers need {most} workgroups of {} ({})",
                grid[0],
                wg[0],
                list.join(", ")
            ),
            format!("launch {most} workgroups along x (or set `\"elements\"` in the run section to the buffer length)"),
        ));
    }
}
