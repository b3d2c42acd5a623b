//! Reading the text of `nvdisasm -c -g -gp`: instructions with addresses, the line
//! annotations (`//## File "<ir>.vir", line N` from the PTX's `.loc`, and `//## File
//! ".nv_debug_ptx_txt", line N`, the line of the PTX text itself), labels, and the
//! subroutines ptxas adds (`$__internal_0_$__cuda_sm20_div_rn_f64_full`).
//!
//! nvdisasm prints an annotation only where the line changes, so each instruction takes the
//! last annotation before it; a subroutine starts with none (ptxas gives its library code
//! no line info).

use serde::Serialize;

/// The PTX text's pseudo-file in nvdisasm's annotations.
const PTX_FILE: &str = ".nv_debug_ptx_txt";

/// One instruction as nvdisasm printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawInstr {
    /// Byte offset in the kernel's code.
    pub address: u32,
    /// The instruction (`@P0 EXIT`), without the trailing `;`.
    pub text: String,
    /// PTX line in effect (1-based), if any.
    pub ptx_line: Option<u32>,
    /// IR printer line in effect (from `.loc`), if any.
    pub ir_line: Option<u32>,
    /// The ptxas subroutine this instruction belongs to (None: the kernel itself).
    pub routine: Option<String>,
    /// The instruction's two 64-bit words (low, high) when the listing has them
    /// (`nvdisasm -hex`).
    pub words: Option<(u64, u64)>,
}

/// A label or function start and the address it names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Label {
    /// Address of the instruction it names.
    pub address: u32,
    /// `.L_x_3`, or a subroutine's name.
    pub name: String,
}

/// A parsed listing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Disassembly {
    /// The entry function's name.
    pub kernel: String,
    /// Instructions in address order, the trailing alignment NOPs removed.
    pub instructions: Vec<RawInstr>,
    /// Labels, in address order.
    pub labels: Vec<Label>,
    /// Alignment NOPs removed from the end.
    pub padding: u32,
}

/// `/*01d0*/  BRA ... ;  /* 0x... */` gives (0x1d0, `BRA ...`, the low word if printed).
fn instruction(line: &str) -> Option<(u32, String, Option<u64>)> {
    let rest = line.trim_start().strip_prefix("/*")?;
    let (hex, text) = rest.split_once("*/")?;
    let address = u32::from_str_radix(hex, 16).ok()?;
    let (text, word) = match text.rsplit_once("/* 0x") {
        Some((before, w)) => (before, hex_word(w)),
        None => (text, None),
    };
    let text = text.trim().trim_end_matches(';').trim_end();
    Some((address, text.to_string(), word))
}

/// `0123abcd */` (what follows `/* 0x`) gives the word.
fn hex_word(rest: &str) -> Option<u64> {
    let digits = rest.split_once("*/")?.0.trim();
    u64::from_str_radix(digits, 16).ok()
}

/// A line holding only `/* 0x... */`: the high word of the instruction before it.
fn word_line(line: &str) -> Option<u64> {
    hex_word(line.trim_start().strip_prefix("/* 0x")?)
}

/// `//## File "x", line 12` (possibly followed by inlining notes) gives ("x", 12).
fn annotation(line: &str) -> Option<(&str, u32)> {
    let rest = line.trim_start().strip_prefix("//## File \"")?;
    let (file, rest) = rest.split_once('"')?;
    let rest = rest.trim_start().strip_prefix(", line ")?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((file, digits.parse().ok()?))
}

