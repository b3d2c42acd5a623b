//! The profile of one kernel: a hot list of IR statements with their share, the PTX lines and
//! SASS instructions behind each, and (PC sampling) their top stall reasons.

use std::collections::HashMap;

use serde::Serialize;

use super::instrument::Instrumented;
use crate::emit::EmittedKernel;
use crate::ir::Program;
use crate::sass::SassListing;

/// Where a profile's numbers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// CUPTI PC sampling of the plain kernel on a GPU: samples.
    Pc,
    /// The instrumented build on a GPU: `%clock64` cycles of sampled workgroups.
    Instrumented,
    /// The instrumented build on the reference interpreter: statements started, an
    /// instruction-count estimate, never a time.
    Estimate,
}

impl Source {
    /// The name `--source` takes (`estimate` is what `instrumented` gives without a GPU).
    pub fn name(self) -> &'static str {
        match self {
            Source::Pc => "pc",
            Source::Instrumented => "instrumented",
            Source::Estimate => "estimate",
        }
    }

    /// What one unit of a value is.
    pub fn unit(self) -> &'static str {
        match self {
            Source::Pc => "samples",
            Source::Instrumented => "cycles",
            Source::Estimate => "statements",
        }
    }

    /// The line that says what the numbers mean, printed above every profile.
    pub fn describe(self) -> &'static str {
        match self {
            Source::Pc => "PC sampling (CUPTI): warp samples per statement, split by stall reason",
            Source::Instrumented => {
                "instrumented build: %clock64 cycles per statement, summed over the threads of sampled workgroups"
            }
            Source::Estimate => {
                "instruction-count ESTIMATE from the reference interpreter (statements executed per statement, not time; no GPU was used)"
            }
        }
    }
}

/// One statement of the hot list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HotStatement {
    /// Node id (`body[2].body[0]`).
    pub node: String,
    /// 1-based line of the IR printer (`vyrescope print`) that opens the statement.
    pub ir_line: Option<u32>,
    /// That line's text, trimmed.
    pub text: String,
    /// The statement's own value: its total less its nested statements'.
    pub self_value: u64,
    /// `self_value` over the kernel's total.
    pub self_share: f64,
    /// The statement with everything nested in it.
    pub total_value: u64,
    /// `total_value` over the kernel's total.
    pub total_share: f64,
    /// PC sampling: samples per stall reason, most first (empty for other sources).
    pub stalls: Vec<(String, u64)>,
    /// PTX line ranges (1-based, inclusive) the statement owns in the plain kernel.
    pub ptx_lines: Vec<[u32; 2]>,
    /// Byte addresses of the SASS instructions the statement owns (when a listing was made).
    pub sass: Vec<u32>,
}

/// A kernel's profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// Program (kernel) name.
    pub kernel: String,
    /// Where the numbers come from.
    pub source: Source,
    /// What one unit is (`cycles`, `samples`, `statements`).
    pub unit: &'static str,
    /// Sum of every statement's own value (what shares are of).
    pub total: u64,
    /// Statements with a nonzero total, by own value, most first.
    pub statements: Vec<HotStatement>,
    /// PC sampling: samples of another function or at an offset that is no instruction of
    /// the listing (samples on unowned entry/prologue code are mapped, just not to a
    /// statement).
    pub unmapped: u64,
    /// Instrumented: every how many workgroups one was timed.
    pub stride: Option<u32>,
    /// Instrumented on a GPU: the instrumented run's time over the plain run's.
    pub overhead: Option<Overhead>,
}

/// What the instrumented build costs, measured beside the plain build.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Overhead {
    /// Plain kernel, milliseconds.
    pub plain_ms: f64,
    /// Instrumented kernel, milliseconds.
    pub instrumented_ms: f64,
}

impl Overhead {
    /// Instrumented time over plain time.
    pub fn ratio(&self) -> f64 {
        if self.plain_ms > 0.0 {
            self.instrumented_ms / self.plain_ms
        } else {
            f64::NAN
        }
    }
}

/// A statement's own and total value before shares are taken.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Entry {
    /// Own value.
    pub self_value: u64,
    /// With nested statements.
    pub total_value: u64,
    /// Samples per stall reason.
    pub stalls: HashMap<String, u64>,
}

/// What the plain build looks like, to point from statements to their PTX and SASS.
#[derive(Clone, Copy, Default)]
pub struct Lowering<'a> {
    /// The plain kernel (its source map gives the PTX lines).
    pub kernel: Option<&'a EmittedKernel>,
    /// Its SASS listing (gives the instructions).
    pub sass: Option<&'a SassListing>,
}

/// The profile from an instrumented run's table (`source` is [`Source::Instrumented`] on a GPU,
/// [`Source::Estimate`] on the interpreter). Slot values are inclusive; a statement's own
/// value is its slot less its direct children's (saturating: on a GPU the children's clock
/// reads can straddle the parent's by a few cycles).
pub fn from_table(
    plain: &Program,
    inst: &Instrumented,
    table: &[u64],
    source: Source,
    lowering: Lowering,
) -> Profile {
    let mut children = vec![0u64; inst.slots.len()];
    for (k, slot) in inst.slots.iter().enumerate() {
        if let Some(p) = slot.parent {
            children[p] += table.get(k).copied().unwrap_or(0);
        }
    }
    let mut entries: HashMap<String, Entry> = HashMap::new();
    for (k, slot) in inst.slots.iter().enumerate() {
        let total = table.get(k).copied().unwrap_or(0);
        let e = entries.entry(slot.node.to_string()).or_default();
        e.total_value += total;
        e.self_value += total.saturating_sub(children[k]);
    }
    let mut p = build(plain, source, entries, 0, lowering);
    p.stride = Some(inst.stride);
    p
}

