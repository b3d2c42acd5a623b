//! Performance lints: the launch runs, but probably slower than it could. Each finding says
//! what costs time, by how much where that can be computed, and what to change.
//!
//! Codes: `P001` register spills, `P002` occupancy below 50%, `P003` fewer workgroups than SMs,
//! `P004` a last partial wave costing more than 20% of the run, `P005` workgroup size not a
//! multiple of 32, `P006` uncoalesced global access (index not unit-stride in `gid.x`),
//! `P007` workgroup-buffer bank conflicts, `P008` data-dependent global index (info).

use std::collections::HashSet;

use super::Diagnostic;
use crate::analysis::affine::{accesses, warp_sectors, SECTOR_BYTES};
use crate::inputs::LaunchShape;
use crate::ir::{NodeId, Program};
use crate::occupancy::{estimate, DeviceCaps, Estimate, KernelResources, Limiter};

/// Shared memory banks (4 bytes wide) on every architecture the model supports.
const BANKS: u64 = 32;

/// All performance findings for `program` launched as `shape` on `caps`. `resources` are the
/// compiled kernel's when known; `est` its occupancy at `shape` (computed here when `None` and
/// `resources` are known).
pub fn perf_diagnostics(
    program: &Program,
    caps: &DeviceCaps,
    resources: Option<&KernelResources>,
    est: Option<&Estimate>,
    shape: &LaunchShape,
) -> Vec<Diagnostic> {
    // An invalid shape is one error and no analysis: the per-warp analyses below are bounded
    // by the largest valid workgroup (32 warps), not by whatever size came from the input.
    if let Err((message, fix)) = shape.check_limits() {
        return vec![Diagnostic::error(
            "P000",
            None,
            format!("no performance analysis: {message}"),
            fix,
        )];
    }
    let mut out = Vec::new();
    let wg = shape.workgroup_size;
    let threads: u64 = wg.iter().map(|&d| u64::from(d)).product();
    let owned;
    let est = match (est, resources) {
        (Some(e), _) => Some(e),
        (None, Some(r)) => {
            owned = estimate(caps, r, u32::try_from(threads).unwrap_or(u32::MAX), 0);
            Some(&owned)
        }
        (None, None) => None,
    };
    if let Some(r) = resources {
        spills(r, &mut out);
    }
    if let Some(e) = est.filter(|e| e.blocks_per_sm > 0) {
        occupancy(e, &mut out);
        waves(caps, e, shape, &mut out);
    }
    grid_vs_sms(caps, shape, &mut out);
    if let Some(d) = partial_warp(threads) {
        out.push(d);
    }
    memory_access(program, wg, &mut out);
    out
}

/// `P005` for a workgroup of `threads` threads that is not a whole number of warps; the fix
/// names the multiples of 32 around it (one when there is no smaller one).
fn partial_warp(threads: u64) -> Option<Diagnostic> {
    if threads.is_multiple_of(32) {
        return None;
    }
    let up = threads.div_ceil(32) * 32;
    let down = threads / 32 * 32;
    let sizes = if down == 0 {
        format!("{up}")
    } else {
        format!("{up} (or {down})")
    };
    let noun = if threads == 1 { "thread" } else { "threads" };
    Some(Diagnostic::warning(
        "P005",
        None,
        format!(
            "{threads} {noun} per workgroup is not a multiple of 32: the last warp runs {} of 32 lanes ({} idle lanes per workgroup)",
            threads % 32,
            up - threads
        ),
        format!("use {sizes} threads per workgroup"),
    ))
}

fn spills(r: &KernelResources, out: &mut Vec<Diagnostic>) {
    if r.local_bytes > 0 {
        out.push(Diagnostic::warning(
            "P001",
            None,
            format!(
                "the kernel uses {} B of local memory per thread ({} registers per thread): spilled registers or a stack live in slow off-chip memory",
                r.local_bytes, r.regs_per_thread
            ),
            "reduce live values (fewer simultaneous temporaries, shorter unrolled loops); a smaller workgroup does not help: the per-thread limit is 255 registers",
        ));
    }
}

