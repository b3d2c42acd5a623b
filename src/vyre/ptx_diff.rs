//! Side-by-side figures of two PTX modules (ours and vyre's): instruction counts by opcode
//! class, register declarations, line counts, and a unified line diff.
//!
//! The classes (one per instruction, by its opcode and state space):
//! `ld.global` (also `ld.param`-free global and constant loads), `st.global`, `ld.shared`,
//! `st.shared`, `atom` (`atom`/`red`), `arith` (integer and float arithmetic, conversions,
//! moves, selects, compares), `control` (`bra`, `ret`, `exit`, `call`), `sync` (`bar`,
//! `membar`, `fence`), `warp` (`shfl`, `vote`, `redux`, `activemask`), `param` (`ld.param`,
//! `cvta`), `other`.

use serde::Serialize;

/// Instruction counts of one module, by class.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Global (and constant) loads.
    pub ld_global: u32,
    /// Global stores.
    pub st_global: u32,
    /// Shared loads.
    pub ld_shared: u32,
    /// Shared stores.
    pub st_shared: u32,
    /// Atomics and reductions.
    pub atomic: u32,
    /// Arithmetic, logic, compares, selects, conversions, moves.
    pub arith: u32,
    /// Branches, returns, exits.
    pub control: u32,
    /// Barriers and fences.
    pub sync: u32,
    /// Warp-level ops.
    pub warp: u32,
    /// Parameter loads and address conversions.
    pub param: u32,
    /// Everything else.
    pub other: u32,
    /// All instructions.
    pub total: u32,
}

impl Counts {
    /// Every class with its row name, in table order, then the total.
    pub fn named(&self) -> [(&'static str, u32); 12] {
        [
            ("ld.global", self.ld_global),
            ("st.global", self.st_global),
            ("ld.shared", self.ld_shared),
            ("st.shared", self.st_shared),
            ("atomic", self.atomic),
            ("arith", self.arith),
            ("control", self.control),
            ("sync", self.sync),
            ("warp", self.warp),
            ("param", self.param),
            ("other", self.other),
            ("total", self.total),
        ]
    }
}

/// The figures of one module.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Figures {
    /// Instruction counts.
    pub counts: Counts,
    /// `.reg` declarations as written (`.reg .u32 %r<40>;`).
    pub registers: Vec<String>,
    /// Declared virtual registers in all (the `<N>` of every declaration, plus single ones).
    pub virtual_registers: u32,
    /// Lines of the module.
    pub lines: u32,
}

/// The comparison of our PTX with vyre's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// Ours.
    pub ours: Figures,
    /// vyre's.
    pub vyre: Figures,
    /// Unified diff (ours -> vyre's), with 3 lines of context.
    pub diff: String,
}

/// The class of an instruction opcode (`ld.global.nc.f32` -> `ld_global`).
pub fn class(opcode: &str) -> &'static str {
    let head = opcode.split('.').next().unwrap_or("");
    let has = |s: &str| opcode.split('.').any(|p| p == s);
    match head {
        "ld" | "ldu" if has("param") => "param",
        "ld" | "ldu" if has("shared") => "ld_shared",
        "ld" | "ldu" => "ld_global",
        "st" if has("shared") => "st_shared",
        "st" => "st_global",
        "atom" | "red" => "atomic",
        "cvta" => "param",
        "bra" | "ret" | "exit" | "call" | "brx" | "trap" => "control",
        "bar" | "barrier" | "membar" | "fence" => "sync",
        "shfl" | "vote" | "redux" | "activemask" | "match" => "warp",
        "add" | "sub" | "mul" | "mad" | "fma" | "div" | "rem" | "abs" | "neg" | "min" | "max"
        | "and" | "or" | "xor" | "not" | "shl" | "shr" | "shf" | "popc" | "clz" | "brev"
        | "bfind" | "bfe" | "bfi" | "prmt" | "setp" | "set" | "selp" | "slct" | "cvt" | "mov"
        | "sqrt" | "rsqrt" | "rcp" | "sin" | "cos" | "ex2" | "lg2" | "tanh" | "copysign"
        | "testp" | "sad" | "mul24" | "mad24" | "cnot" | "lop3" => "arith",
        _ => "other",
    }
}

/// The figures of a PTX module.
pub fn figures(ptx: &str) -> Figures {
    let mut f = Figures {
        lines: ptx.lines().count() as u32,
        ..Figures::default()
    };
    for raw in ptx.lines() {
        let line = raw.split("//").next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(decl) = line.strip_prefix(".reg") {
            f.registers.push(line.to_string());
            f.virtual_registers += decl
                .split('<')
                .nth(1)
                .and_then(|n| n.split('>').next())
                .and_then(|n| n.trim().parse::<u32>().ok())
                .unwrap_or(1);
            continue;
        }
        if line.starts_with('.') || line.ends_with(':') || line == "{" || line == "}" {
            continue;
        }
        if line.starts_with(')') || line.starts_with('(') {
            continue;
        }
        // Optional guard predicate (`@%p1 bra L;`, `@!%p2 st...`).
        let body = match line.strip_prefix('@') {
            Some(rest) => rest.split_once(char::is_whitespace).map_or("", |(_, b)| b),
            None => line,
        };
        let opcode = body.split_whitespace().next().unwrap_or("");
        let opcode = opcode.trim_end_matches(';');
        if opcode.is_empty() {
            continue;
        }
        let c = &mut f.counts;
        let slot = match class(opcode) {
            "ld_global" => &mut c.ld_global,
            "st_global" => &mut c.st_global,
            "ld_shared" => &mut c.ld_shared,
            "st_shared" => &mut c.st_shared,
            "atomic" => &mut c.atomic,
            "arith" => &mut c.arith,
            "control" => &mut c.control,
            "sync" => &mut c.sync,
            "warp" => &mut c.warp,
            "param" => &mut c.param,
            _ => &mut c.other,
        };
        *slot += 1;
        c.total += 1;
    }
    f
}

/// Compares our PTX with vyre's.
pub fn compare(ours: &str, vyre: &str) -> Comparison {
    let diff = similar::TextDiff::from_lines(ours, vyre)
        .unified_diff()
        .context_radius(3)
        .header("vyrescope", "vyre")
        .to_string();
    Comparison {
        ours: figures(ours),
        vyre: figures(vyre),
        diff,
    }
}

/// The counts table and register declarations as text (the diff is not included).
pub fn table(c: &Comparison) -> String {
    let mut s = format!(
        "{:<12} {:>10} {:>10} {:>8}\n",
        "class", "vyrescope", "vyre", "delta"
    );
    for ((name, a), (_, b)) in c.ours.counts.named().into_iter().zip(c.vyre.counts.named()) {
        s += &format!("{name:<12} {a:>10} {b:>10} {:>+8}\n", b as i64 - a as i64);
    }
    s += &format!(
        "{:<12} {:>10} {:>10} {:>+8}\n",
        "lines",
        c.ours.lines,
        c.vyre.lines,
        c.vyre.lines as i64 - c.ours.lines as i64
    );
    s += &format!(
        "{:<12} {:>10} {:>10} {:>+8}\n",
        "virt. regs",
        c.ours.virtual_registers,
        c.vyre.virtual_registers,
        c.vyre.virtual_registers as i64 - c.ours.virtual_registers as i64
    );
    s += "\nregisters (vyrescope):\n";
    for r in &c.ours.registers {
        s += &format!("  {r}\n");
    }
    s += "registers (vyre):\n";
    for r in &c.vyre.registers {
        s += &format!("  {r}\n");
    }
    s
}