/// The profile from per-statement entries (shares, IR lines, PTX lines and SASS filled in).
pub fn build(
    plain: &Program,
    source: Source,
    entries: HashMap<String, Entry>,
    unmapped: u64,
    lowering: Lowering,
) -> Profile {
    let printed = crate::ir::print::print_program(plain);
    let total: u64 = entries.values().map(|e| e.self_value).sum();
    let share = |v: u64| {
        if total == 0 {
            0.0
        } else {
            v as f64 / total as f64
        }
    };
    let mut sass_of: HashMap<&str, Vec<u32>> = HashMap::new();
    if let Some(l) = lowering.sass {
        for i in &l.instructions {
            if let Some(n) = &i.node {
                sass_of.entry(n.as_str()).or_default().push(i.address);
            }
        }
    }
    let mut statements: Vec<HotStatement> = entries
        .into_iter()
        .filter(|(_, e)| e.total_value > 0 || e.self_value > 0)
        .map(|(node, e)| {
            let ir_line = printed.line_of(&node);
            let text = ir_line
                .and_then(|l| printed.lines.get(l - 1))
                .map(|l| l.code.trim().to_string())
                .unwrap_or_default();
            let mut stalls: Vec<(String, u64)> = e.stalls.into_iter().collect();
            stalls.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            HotStatement {
                ptx_lines: lowering
                    .kernel
                    .map(|k| k.source_map.lines_of(&node).to_vec())
                    .unwrap_or_default(),
                sass: sass_of.get(node.as_str()).cloned().unwrap_or_default(),
                ir_line: ir_line.map(|l| l as u32),
                text,
                self_share: share(e.self_value),
                total_share: share(e.total_value),
                self_value: e.self_value,
                total_value: e.total_value,
                stalls,
                node,
            }
        })
        .collect();
    statements.sort_by(|a, b| {
        b.self_value
            .cmp(&a.self_value)
            .then_with(|| a.ir_line.cmp(&b.ir_line))
            .then_with(|| a.node.cmp(&b.node))
    });
    Profile {
        kernel: plain.name.clone(),
        source,
        unit: source.unit(),
        total,
        statements,
        unmapped,
        stride: None,
        overhead: None,
    }
}

impl Profile {
    /// The statement `node`, when it is in the hot list.
    pub fn statement(&self, node: &str) -> Option<&HotStatement> {
        self.statements.iter().find(|s| s.node == node)
    }

    /// Own share per PTX line (1-based) of the plain kernel: the heat gutter of the PTX pane.
    pub fn ptx_line_shares(&self) -> HashMap<u32, f64> {
        let mut out = HashMap::new();
        for s in &self.statements {
            for r in &s.ptx_lines {
                for l in r[0]..=r[1] {
                    out.insert(l, s.self_share);
                }
            }
        }
        out
    }

    /// Own share per IR printer line (1-based): the heat gutter of the IR pane.
    pub fn ir_line_shares(&self) -> HashMap<u32, f64> {
        self.statements
            .iter()
            .filter_map(|s| Some((s.ir_line?, s.self_share)))
            .collect()
    }

    /// Own share per SASS address: the heat gutter of the SASS pane.
    pub fn sass_shares(&self) -> HashMap<u32, f64> {
        let mut out = HashMap::new();
        for s in &self.statements {
            for &a in &s.sass {
                out.insert(a, s.self_share);
            }
        }
        out
    }

    /// The text report: what the numbers are, the overhead, then the hot list (at most
    /// `top` statements).
    pub fn render(&self, top: usize) -> String {
        let mut s = format!("profile of `{}`: {}\n", self.kernel, self.source.describe());
        if let Some(stride) = self.stride.filter(|&s| s > 1) {
            s += &format!("timed every {stride}th workgroup\n");
        }
        if let Some(o) = self.overhead {
            s += &format!(
                "overhead of the instrumented build: {:.3} ms vs {:.3} ms plain ({:.2}x)\n",
                o.instrumented_ms,
                o.plain_ms,
                o.ratio()
            );
        }
        s += &format!("total: {} {}", self.total, self.unit);
        if self.source == Source::Pc {
            s += &format!(", {} unmapped", self.unmapped);
        }
        s += "\n\n";
        s += "  self%  total%  node                      line  statement\n";
        for h in self.statements.iter().take(top) {
            s += &format!(
                "{:>6.1} {:>7.1}  {:<24}  {:>4}  {}\n",
                100.0 * h.self_share,
                100.0 * h.total_share,
                h.node,
                h.ir_line.map_or("-".into(), |l| l.to_string()),
                h.text
            );
            let mut behind = Vec::new();
            if !h.ptx_lines.is_empty() {
                let r: Vec<String> = h
                    .ptx_lines
                    .iter()
                    .map(|r| {
                        if r[0] == r[1] {
                            r[0].to_string()
                        } else {
                            format!("{}-{}", r[0], r[1])
                        }
                    })
                    .collect();
                behind.push(format!("PTX {}", r.join(",")));
            }
            if !h.sass.is_empty() {
                behind.push(format!("SASS {} instr", h.sass.len()));
            }
            if let Some((reason, n)) = h.stalls.first() {
                behind.push(format!("top stall {reason} ({n})"));
            }
            if !behind.is_empty() {
                s += &format!("{:>16}{}\n", "", behind.join("; "));
            }
        }
        s
    }
}