fn occupancy(e: &Estimate, out: &mut Vec<Diagnostic>) {
    if e.occupancy_pct >= 50.0 {
        return;
    }
    let head = e
        .headroom
        .iter()
        .find(|h| h.resource == e.limiter)
        .map(|h| format!(" ({})", h.text))
        .unwrap_or_default();
    let fix = match e.limiter {
        Limiter::Registers => {
            let gain = e
                .headroom
                .iter()
                .find(|h| h.resource == Limiter::Registers)
                .and_then(|h| h.to_gain_block);
            match gain {
                Some(g) => format!("use {g} fewer registers per thread to fit another workgroup (fewer live temporaries), or try other workgroup sizes with `vyrescope occupancy`"),
                None => "use fewer registers per thread, or try other workgroup sizes with `vyrescope occupancy`".to_string(),
            }
        }
        Limiter::SharedMemory => "shrink the workgroup buffers, or use fewer, larger workgroups that share one buffer".to_string(),
        Limiter::Warps => "use a workgroup size that divides the SM's warp slots evenly (e.g. 128 or 256 threads)".to_string(),
        Limiter::BlocksPerSm => format!(
            "use larger workgroups: {} threads fill only {} warps per workgroup and the SM holds at most {} workgroups",
            e.block_threads, e.warps_per_block, e.limits.blocks_per_sm
        ),
    };
    out.push(Diagnostic::warning(
        "P002",
        None,
        format!(
            "occupancy is {:.1}% ({} of {} warps per SM, {} workgroups per SM), limited by {}{head}; low occupancy leaves too few warps to hide memory latency",
            e.occupancy_pct, e.active_warps_per_sm, e.max_warps_per_sm, e.blocks_per_sm, e.limiter
        ),
        fix,
    ));
}

fn total_blocks(shape: &LaunchShape) -> u64 {
    shape.grid.iter().map(|&g| u64::from(g)).product()
}

fn grid_vs_sms(caps: &DeviceCaps, shape: &LaunchShape, out: &mut Vec<Diagnostic>) {
    let total = total_blocks(shape);
    if total > 0 && total < u64::from(caps.sm_count) {
        out.push(Diagnostic::warning(
            "P003",
            None,
            format!(
                "the grid has {total} workgroups but {} has {} SMs: {} SMs stay idle",
                caps.name,
                caps.sm_count,
                u64::from(caps.sm_count) - total
            ),
            format!(
                "use smaller workgroups or more work per dispatch so there are at least {} workgroups",
                caps.sm_count
            ),
        ));
    }
}

fn waves(caps: &DeviceCaps, e: &Estimate, shape: &LaunchShape, out: &mut Vec<Diagnostic>) {
    let total = total_blocks(shape);
    let per_wave = u64::from(e.blocks_per_sm) * u64::from(caps.sm_count);
    if per_wave == 0 || total <= per_wave {
        return;
    }
    let full = total / per_wave;
    let rem = total % per_wave;
    if rem == 0 {
        return;
    }
    // Every wave takes about as long as a full one, so the idle part of the last wave is lost.
    let waves = full + 1;
    let idle = (per_wave - rem) as f64 / per_wave as f64;
    let cost = idle / waves as f64;
    if cost > 0.20 {
        out.push(Diagnostic::warning(
            "P004",
            None,
            format!(
                "{total} workgroups make {:.2} waves of {per_wave} ({} per SM x {} SMs): the last wave runs {rem} workgroups and leaves {:.0}% of the GPU idle, about {:.0}% of the run",
                total as f64 / per_wave as f64,
                e.blocks_per_sm,
                caps.sm_count,
                idle * 100.0,
                cost * 100.0
            ),
            format!(
                "size the grid to a multiple of {per_wave} workgroups ({} or {} here), e.g. by changing the workgroup size or the work per invocation",
                full * per_wave,
                waves * per_wave
            ),
        ));
    }
}