/// Parses `nvdisasm -c -g -gp` output.
pub fn parse(text: &str) -> Disassembly {
    let mut globals: Vec<&str> = Vec::new();
    let mut functions: Vec<&str> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix(".global") {
            globals.push(name.trim());
        } else if let Some(rest) = t.strip_prefix(".type") {
            if let Some((name, kind)) = rest.trim().split_once(',') {
                if kind.trim() == "@function" {
                    functions.push(name.trim());
                }
            }
        }
    }
    let mut d = Disassembly::default();
    let (mut ptx, mut ir): (Option<u32>, Option<u32>) = (None, None);
    let mut routine: Option<String> = None;
    let mut pending: Vec<String> = Vec::new();
    let mut low_word: Option<u64> = None;
    for line in text.lines() {
        if let Some((address, text, low)) = instruction(line) {
            for name in pending.drain(..) {
                d.labels.push(Label { address, name });
            }
            low_word = low;
            d.instructions.push(RawInstr {
                address,
                text,
                ptx_line: ptx,
                ir_line: ir,
                routine: routine.clone(),
                words: None,
            });
        } else if let Some(high) = word_line(line) {
            if let (Some(low), Some(last)) = (low_word.take(), d.instructions.last_mut()) {
                last.words = Some((low, high));
            }
        } else if let Some((file, n)) = annotation(line) {
            if file == PTX_FILE {
                ptx = Some(n);
            } else {
                ir = Some(n);
            }
        } else if let Some(name) = line.strip_suffix(':').filter(|n| !n.contains(' ')) {
            if name.starts_with(".text.") || name.is_empty() {
                continue;
            }
            if functions.contains(&name) {
                if globals.contains(&name) {
                    if d.kernel.is_empty() {
                        d.kernel = name.to_string();
                    }
                    routine = None;
                } else {
                    routine = Some(name.to_string());
                    pending.push(name.to_string());
                }
                ptx = None;
                ir = None;
            } else {
                pending.push(name.to_string());
            }
        }
    }
    while d.instructions.last().is_some_and(|i| i.text == "NOP") {
        d.instructions.pop();
        d.padding += 1;
    }
    let end = d.instructions.last().map_or(0, |i| i.address);
    d.labels.retain(|l| l.address <= end);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = r#"        .global         k
        .type           k,@function
        .type           $__internal_0_$__cuda_sm20_div_s64,@function
k:
.text.k:
	//## File "k.vir", line 9
	//## File ".nv_debug_ptx_txt", line 30
        /*0000*/                   LDC R1, c[0x0][0x28] ;
	//## File ".nv_debug_ptx_txt", line 36
        /*0010*/               @P0 EXIT ;
        /*0020*/                   CALL.REL.NOINC `($__internal_0_$__cuda_sm20_div_s64) ;
.L_x_0:
        /*0030*/                   BRA `(.L_x_0);
$__internal_0_$__cuda_sm20_div_s64:
        /*0040*/                   IADD3 R2, R2, 1, RZ ;
        /*0050*/                   RET.REL.NODEC R6 `(k) ;
        /*0060*/                   NOP;
        /*0070*/                   NOP;
.L_x_1:
"#;

    #[test]
    fn instructions_take_the_last_annotation_and_subroutines_none() {
        let d = parse(LISTING);
        assert_eq!(d.kernel, "k");
        assert_eq!(d.padding, 2);
        assert_eq!(d.instructions.len(), 6);
        let i = &d.instructions;
        assert_eq!(
            (i[0].address, i[0].text.as_str()),
            (0, "LDC R1, c[0x0][0x28]")
        );
        assert_eq!((i[0].ptx_line, i[0].ir_line), (Some(30), Some(9)));
        assert_eq!((i[1].text.as_str(), i[1].ptx_line), ("@P0 EXIT", Some(36)));
        assert_eq!(i[2].ptx_line, Some(36));
        assert_eq!(i[4].ptx_line, None);
        assert_eq!(
            i[4].routine.as_deref(),
            Some("$__internal_0_$__cuda_sm20_div_s64")
        );
        let names: Vec<(u32, &str)> = d
            .labels
            .iter()
            .map(|l| (l.address, l.name.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![
                (0x30, ".L_x_0"),
                (0x40, "$__internal_0_$__cuda_sm20_div_s64")
            ]
        );
    }
}
