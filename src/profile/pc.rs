//! Sampled program counters -> SASS instructions -> PTX lines -> IR statements: a pure
//! function of the samples and the SASS listing of the code that ran.
//!
//! CUPTI's PC sampling reports, per (function, PC offset within the function, stall reason),
//! a sample count. The offset is the byte address of a SASS instruction in the function's
//! code, the `address` of [`crate::sass::SassInstruction`] when the listing is of the same
//! cubin (the runtime loads the ptxas cubin it profiles, so it is). The listing's
//! instruction then names its PTX line and IR node. A sample is *unmapped* when its
//! function is not the kernel, its offset is no instruction's address, or the instruction
//! has no owning statement (entry code, prologue, epilogue); the GPU check requires 0 of the
//! first two kinds on every fixture.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::report::{build, Entry, Lowering, Profile, Source};
use crate::ir::Program;
use crate::sass::SassListing;

/// One aggregated PC sampling record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PcSample {
    /// Mangled function name the PC belongs to (our kernels are `extern "C"`: the name).
    pub function: String,
    /// Byte offset of the instruction from the function's start.
    pub pc_offset: u64,
    /// CUPTI's stall reason name (`smsp__pcsamp_warps_issue_stalled_long_scoreboard`).
    pub stall_reason: String,
    /// Samples at this PC with this reason.
    pub samples: u64,
}

/// Where the samples went, before they become a [`Profile`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PcMapping {
    /// Samples per SASS instruction address.
    pub per_address: HashMap<u32, u64>,
    /// Samples whose function is another kernel's.
    pub other_function: u64,
    /// Samples at an offset that is no instruction of the listing.
    pub no_instruction: u64,
    /// Samples on instructions no statement owns (entry, prologue, epilogue).
    pub unowned: u64,
    /// Per statement: own samples and samples per stall reason.
    pub per_node: HashMap<String, Entry>,
}

impl PcMapping {
    /// Samples that reached no instruction of the listing (the GPU check wants 0).
    pub fn unmapped(&self) -> u64 {
        self.other_function + self.no_instruction
    }
}

/// Maps `samples` through `listing` (the SASS of the kernel that ran).
pub fn map_samples(listing: &SassListing, samples: &[PcSample]) -> PcMapping {
    let by_address: HashMap<u32, Option<&str>> = listing
        .instructions
        .iter()
        .map(|i| (i.address, i.node.as_deref()))
        .collect();
    let mut m = PcMapping::default();
    for s in samples {
        if s.function != listing.kernel {
            m.other_function += s.samples;
            continue;
        }
        let Some(node) = u32::try_from(s.pc_offset)
            .ok()
            .and_then(|a| by_address.get(&a).map(|n| (a, *n)))
        else {
            m.no_instruction += s.samples;
            continue;
        };
        *m.per_address.entry(node.0).or_default() += s.samples;
        let Some(node) = node.1 else {
            m.unowned += s.samples;
            continue;
        };
        let e = m.per_node.entry(node.to_string()).or_default();
        e.self_value += s.samples;
        *e.stalls.entry(short_reason(&s.stall_reason)).or_default() += s.samples;
    }
    m
}

/// The profile of a PC-sampled run: own samples per statement from the mapping, totals
/// summed up the statement tree of `plain`.
pub fn profile(plain: &Program, mapping: &PcMapping, lowering: Lowering) -> Profile {
    let mut entries = mapping.per_node.clone();
    let mut parents: Vec<(String, Option<String>)> = Vec::new();
    parent_list(&plain.body, None, &mut parents);
    for (node, _) in &parents {
        let own = entries.get(node).map_or(0, |e| e.self_value);
        if own == 0 {
            continue;
        }
        // Add the statement's own samples to itself and every enclosing statement.
        let mut at = Some(node.clone());
        while let Some(n) = at {
            entries.entry(n.clone()).or_default().total_value += own;
            at = parents
                .iter()
                .find(|(c, _)| *c == n)
                .and_then(|(_, p)| p.clone());
        }
    }
    build(plain, Source::Pc, entries, mapping.unmapped(), lowering)
}

fn parent_list(
    list: &[crate::ir::Stmt],
    parent: Option<&str>,
    out: &mut Vec<(String, Option<String>)>,
) {
    use crate::ir::StmtKind;
    for s in list {
        out.push((s.id.to_string(), parent.map(str::to_string)));
        match &s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                parent_list(then, Some(&s.id), out);
                parent_list(otherwise, Some(&s.id), out);
            }
            StmtKind::Loop { body, .. } => parent_list(body, Some(&s.id), out),
            StmtKind::Block(b) => parent_list(b, Some(&s.id), out),
            _ => {}
        }
    }
}

/// CUPTI's reason name without its counter prefix (`long_scoreboard`).
pub fn short_reason(name: &str) -> String {
    let n = name
        .strip_prefix("smsp__pcsamp_warps_issue_stalled_")
        .unwrap_or(name);
    n.strip_suffix("_not_issued").unwrap_or(n).to_string()
}

/// True for stall reasons that wait on memory: a global/local load's result
/// (`long_scoreboard`), the load/store or memory-I/O queues (`lg_throttle`, `mio_throttle`),
/// the texture path (`tex_throttle`), outstanding stores at exit (`drain`), or memory
/// dependencies (`memory_dependency`, `memory_throttle`).
pub fn is_memory_stall(reason: &str) -> bool {
    let r = short_reason(reason);
    [
        "long_scoreboard",
        "lg_throttle",
        "mio_throttle",
        "tex_throttle",
        "drain",
        "memory_dependency",
        "memory_throttle",
        "imc_miss",
    ]
    .iter()
    .any(|m| r == *m)
}
