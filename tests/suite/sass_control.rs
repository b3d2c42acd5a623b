//! SASS annotations on every fixture, sm_80 and sm_90: the control bits decoded from the
//! instruction words agree with what the disassembler prints and with what the hardware
//! needs (variable-latency results set a write barrier, fixed-latency ALU results never do,
//! reuse flags sit exactly where nvdisasm prints `.reuse`, every waited barrier is set
//! somewhere), and register liveness never exceeds what ptxas allocated.

use crate::sass_map::{kernel, tools_present};
use crate::support::fixtures::fixtures;

use vyrescope::sass::{disassemble, SassListing};

fn listings() -> Vec<(String, SassListing)> {
    let mut out = Vec::new();
    for (path, p) in fixtures() {
        let name = path
            .file_stem()
            .map_or(String::new(), |s| s.to_string_lossy().into_owned());
        for sm in [80, 90] {
            let l =
                disassemble(&kernel(&p, sm), sm).unwrap_or_else(|e| panic!("{name} sm_{sm}: {e}"));
            out.push((format!("{name} sm_{sm}"), l));
        }
    }
    out
}

/// The opcode after any predicate (`@!P0 LDG.E R2, ...` gives `LDG`).
fn opcode(text: &str) -> &str {
    let t = text.trim();
    let t = match t.strip_prefix('@') {
        Some(rest) => rest.split_once(' ').map_or("", |(_, r)| r.trim_start()),
        None => t,
    };
    let op = t.split_whitespace().next().unwrap_or("");
    op.split('.').next().unwrap_or(op)
}

/// The destination register of `LDG.E R8, [..]` / `S2R R0, SR_TID.X` (`R8`, `R0`).
fn destination(text: &str) -> Option<&str> {
    let t = text.trim_start_matches(|c: char| c != ' ').trim_start();
    let t = if text.starts_with('@') {
        t.trim_start_matches(|c: char| c != ' ').trim_start()
    } else {
        t
    };
    let d = t.split(',').next()?.trim();
    (d.starts_with('R') && d != "RZ").then_some(d.split('.').next().unwrap_or(d))
}

/// Whether `text`'s source operands (after its first comma) name register `r`.
fn reads(text: &str, r: &str) -> bool {
    let Some((_, sources)) = text.split_once(',') else {
        return false;
    };
    sources
        .split(|c: char| !(c.is_ascii_alphanumeric()))
        .any(|tok| tok == r)
}

#[test]
fn control_bits_agree_with_the_disassembly() {
    if !tools_present() {
        return;
    }
    let mut checked = 0;
    let mut adjacent = 0;
    for (name, l) in listings() {
        let mut set_barriers = 0u8;
        for i in &l.instructions {
            let c = i
                .control
                .unwrap_or_else(|| panic!("{name} {:04x}: no control bits", i.address));
            let op = opcode(&i.text);
            // Fixed latency: the stall count covers it, no scoreboard.
            if matches!(
                op,
                "IMAD" | "FFMA" | "IADD3" | "LOP3" | "ISETP" | "FSETP" | "SEL" | "FADD" | "FMUL"
            ) {
                assert_eq!(
                    c.write_barrier, None,
                    "{name} {:04x} {}: a fixed-latency result with a write barrier",
                    i.address, i.text
                );
            }
            assert_eq!(
                c.reuse.count_ones() as usize,
                i.text.matches(".reuse").count(),
                "{name} {:04x} {}: reuse bits {:04b} against the `.reuse` marks",
                i.address,
                i.text,
                c.reuse
            );
            for b in [c.write_barrier, c.read_barrier].into_iter().flatten() {
                assert!(b < 6, "{name}: barrier {b} out of range");
                set_barriers |= 1 << b;
            }
            checked += 1;
        }
        // Variable latency: a result the very next instruction reads comes through a
        // scoreboard that instruction waits on. (Loads further from their use may share
        // the barrier of a later load that completes after them, so only adjacent pairs
        // are checked.)
        for w in l.instructions.windows(2) {
            let (i, next) = (&w[0], &w[1]);
            if !matches!(opcode(&i.text), "S2R" | "LDG" | "LDS" | "LDL") {
                continue;
            }
            let Some(dst) = destination(&i.text) else {
                continue;
            };
            if !reads(&next.text, dst) {
                continue;
            }
            let (c, n) = (
                i.control.unwrap_or_default(),
                next.control.unwrap_or_default(),
            );
            let b = c.write_barrier.unwrap_or_else(|| {
                panic!(
                    "{name} {:04x} {}: its result is read next but it sets no write barrier",
                    i.address, i.text
                )
            });
            assert_eq!(
                n.wait_mask >> b & 1,
                1,
                "{name} {:04x} {}: reads {dst} without waiting on barrier {b}",
                next.address,
                next.text
            );
            adjacent += 1;
        }
        for i in &l.instructions {
            let c = i
                .control
                .unwrap_or_else(|| panic!("{name}: no control bits"));
            assert_eq!(
                c.wait_mask & !set_barriers,
                0,
                "{name} {:04x} {}: waits on a barrier no instruction sets",
                i.address,
                i.text
            );
        }
    }
    assert!(checked > 1000, "only {checked} instructions checked");
    assert!(
        adjacent >= 20,
        "only {adjacent} load-then-use pairs checked"
    );
}

#[test]
fn liveness_never_exceeds_the_allocated_registers() {
    if !tools_present() {
        return;
    }
    for (name, l) in listings() {
        let peak = l.peak_live.unwrap_or_else(|| panic!("{name}: no liveness"));
        assert!(peak > 0, "{name}: no live register anywhere");
        assert!(
            peak <= l.resources.registers,
            "{name}: {peak} live registers but ptxas allocated {}",
            l.resources.registers
        );
        assert!(
            l.instructions.iter().all(|i| i.live.is_some()),
            "{name}: an instruction without a live count"
        );
        for c in &l.costs {
            let p = c
                .peak_live
                .unwrap_or_else(|| panic!("{name} {}: no peak", c.node));
            assert!(
                p <= peak,
                "{name} {}: {p} above the kernel peak {peak}",
                c.node
            );
        }
        // The kernel's peak is some statement's or an unowned instruction's.
        let owned_peak = l.costs.iter().filter_map(|c| c.peak_live).max();
        let unowned_peak = l
            .instructions
            .iter()
            .filter(|i| i.node.is_none())
            .filter_map(|i| i.live.map(|v| v.gpr))
            .max();
        assert_eq!(Some(peak), owned_peak.max(unowned_peak), "{name}");
    }
}
