//! Register estimate from emitted PTX, for occupancy without `ptxas` (offline machines).
//!
//! The emitted PTX names a fresh virtual register for nearly every value, so counting them
//! says nothing about what ptxas allocates. Instead [`estimate_registers`] runs a linear scan
//! over the kernel's instructions: each virtual register lives from its first to its last
//! mention; a register mentioned inside a loop (a backward branch to a label) and defined
//! before it stays live to the loop's last instruction, since the next iteration reads it. The
//! estimate is the largest total of live 32-bit registers at any instruction (`%rd`/`%fd`
//! count two, `%p` predicates none: they have their own file), clamped to `[16, 255]`
//! (255 is the per-thread limit; below 16 the occupancy model gives the same answer on every
//! supported GPU). Against ptxas 13 on the bundled fixtures (sm_90) it is within about 12
//! registers either way (docs/architecture.md has the table); exact figures need ptxas
//! (`scripts/install-ptxas.sh`).

use std::collections::HashMap;

use crate::occupancy::KernelResources;

/// How every report labels estimated resources (the CLI's `occupancy` and the inspector).
pub const ESTIMATED_NOTE: &str = "estimated, ptxas not found: registers from a live-range scan of the PTX; exact figures: run scripts/install-ptxas.sh and export VYRESCOPE_PTXAS=<the path it prints>, or pass --regs N";

/// Smallest estimate given.
pub const MIN_ESTIMATE: u32 = 16;
/// Largest estimate given (the per-thread register limit).
pub const MAX_ESTIMATE: u32 = 255;

/// Estimated 32-bit registers per thread of the kernel(s) in `ptx` (see the module docs).
pub fn estimate_registers(ptx: &str) -> u32 {
    max_live(ptx).clamp(MIN_ESTIMATE, MAX_ESTIMATE)
}

/// Kernel resources without ptxas: [`estimate_registers`] and the static `.shared` bytes the
/// PTX declares; no local memory, and the block limit left to the occupancy model.
pub fn estimate_resources(ptx: &str) -> KernelResources {
    KernelResources {
        regs_per_thread: estimate_registers(ptx),
        static_smem_bytes: static_shared_bytes(ptx),
        ..KernelResources::default()
    }
}

/// Sum of the `.shared ... name[N]` byte arrays the PTX declares.
pub fn static_shared_bytes(ptx: &str) -> u32 {
    ptx.lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .filter(|l| l.starts_with(".shared"))
        .filter_map(|l| {
            let open = l.rfind('[')?;
            let close = l.rfind(']')?;
            l.get(open + 1..close)?.trim().parse::<u32>().ok()
        })
        .fold(0u32, |a, b| a.saturating_add(b))
}

/// Register weight in 32-bit registers by PTX name prefix.
fn weight(prefix: &str) -> u32 {
    match prefix {
        "p" => 0,
        "rd" | "fd" => 2,
        _ => 1,
    }
}

/// The virtual registers (`%r12`, `%fd3`) mentioned in one instruction; special registers
/// (`%tid.x`, `%laneid`) have no number or a `.` suffix and are skipped.
fn registers(ins: &str) -> Vec<(&str, &str)> {
    let b = ins.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        let start = i;
        let mut j = i + 1;
        while j < b.len() && b[j].is_ascii_lowercase() {
            j += 1;
        }
        let letters_end = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        let suffix_ok =
            j >= b.len() || !(b[j].is_ascii_alphanumeric() || b[j] == b'.' || b[j] == b'_');
        if letters_end > start + 1 && j > letters_end && suffix_ok {
            out.push((&ins[start..j], &ins[start + 1..letters_end]));
        }
        i = j.max(i + 1);
    }
    out
}

