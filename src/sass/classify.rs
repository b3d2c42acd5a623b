//! The instruction classes of the per-statement mix: memory, arithmetic, control,
//! conversion, special. A class comes from the opcode's base name (before the first `.`),
//! after any predicate.

use serde::Serialize;

/// What kind of work one SASS instruction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Loads, stores, atomics, reductions, fences and constant-bank loads (`LDG`, `STS`,
    /// `ATOMG`, `RED`, `MEMBAR`, `LDC`, `ULDC`...).
    Memory,
    /// Integer, float, logic, compare, select and move operations (`IMAD`, `FFMA`, `LOP3`,
    /// `ISETP`, `SEL`, `MOV`...).
    Arithmetic,
    /// Branches, calls, exits, reconvergence and barriers (`BRA`, `EXIT`, `BSSY`, `BAR`,
    /// `WARPSYNC`, `NOP`...).
    Control,
    /// Type conversions (`F2F`, `F2I`, `I2F`, `I2I`, `F2FP`, `FRND`...).
    Conversion,
    /// Special registers, warp-wide operations and the special function unit (`S2R`,
    /// `CS2R`, `SHFL`, `VOTE`, `MATCH`, `REDUX`, `MUFU`...).
    Special,
}

impl Class {
    /// All classes, in the order of the mix columns.
    pub const ALL: [Class; 5] = [
        Class::Memory,
        Class::Arithmetic,
        Class::Control,
        Class::Conversion,
        Class::Special,
    ];

    /// Short column heading.
    pub fn short(self) -> &'static str {
        match self {
            Class::Memory => "mem",
            Class::Arithmetic => "arith",
            Class::Control => "ctrl",
            Class::Conversion => "conv",
            Class::Special => "spec",
        }
    }
}

/// The opcode of an instruction text (`@!P0 LDG.E.CONSTANT R8, ...` gives `LDG.E.CONSTANT`).
pub fn opcode(text: &str) -> &str {
    let mut words = text.split_whitespace();
    let first = words.next().unwrap_or("");
    if first.starts_with('@') {
        words.next().unwrap_or("")
    } else {
        first
    }
}

/// The class of an instruction text.
pub fn classify(text: &str) -> Class {
    let op = opcode(text);
    let base = op.split('.').next().unwrap_or(op);
    const MEMORY: &[&str] = &[
        "LD",
        "LDG",
        "LDS",
        "LDL",
        "LDC",
        "ULDC",
        "LDSM",
        "LDGSTS",
        "LDGDEPBAR",
        "ST",
        "STG",
        "STS",
        "STL",
        "STSM",
        "ATOM",
        "ATOMG",
        "ATOMS",
        "RED",
        "REDG",
        "REDAS",
        "MEMBAR",
        "ERRBAR",
        "FENCE",
        "CCTL",
        "CCTLL",
        "CCTLT",
        "LDTRAM",
        "UBLKCP",
        "UTMALDG",
        "UTMASTG",
        "SYNCS",
    ];
    const CONTROL: &[&str] = &[
        "BRA",
        "BRX",
        "BRXU",
        "JMP",
        "JMX",
        "JMXU",
        "CALL",
        "RET",
        "EXIT",
        "BSSY",
        "BSYNC",
        "BREAK",
        "BMOV",
        "BPT",
        "BAR",
        "WARPSYNC",
        "NOP",
        "YIELD",
        "KILL",
        "NANOSLEEP",
        "RTT",
        "DEPBAR",
        "ACQBULK",
        "ELECT",
        "ENDCOLLECTIVE",
        "PREEXIT",
        "WARPGROUP",
    ];
    const CONVERSION: &[&str] = &[
        "F2F", "F2I", "I2F", "I2I", "F2FP", "I2FP", "F2IP", "I2IP", "FRND", "DRND", "F2I64",
        "I2F64",
    ];
    const SPECIAL: &[&str] = &[
        "S2R",
        "S2UR",
        "CS2R",
        "SHFL",
        "VOTE",
        "VOTEU",
        "MATCH",
        "REDUX",
        "MUFU",
        "B2R",
        "R2B",
        "R2UR",
        "GETLMEMBASE",
        "SETLMEMBASE",
        "CREDUX",
        "UCGABAR_ARV",
        "UCGABAR_WAIT",
    ];
    if MEMORY.contains(&base) {
        Class::Memory
    } else if CONTROL.contains(&base) {
        Class::Control
    } else if CONVERSION.contains(&base) {
        Class::Conversion
    } else if SPECIAL.contains(&base) {
        Class::Special
    } else {
        Class::Arithmetic
    }
}

/// Instruction counts per class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Mix {
    /// Memory instructions.
    pub memory: u32,
    /// Arithmetic instructions.
    pub arithmetic: u32,
    /// Control instructions.
    pub control: u32,
    /// Conversions.
    pub conversion: u32,
    /// Special instructions.
    pub special: u32,
}

impl Mix {
    /// Counts one more instruction of `c`.
    pub fn add(&mut self, c: Class) {
        *self.slot(c) += 1;
    }

    /// The count of `c`.
    pub fn get(&self, c: Class) -> u32 {
        match c {
            Class::Memory => self.memory,
            Class::Arithmetic => self.arithmetic,
            Class::Control => self.control,
            Class::Conversion => self.conversion,
            Class::Special => self.special,
        }
    }

    fn slot(&mut self, c: Class) -> &mut u32 {
        match c {
            Class::Memory => &mut self.memory,
            Class::Arithmetic => &mut self.arithmetic,
            Class::Control => &mut self.control,
            Class::Conversion => &mut self.conversion,
            Class::Special => &mut self.special,
        }
    }

    /// All instructions counted.
    pub fn total(&self) -> u32 {
        Class::ALL.iter().map(|&c| self.get(c)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_the_opcode_after_the_predicate() {
        assert_eq!(
            classify("@!P0 LDG.E.CONSTANT R8, desc[UR4][R2.64]"),
            Class::Memory
        );
        assert_eq!(classify("ULDC.64 UR4, c[0x0][0x208]"), Class::Memory);
        assert_eq!(classify("FADD R9, R9, R8"), Class::Arithmetic);
        assert_eq!(classify("@P0 EXIT"), Class::Control);
        assert_eq!(classify("F2I.FTZ.U32.TRUNC.NTZ R5, R4"), Class::Conversion);
        assert_eq!(classify("S2R R0, SR_TID.X"), Class::Special);
        assert_eq!(classify("MUFU.RCP R2, R2"), Class::Special);
        let mut m = Mix::default();
        for t in [
            "LDG R1",
            "STG R1",
            "FADD R1",
            "BRA x",
            "I2F R1",
            "SHFL.BFLY R1",
        ] {
            m.add(classify(t));
        }
        assert_eq!((m.memory, m.arithmetic, m.control), (2, 1, 1));
        assert_eq!((m.conversion, m.special, m.total()), (1, 1, 6));
    }
}
