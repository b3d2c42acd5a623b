//! Register pressure lints from a correlated listing: ptxas spills, or a register count that
//! limits occupancy, each naming the statements at the peak of live registers (the
//! statements that would have to hold fewer values at once for the kernel to need fewer
//! registers) and what would help.

use crate::finding::{Diagnostic, Severity};
use crate::ir::NodeId;
use crate::occupancy::estimate::{estimate, Limiter};
use crate::occupancy::{DeviceCaps, KernelResources};

use super::SassListing;

/// Statements named in a lint at most (the rest are counted).
const MAX_NAMED: usize = 4;

/// The statements whose peak live register count is the kernel's peak (ties included),
/// highest first, then in listing order.
pub fn peak_statements(l: &SassListing) -> Vec<(&str, u32)> {
    let Some(peak) = l.peak_live else {
        return Vec::new();
    };
    // Within 2 registers of the peak: ptxas's allocation rounds, so near-peak statements
    // press as hard.
    let mut at: Vec<(&str, u32)> = l
        .costs
        .iter()
        .filter_map(|c| c.peak_live.map(|p| (c.node.as_str(), p)))
        .filter(|&(_, p)| p + 2 >= peak)
        .collect();
    at.sort_by_key(|&(_, p)| std::cmp::Reverse(p));
    at
}

fn named(at: &[(&str, u32)]) -> String {
    let mut s = at
        .iter()
        .take(MAX_NAMED)
        .map(|(n, p)| format!("{n} ({p} live)"))
        .collect::<Vec<_>>()
        .join(", ");
    if at.len() > MAX_NAMED {
        s.push_str(&format!(" and {} more", at.len() - MAX_NAMED));
    }
    s
}

/// P009 (spills) and P010 (registers limit occupancy) for `l` launched with
/// `block_threads` threads per block on `caps`.
pub fn lint(
    l: &SassListing,
    caps: &DeviceCaps,
    block_threads: u32,
    static_smem: u32,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let at = peak_statements(l);
    let first = at.first().map(|(n, _)| NodeId::new(*n));
    let r = &l.resources;
    if r.spill_stores + r.spill_loads > 0 {
        out.push(Diagnostic::new(
            Severity::Warning,
            "P009",
            first.clone(),
            format!(
                "ptxas spills to local memory ({} bytes stored, {} loaded) with {} registers; most live registers at {}",
                r.spill_stores,
                r.spill_loads,
                r.registers,
                if at.is_empty() { "(no statement)".to_string() } else { named(&at) }
            ),
            "hold fewer values at once in those statements (compute a value where it is used instead of early, split long expressions over loads into smaller statements), keep loops rolled (--no-unroll), or use a smaller workgroup so ptxas may use more registers per thread",
        ));
    }
    let res = |regs: u32| KernelResources {
        regs_per_thread: regs,
        static_smem_bytes: static_smem,
        ..Default::default()
    };
    let now = estimate(caps, &res(r.registers), block_threads, 0);
    if now.blocks_per_sm > 0 && now.limiter == Limiter::Registers {
        // The most registers per thread that would let one more block in.
        let better = (1..r.registers).rev().find_map(|regs| {
            let e = estimate(caps, &res(regs), block_threads, 0);
            (e.blocks_per_sm > now.blocks_per_sm).then_some((regs, e.occupancy_pct))
        });
        if let Some((regs, pct)) = better {
            out.push(Diagnostic::new(
                Severity::Info,
                "P010",
                first,
                format!(
                    "registers limit occupancy on {}: {} per thread give {:.0}% ({} blocks of {block_threads} per SM); {regs} or fewer would give {pct:.0}%; most live registers at {}",
                    caps.name,
                    r.registers,
                    now.occupancy_pct,
                    now.blocks_per_sm,
                    if at.is_empty() { "(no statement)".to_string() } else { named(&at) }
                ),
                format!("if the kernel is latency-bound, lower the pressure in those statements (fewer values live at once, --no-unroll), or try a smaller workgroup; ptxas needs at most {regs} registers per thread for the next occupancy step"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::ptxas::OfflineResources;
    use crate::sass::{Mix, NodeCost, ToolVersions};

    fn listing(registers: u32, spills: u32, peaks: &[(&str, u32)]) -> SassListing {
        SassListing {
            sm: 90,
            arch: "sm_90".into(),
            kernel: "k".into(),
            instructions: Vec::new(),
            labels: Vec::new(),
            padding: 0,
            costs: peaks
                .iter()
                .map(|(n, p)| NodeCost {
                    node: n.to_string(),
                    mix: Mix::default(),
                    total: 1,
                    peak_live: Some(*p),
                })
                .collect(),
            peak_live: peaks.iter().map(|p| p.1).max(),
            unowned: Mix::default(),
            resources: OfflineResources {
                registers,
                spill_stores: spills,
                spill_loads: spills,
                ..Default::default()
            },
            tools: ToolVersions {
                ptxas: String::new(),
                nvdisasm: String::new(),
            },
        }
    }

    fn h200() -> DeviceCaps {
        crate::occupancy::profiles::load("h200").expect("bundled profile")
    }

    #[test]
    fn register_limited_occupancy_names_the_peak_statements() {
        // 64 registers x 256 threads: 4 blocks of 8 warps = 32 of 64 warps on an H200.
        let l = listing(
            64,
            0,
            &[("body[0]", 12), ("body[3]", 61), ("body[4].then[0]", 60)],
        );
        let d = lint(&l, &h200(), 256, 0);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].code, "P010");
        assert_eq!(d[0].node, Some(NodeId::new("body[3]")));
        assert!(
            d[0].message
                .contains("body[3] (61 live), body[4].then[0] (60 live)"),
            "{}",
            d[0].message
        );
        assert!(!d[0].message.contains("body[0]"), "{}", d[0].message);
        // The next step: 5 blocks need at most 51 registers (65536 / (5 * 256), rounded down to the allocation unit).
        assert!(d[0].message.contains("50%"), "{}", d[0].message);
        assert!(d[0].fix.contains("at most 48 registers"), "{}", d[0].fix);
    }

    #[test]
    fn spills_are_a_warning_and_low_pressure_is_quiet() {
        let l = listing(255, 96, &[("body[1]", 250)]);
        let d = lint(&l, &h200(), 256, 0);
        assert_eq!(d[0].code, "P009");
        assert_eq!(d[0].severity, Severity::Warning);
        assert!(d[0].message.contains("96 bytes stored"));
        // 32 registers at 256 threads: full occupancy on an H200, nothing to say.
        assert!(lint(&listing(32, 0, &[("body[0]", 30)]), &h200(), 256, 0).is_empty());
    }
}