/// The largest number of live 32-bit registers at any instruction, unclamped.
pub fn max_live(ptx: &str) -> u32 {
    let mut instrs: Vec<&str> = Vec::new();
    let mut labels: HashMap<&str, usize> = HashMap::new();
    for line in ptx.lines() {
        let l = line.split("//").next().unwrap_or("").trim();
        if l.is_empty() || l.starts_with('.') || l.starts_with('{') || l.starts_with('}') {
            continue;
        }
        if let Some(name) = l.strip_suffix(':') {
            labels.insert(name, instrs.len());
            continue;
        }
        if l.contains(';') {
            instrs.push(l);
        }
    }
    // Live intervals [first, last] per register, and loops as (label, backward branch).
    let mut live: HashMap<&str, (usize, usize, u32)> = HashMap::new();
    let mut loops = Vec::new();
    for (i, ins) in instrs.iter().enumerate() {
        for (name, prefix) in registers(ins) {
            live.entry(name)
                .and_modify(|e| e.1 = i)
                .or_insert((i, i, weight(prefix)));
        }
        if let Some(target) = branch_target(ins) {
            if let Some(&at) = labels.get(target) {
                if at <= i {
                    loops.push((at, i));
                }
            }
        }
    }
    // A value defined before a loop and read inside it is live through the whole loop.
    // Nested loops may extend an interval into an outer loop: iterate to a fixed point
    // (each pass only grows intervals, bounded by the instruction count).
    let mut changed = true;
    while changed {
        changed = false;
        for &(head, tail) in &loops {
            for e in live.values_mut() {
                if e.0 < head && e.1 >= head && e.1 < tail {
                    e.1 = tail;
                    changed = true;
                }
            }
        }
    }
    let mut delta = vec![0i64; instrs.len() + 1];
    for &(a, b, w) in live.values() {
        delta[a] += i64::from(w);
        delta[b + 1] -= i64::from(w);
    }
    let (mut cur, mut best) = (0i64, 0i64);
    for d in delta {
        cur += d;
        best = best.max(cur);
    }
    best.clamp(0, i64::from(u32::MAX)) as u32
}

/// The label of a `bra` / `bra.uni` instruction (possibly predicated).
fn branch_target(ins: &str) -> Option<&str> {
    let mut words = ins.split_whitespace();
    while let Some(w) = words.next() {
        if w == "bra" || w.starts_with("bra.") {
            return words.next().map(|t| t.trim_end_matches(';'));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn straight_line_counts_overlapping_values() {
        // %r1, %r2 live together, then %r3 replaces both; %rd1 counts two.
        let ptx = "{\n mov.u32 %r1, %tid.x;\n mov.u32 %r2, %ctaid.x;\n add.s32 %r3, %r1, %r2;\n cvt.u64.u32 %rd1, %r3;\n setp.lt.u32 %p1, %r3, 4;\n st.global.u32 [%rd1], %r3;\n}";
        // At the add: %r1, %r2, %r3; at the cvt: %r3 and %rd1 (two).
        assert_eq!(max_live(ptx), 3);
        assert_eq!(estimate_registers(ptx), MIN_ESTIMATE);
    }

    #[test]
    fn loop_keeps_values_defined_before_it_alive() {
        let body = |with_loop: bool| {
            let mut s = String::from("mov.u32 %r1, 0;\n");
            for k in 2..20 {
                s.push_str(&format!("mov.u32 %r{k}, {k};\n"));
            }
            s.push_str("$L_top:\n add.s32 %r1, %r1, 1;\n");
            // Each of %r2..%r19 is read once, one after the other.
            for k in 2..20 {
                s.push_str(&format!("add.s32 %r40, %r1, %r{k};\n"));
            }
            // Ten temporaries live together after the reads.
            for k in 50..60 {
                s.push_str(&format!("mov.u32 %r{k}, {k};\n"));
            }
            for k in 50..60 {
                s.push_str(&format!("st.shared.u32 [wg_a], %r{k};\n"));
            }
            if with_loop {
                s.push_str("setp.lt.u32 %p1, %r1, 9;\n@%p1 bra $L_top;\n");
            }
            s.push_str("ret;\n");
            s
        };
        // Without the back edge %r2..%r19 die as they are read (peak: all 19 plus %r40 at
        // the first read); with it they stay live beside the ten temporaries.
        assert_eq!(max_live(&body(false)), 20);
        assert_eq!(max_live(&body(true)), 29);
    }

    #[test]
    fn special_registers_and_directives_do_not_count() {
        let ptx = ".reg .b32 %r<900>;\n.shared .align 4 .b8 wg_a[1024];\n.shared .align 8 .b8 wg_b[64];\nmov.u32 %r1, %tid.x;\nmov.u32 %r2, %laneid;\n";
        assert_eq!(max_live(ptx), 1);
        assert_eq!(static_shared_bytes(ptx), 1088);
        assert_eq!(estimate_resources(ptx).static_smem_bytes, 1088);
    }

    #[test]
    fn huge_kernels_clamp_at_255() {
        let mut s = String::new();
        for k in 0..400 {
            s.push_str(&format!("mov.u32 %r{k}, {k};\n"));
        }
        for k in 0..400 {
            s.push_str(&format!("st.global.u32 [%rd0], %r{k};\n"));
        }
        assert_eq!(estimate_registers(&s), MAX_ESTIMATE);
    }
}
