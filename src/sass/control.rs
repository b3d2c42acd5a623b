//! Scheduling control bits of Volta-and-newer SASS (sm_70 .. sm_90), decoded from the
//! instruction words `nvdisasm -hex` prints.
//!
//! Every instruction is 128 bits, printed as two 64-bit words (low, then high). Since Volta
//! the top 23 bits (bits 105..127 of the instruction, bits 41..63 of the high word) are not
//! part of the operation: ptxas's scheduler writes there what the hardware does not check
//! for itself. From the lowest bit up:
//!
//! | bits of the field | bits of the high word | meaning |
//! |---|---|---|
//! | 0..3   | 41..44 | stall: cycles the warp scheduler waits before issuing the next instruction of this warp |
//! | 4      | 45     | yield hint, stored inverted: 0 lets the scheduler switch to another warp (`Y`) |
//! | 5..7   | 46..48 | write dependency barrier (scoreboard 0..5) set when a variable-latency result is written; 7 = none |
//! | 8..10  | 49..51 | read dependency barrier set when the source operands have been read; 7 = none |
//! | 11..16 | 52..57 | wait mask: scoreboards (bit k = barrier k) this instruction waits for before it issues |
//! | 17..20 | 58..61 | operand reuse cache flags (bit 0 = first source operand, `.reuse` in the text) |
//!
//! NVIDIA does not document this layout; it comes from public reverse engineering (maxas
//! for Maxwell, Jia et al.'s Volta and Turing microbenchmark papers, CuAssembler) and is
//! checked here against what the disassembler itself prints: an `S2R` (variable latency)
//! sets a write barrier that the instruction using its result waits for, and the reuse
//! bits set exactly on operands nvdisasm marks `.reuse` (`tests/suite/sass_control.rs`).

use serde::Serialize;

/// The decoded control field of one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Control {
    /// Stall cycles before the warp's next instruction may issue (0..15).
    pub stall: u8,
    /// Whether the scheduler may switch to another warp after this instruction (the stored
    /// bit is 0).
    #[serde(rename = "yield")]
    pub yield_hint: bool,
    /// Scoreboard set when the result is written (variable-latency instructions), if any.
    pub write_barrier: Option<u8>,
    /// Scoreboard set once the source registers have been read, if any.
    pub read_barrier: Option<u8>,
    /// Scoreboards waited on before issue: bit k is barrier k (6 bits).
    pub wait_mask: u8,
    /// Operand reuse cache flags: bit k is the k-th source operand (4 bits).
    pub reuse: u8,
}

/// No dependency barrier in a 3-bit barrier field.
const NO_BARRIER: u64 = 7;

impl Control {
    /// Decodes the control field from an instruction's high 64-bit word.
    pub fn from_high_word(high: u64) -> Control {
        let field = high >> 41;
        let barrier = |shift: u32| {
            let b = (field >> shift) & 7;
            (b != NO_BARRIER).then_some(b as u8)
        };
        Control {
            stall: (field & 0xf) as u8,
            yield_hint: (field >> 4) & 1 == 0,
            write_barrier: barrier(5),
            read_barrier: barrier(8),
            wait_mask: ((field >> 11) & 0x3f) as u8,
            reuse: ((field >> 17) & 0xf) as u8,
        }
    }

    /// The scoreboards waited on, lowest first.
    pub fn waits(&self) -> impl Iterator<Item = u8> + '_ {
        (0..6u8).filter(move |b| self.wait_mask >> b & 1 == 1)
    }

    /// The compact column of the text listing: wait mask, read and write barrier, yield,
    /// stall, as in `B0----:R-:W1:Y:S04` (wait mask digits where set, `-` for none),
    /// then `r` and the reused operand slots when any (`r0`).
    pub fn notation(&self) -> String {
        let mut s = String::from("B");
        for b in 0..6u8 {
            if self.wait_mask >> b & 1 == 1 {
                s.push(char::from(b'0' + b));
            } else {
                s.push('-');
            }
        }
        let bar = |b: Option<u8>| b.map_or('-', |b| char::from(b'0' + b));
        s.push_str(&format!(
            ":R{}:W{}:{}:S{:02}",
            bar(self.read_barrier),
            bar(self.write_barrier),
            if self.yield_hint { 'Y' } else { '-' },
            self.stall
        ));
        s
    }

    /// The reused operand slots as text (`r02` for slots 0 and 2), empty when none.
    pub fn reuse_notation(&self) -> String {
        if self.reuse == 0 {
            return String::new();
        }
        let mut s = String::from("r");
        for k in 0..4u8 {
            if self.reuse >> k & 1 == 1 {
                s.push(char::from(b'0' + k));
            }
        }
        s
    }
}

/// Width of [`Control::notation`].
pub const NOTATION_WIDTH: usize = 19;

#[cfg(test)]
mod tests {
    use super::*;

    /// Words read off `nvdisasm -hex` of the saxpy fixture for sm_90 (ptxas 13.0.88) and
    /// decoded by hand.
    #[test]
    fn hand_checked_words() {
        // S2R R0, SR_CTAID.X: variable latency, sets write barrier 0, stall 1, no yield.
        let s2r = Control::from_high_word(0x000e220000002500);
        assert_eq!(
            s2r,
            Control {
                stall: 1,
                yield_hint: false,
                write_barrier: Some(0),
                read_barrier: None,
                wait_mask: 0,
                reuse: 0
            }
        );
        assert_eq!(s2r.notation(), "B------:R-:W0:-:S01");
        // IMAD R0, R0, 0x100, R3: waits for barrier 0 (both S2R results), stall 5, yield.
        let imad = Control::from_high_word(0x001fca00078e0203);
        assert_eq!(imad.wait_mask, 1);
        assert_eq!((imad.stall, imad.yield_hint), (5, true));
        assert_eq!((imad.write_barrier, imad.read_barrier), (None, None));
        assert_eq!(imad.notation(), "B0-----:R-:W-:Y:S05");
        // IMAD.SHL.U32 R4, R0.reuse, 0x4, RZ: reuse flag on the first source operand.
        let shl = Control::from_high_word(0x040fe200078e00ff);
        assert_eq!(shl.reuse, 1);
        assert_eq!(shl.reuse_notation(), "r0");
        assert_eq!(shl.notation().len(), NOTATION_WIDTH);
    }

    #[test]
    fn every_field_round_trips_through_its_bits() {
        // Build high words from chosen fields and read them back.
        for stall in [0u64, 1, 7, 15] {
            for y in [0u64, 1] {
                for wb in [0u64, 3, 5, 7] {
                    for rb in [0u64, 2, 7] {
                        for wait in [0u64, 1, 0x21, 0x3f] {
                            for reuse in [0u64, 1, 0xa, 0xf] {
                                let field =
                                    stall | y << 4 | wb << 5 | rb << 8 | wait << 11 | reuse << 17;
                                // Low 41 bits are opcode bits: fill them with noise.
                                let c = Control::from_high_word(field << 41 | 0x015a_5a5a_5a5a);
                                assert_eq!(u64::from(c.stall), stall);
                                assert_eq!(c.yield_hint, y == 0);
                                assert_eq!(c.write_barrier.map_or(7, u64::from), wb);
                                assert_eq!(c.read_barrier.map_or(7, u64::from), rb);
                                assert_eq!(u64::from(c.wait_mask), wait);
                                assert_eq!(u64::from(c.reuse), reuse);
                                assert_eq!(c.waits().count() as u32, wait.count_ones());
                            }
                        }
                    }
                }
            }
        }
    }
}