/// One finding about one buffer, possibly at several statements.
struct Finding {
    code: &'static str,
    buffer: String,
    kind: &'static str,
    nodes: Vec<NodeId>,
    detail: String,
    fix: String,
    info: bool,
}

fn memory_access(program: &Program, wg: [u32; 3], out: &mut Vec<Diagnostic>) {
    let mut found: Vec<Finding> = Vec::new();
    let mut add = |f: Finding| {
        // The same finding at several statements is reported once, listing them.
        match found.iter_mut().find(|g| {
            g.code == f.code && g.buffer == f.buffer && g.kind == f.kind && g.detail == f.detail
        }) {
            Some(g) => {
                if !g.nodes.contains(&f.nodes[0]) {
                    g.nodes.push(f.nodes[0].clone());
                }
            }
            None => found.push(f),
        }
    };
    for a in accesses(program) {
        let Some(decl) = program.buffer(&a.buffer) else {
            continue;
        };
        let elem = decl.elem.size_bytes() as u64;
        let kind = if a.write { "stores to" } else { "loads from" };
        let segments = a.index.warp_segments(wg);
        if decl.access.is_host() {
            let Some(warps) = segments else {
                if decl.access != crate::ir::Access::Uniform {
                    add(Finding {
                        code: "P008",
                        buffer: a.buffer.clone(),
                        kind,
                        nodes: vec![a.node.clone()],
                        detail: "use an index that is data dependent or steps by a run-time value along x: coalescing depends on the values".into(),
                        fix: "when neighbouring invocations use neighbouring indices this is fine; otherwise sort or regroup the indices first".into(),
                        info: true,
                    });
                }
                continue;
            };
            // Worst warp: 32-byte sectors touched vs. the minimum for that many elements.
            let (sectors, ideal) = warps
                .iter()
                .map(|segs| {
                    let n: u64 = segs.iter().map(|s| s.len() as u64).sum();
                    (warp_sectors(segs, elem), (n * elem).div_ceil(SECTOR_BYTES))
                })
                .max_by_key(|&(t, i)| (t * 1000) / i.max(1))
                .unwrap_or((0, 0));
            if sectors > ideal {
                let stride = a.index.stride_x().map_or(String::new(), |s| {
                    format!("neighbouring invocations are {s} elements apart, so ")
                });
                add(Finding {
                    code: "P006",
                    buffer: a.buffer.clone(),
                    kind,
                    nodes: vec![a.node.clone()],
                    detail: format!(
                        "are uncoalesced: {stride}a warp touches {sectors} 32-byte sectors where {ideal} would hold its elements ({:.0}% of the fetched bytes used)",
                        ideal as f64 * 100.0 / sectors as f64
                    ),
                    fix: format!(
                        "index `{}` with unit stride in gid.x (e.g. a structure of arrays instead of an array of structures, or stage through a workgroup buffer)",
                        a.buffer
                    ),
                    info: false,
                });
            }
        } else if let Some(warps) = segments.filter(|_| a.index.fully_known()) {
            let degree = warps
                .iter()
                .map(|segs| bank_conflict_degree_offsets(&segs.concat(), elem))
                .max()
                .unwrap_or(1);
            if degree > 1 {
                let stride = a.index.stride_x().map_or(String::new(), |s| {
                    format!(" (neighbouring invocations are {s} elements apart)")
                });
                add(Finding {
                    code: "P007",
                    buffer: a.buffer.clone(),
                    kind,
                    nodes: vec![a.node.clone()],
                    detail: format!(
                        "have a {degree}-way bank conflict{stride}: {degree} threads of a warp hit the same bank and are served one after another"
                    ),
                    fix: format!(
                        "make the stride odd in 4-byte words, e.g. pad each row of `{}` by one element, or index it with unit stride in lid.x",
                        a.buffer
                    ),
                    info: false,
                });
            }
        }
    }
    for f in found {
        let place = if f.nodes.len() > 1 {
            format!(" (also at {})", f.nodes[1..].join(", "))
        } else {
            String::new()
        };
        let what = if f.code == "P007" {
            format!("{} workgroup buffer `{}`", f.kind, f.buffer)
        } else {
            format!("{} `{}`", f.kind, f.buffer)
        };
        let mut msg = format!("{what} {}{place}", f.detail);
        if let Some(first) = msg.get(..1) {
            msg = first.to_uppercase() + &msg[1..];
        }
        let node = f.nodes.first().cloned();
        out.push(if f.info {
            Diagnostic::info(f.code, node, msg, f.fix)
        } else {
            Diagnostic::warning(f.code, node, msg, f.fix)
        });
    }
}

