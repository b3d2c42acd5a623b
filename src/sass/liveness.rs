//! Register liveness per instruction, read from `nvdisasm --print-life-ranges
//! --life-range-mode count`: the number of general (`R`), predicate (`P`) and uniform
//! (`UR`) registers that hold a live value at each instruction, as ptxas's allocation
//! left them. The peak over a statement's instructions is that statement's register
//! pressure; the kernel's peak can never exceed the registers ptxas reports.

use std::collections::HashMap;

use serde::Serialize;

/// Live registers at one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Live {
    /// General-purpose registers (`R0..`) live.
    pub gpr: u32,
    /// Predicate registers (`P0..P6`) live.
    pub pred: u32,
    /// Uniform registers (`UR0..`) live.
    pub ugpr: u32,
}

/// The counts per instruction address of a `-plr -lrm count` listing. A line such as
/// `/*0040*/  IMAD R0, R0, 0x100, R3 ;   // |   4   |        |   1    |` gives
/// (0x40, 4 R, 0 P, 1 UR); an empty column is 0.
pub fn parse(text: &str) -> HashMap<u32, Live> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("/*") else {
            continue;
        };
        let Some((hex, rest)) = rest.split_once("*/") else {
            continue;
        };
        let Ok(address) = u32::from_str_radix(hex, 16) else {
            continue;
        };
        let Some((_, columns)) = rest.rsplit_once("// |") else {
            continue;
        };
        let mut counts = columns
            .split('|')
            .map(|c| c.trim().parse::<u32>().unwrap_or(0));
        let live = Live {
            gpr: counts.next().unwrap_or(0),
            pred: counts.next().unwrap_or(0),
            ugpr: counts.next().unwrap_or(0),
        };
        out.insert(address, live);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_per_address_and_empty_ones_are_zero() {
        let text = "\
saxpy_f32:                                                  // |       |        |        |
        /*0000*/                   LDC R1, c[0x0][0x28] ;   // |   2   |        |        |
        /*0050*/   ISETP.GE.U32.AND P0, PT, R0, UR4, PT ;   // |  14   |   1    |   1    |
        /*0060*/               @P0 EXIT ;                   // |   4   |   1    |        |
                                                            //     #       : Number of occupied registers
";
        let m = parse(text);
        assert_eq!(m.len(), 3);
        assert_eq!(
            m[&0],
            Live {
                gpr: 2,
                pred: 0,
                ugpr: 0
            }
        );
        assert_eq!(
            m[&0x50],
            Live {
                gpr: 14,
                pred: 1,
                ugpr: 1
            }
        );
        assert_eq!(
            m[&0x60],
            Live {
                gpr: 4,
                pred: 1,
                ugpr: 0
            }
        );
    }
}
