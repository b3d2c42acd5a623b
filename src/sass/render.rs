//! The text form of a listing (`vyrescope sass`): a header with the tools and resources,
//! the SASS with a gutter of PTX line, IR node, control bits and live registers, then the
//! instruction mix and register pressure per statement.

use std::fmt::Write;

use super::control::NOTATION_WIDTH;
use super::{Class, SassListing};

/// Width of the node column: the longest node id (at least `node`, the heading).
fn node_width(l: &SassListing) -> usize {
    l.instructions
        .iter()
        .filter_map(|i| i.node.as_deref())
        .map(str::len)
        .max()
        .unwrap_or(0)
        .max(4)
}

/// The whole text listing.
pub fn text(l: &SassListing) -> String {
    let mut s = String::new();
    let r = &l.resources;
    let _ = writeln!(
        s,
        "// {} for {} (ptxas {}, nvdisasm {}): {} registers, {} bytes stack frame, {} bytes spill stores, {} bytes spill loads",
        l.kernel, l.arch, l.tools.ptxas, l.tools.nvdisasm, r.registers, r.stack_frame, r.spill_stores, r.spill_loads
    );
    if let Some(note) = crate::emit::ptxas::arch_note(l.sm) {
        let _ = writeln!(s, "// note: sm_{} asked for; {note}", l.sm);
    }
    let _ = writeln!(
        s,
        "// {} instructions ({} alignment NOPs after the code not shown); `-` = no statement (entry, prologue, epilogue)",
        l.instructions.len(),
        l.padding
    );
    if let Some(peak) = l.peak_live {
        let _ = writeln!(
            s,
            "// peak live registers: {peak} of {} allocated; control = wait mask:read barrier:write barrier:yield:stall (docs/sass.md)",
            r.registers
        );
    }
    let w = node_width(l);
    let cw = NOTATION_WIDTH;
    let _ = writeln!(
        s,
        "//  ptx  {:<w$}  addr  {:<cw$}  live  sass",
        "node", "control"
    );
    let mut labels = l.labels.iter().peekable();
    for i in &l.instructions {
        while let Some(lab) = labels.next_if(|lab| lab.address <= i.address) {
            let _ = writeln!(s, "{:>w$}                {}:", "", lab.name, w = w);
        }
        let ptx = i.ptx_line.map_or("?".to_string(), |n| n.to_string());
        let node = i.node.as_deref().unwrap_or("-");
        let control = i.control.map_or("?".to_string(), |c| c.notation());
        let live = i.live.map_or("?".to_string(), |l| l.gpr.to_string());
        let _ = writeln!(
            s,
            "{ptx:>6}  {node:<w$}  {:04x}  {control:<cw$}  {live:>4}  {}",
            i.address, i.text
        );
    }
    s.push('\n');
    s.push_str(&mix_table(l));
    s
}

/// The per-statement mix as a table, in order of first instruction; the unowned
/// instructions last.
pub fn mix_table(l: &SassListing) -> String {
    let mut s = String::new();
    let w = node_width(l).max("(no statement)".len());
    let _ = write!(
        s,
        "// instruction mix and peak live registers per statement\n// {:<w$}  live  total",
        "node"
    );
    for c in Class::ALL {
        let _ = write!(s, " {:>5}", c.short());
    }
    s.push('\n');
    let mut row = |name: &str, live: Option<u32>, total: u32, get: &dyn Fn(Class) -> u32| {
        let live = live.map_or("-".to_string(), |n| n.to_string());
        let _ = write!(s, "// {name:<w$}  {live:>4}  {total:>5}");
        for c in Class::ALL {
            let _ = write!(s, " {:>5}", get(c));
        }
        s.push('\n');
    };
    for c in &l.costs {
        row(&c.node, c.peak_live, c.total, &|k| c.mix.get(k));
    }
    row("(no statement)", None, l.unowned.total(), &|k| {
        l.unowned.get(k)
    });
    s
}