/// The worst number of distinct 4-byte words one shared-memory bank serves for one warp
/// request, for consecutive threads `stride` elements of `elem` bytes apart.
pub fn bank_conflict_degree(stride: u64, elem: u64) -> u64 {
    let offsets: Vec<i64> = (0..32).map(|t| (t * stride) as i64).collect();
    bank_conflict_degree_offsets(&offsets, elem)
}

/// The worst number of distinct 4-byte words one shared-memory bank serves for one warp
/// request whose threads access element `offsets[t]` (elements of `elem` bytes). 8-byte
/// accesses are served per half warp (16 threads x 8 B = the 128 B the banks deliver per
/// cycle). Threads reading the same word are a broadcast, not a conflict.
pub fn bank_conflict_degree_offsets(offsets: &[i64], elem: u64) -> u64 {
    let elem = elem.max(1) as i64;
    let phase = if elem >= 8 { 16 } else { 32 };
    let words_per_elem = (elem + 3) / 4;
    let mut worst = 1;
    for chunk in offsets.chunks(phase) {
        let mut banks: Vec<HashSet<i64>> = vec![HashSet::new(); BANKS as usize];
        for &o in chunk {
            let byte = o.wrapping_mul(elem);
            for w in 0..words_per_elem {
                let word = byte.div_euclid(4) + w;
                banks[word.rem_euclid(BANKS as i64) as usize].insert(word);
            }
        }
        worst = worst.max(banks.iter().map(|b| b.len() as u64).max().unwrap_or(1));
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bank_conflicts_follow_gcd_for_words() {
        // 4-byte elements: degree = gcd(stride, 32).
        for s in 0..70u64 {
            let g = if s == 0 { 1 } else { gcd(s, 32) };
            assert_eq!(bank_conflict_degree(s, 4), g, "stride {s}");
        }
        // 8-byte elements at unit stride: conflict-free per half warp; stride 2: 2-way.
        assert_eq!(bank_conflict_degree(1, 8), 1);
        assert_eq!(bank_conflict_degree(2, 8), 2);
        // Bytes at unit stride share words: no conflict.
        assert_eq!(bank_conflict_degree(1, 1), 1);
    }

    #[test]
    fn partial_warps_name_each_size_once() {
        assert!(partial_warp(64).is_none());
        let one = partial_warp(1).unwrap();
        assert!(one.message.starts_with("1 thread per workgroup"), "{one:?}");
        assert_eq!(one.fix, "use 32 threads per workgroup");
        let d = partial_warp(17).unwrap();
        assert!(d.message.starts_with("17 threads per"), "{d:?}");
        assert_eq!(d.fix, "use 32 threads per workgroup");
        assert_eq!(
            partial_warp(100).unwrap().fix,
            "use 128 (or 96) threads per workgroup"
        );
        // Any size: the fix never names one size twice.
        for t in 1..2000u64 {
            if let Some(d) = partial_warp(t) {
                assert!(
                    !d.fix
                        .contains(&format!("{0} (or {0})", t.div_ceil(32) * 32)),
                    "{t}"
                );
                assert!(
                    d.message
                        .contains(&format!("{} idle", t.div_ceil(32) * 32 - t)),
                    "{t}"
                );
            }
        }
    }

    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
}
