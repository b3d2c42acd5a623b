//! f32 values of decimal literals, rounded once from the text.
//!
//! `serde_json` gives visitors a number's nearest f64, not its text. Rounding that f64 to f32
//! again gives the decimal's nearest f32 except where the f64 is exactly halfway between two
//! f32 values (an f32 midpoint): the decimal may lie above the midpoint, below it or on it,
//! and the f64 no longer says which (`1.0000000596046447754` lies above 1 + 2^-24, its f64 is
//! that midpoint, and a second rounding ties to even, down to 1.0). Such f64 values are rare,
//! so a document is parsed like this ([`with_document`]): visitors take every f32 from
//! [`nearest_f32`]; if the parse met a midpoint, the text's number tokens are scanned, each one
//! whose f64 is a midpoint is rounded from its text (`str::parse::<f32>`, which rounds
//! correctly), and the document is parsed again with that table. Any other document is parsed
//! once, at no extra cost. (`serde_json`'s `arbitrary_precision` would hand over the text, but
//! it changes how every `serde_json::Value`, untagged and flattened type of the crate and of
//! its dependencies reads numbers.)

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use serde::de;

use super::err;
use crate::ir::ast::FloatLit;

/// How the decimals of one midpoint f64 round to f32.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rounding {
    /// Every token with this f64 rounds to these f32 bits.
    One(u32),
    /// Tokens with this f64 round to different f32 values.
    Several,
}

/// f32 rounding per midpoint f64 (by its bits) of one document's number tokens.
type Table = HashMap<u64, Rounding>;

/// The parse in progress on this thread.
#[derive(Default)]
struct State {
    /// The document's table, on its second parse.
    table: Option<Rc<Table>>,
    /// A midpoint was met without a table.
    seen: bool,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// True when `v` lies exactly halfway between two adjacent f32 values (or between `f32::MAX`
/// and the overflow threshold), where rounding it to f32 ties.
pub(crate) fn is_f32_midpoint(v: f64) -> bool {
    if !v.is_finite() {
        return false;
    }
    let a = v.abs();
    let f = a as f32;
    if f as f64 == a {
        return false;
    }
    let (lo, hi) = if (f as f64) < a {
        (f, f.next_up())
    } else {
        (f.next_down(), f)
    };
    let mid = if hi.is_infinite() {
        lo as f64 + 2f64.powi(103)
    } else {
        // Two adjacent f32 values: their sum and its half are exact in f64.
        (lo as f64 + hi as f64) / 2.0
    };
    a == mid
}

/// The f32 nearest the decimal that `v` was parsed from (see the module docs); an error when
/// the document writes two decimals with this f64 that round to different f32 values.
pub(crate) fn nearest_f32<E: de::Error>(v: f64) -> Result<f32, E> {
    if !is_f32_midpoint(v) {
        return Ok(v as f32);
    }
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let Some(table) = &s.table else {
            s.seen = true;
            return Ok(v as f32);
        };
        match table.get(&v.to_bits()) {
            Some(Rounding::One(bits)) => Ok(f32::from_bits(*bits)),
            Some(Rounding::Several) => {
                let even = v as f32;
                let other = if (even.abs() as f64) < v.abs() {
                    even.abs().next_up()
                } else {
                    even.abs().next_down()
                }
                .copysign(even);
                Err(err(
                    format!(
                        "this file writes several decimals within half an f64 step of the f32 \
                         rounding boundary {v:e}, and they round to different f32 values; which \
                         literal is which cannot be told apart"
                    ),
                    format!(
                        "write the f32 value you mean here, e.g. {:?} or {:?}",
                        even, other
                    ),
                ))
            }
            // Not a number token of the text (a value built in memory): its exact value.
            None => Ok(v as f32),
        }
    })
}

/// A bare float literal parsed as `v`: its f64 and its f32 rounded from the text.
pub(crate) fn float_lit<E: de::Error>(v: f64) -> Result<FloatLit, E> {
    Ok(FloatLit {
        value: v,
        f32: nearest_f32(v)?,
    })
}

/// JSON text for a finite bare float literal that parses back to `f`, both its f64 and its
/// f32: the shortest f64 digits, except at an f32 midpoint, where those digits may lie on the
/// other side of it; there the exact decimal of the midpoint (ties to even), or that plus or
/// minus 10^-21 of its last place, on the side that `f.f32` was rounded to.
pub(crate) fn decimal_text(f: FloatLit) -> String {
    let v = f.value;
    let shortest = serde_json::to_string(&v).unwrap_or_else(|_| format!("{v:?}"));
    if !is_f32_midpoint(v) {
        return shortest;
    }
    // f32 midpoints are multiples of 2^-150: 160 fraction digits print them exactly.
    let exact = format!("{:.160}", v.abs());
    let mut digits = exact.trim_end_matches('0').to_string();
    if digits.ends_with('.') {
        digits.push('0');
    }
    let even = v as f32;
    if f.f32.to_bits() != even.to_bits() {
        digits.push_str(&"0".repeat(20));
        if (f.f32.abs() as f64) > v.abs() {
            digits.push('1');
        } else {
            digits = minus_last_place(&(digits + "0"));
        }
    }
    if v.is_sign_negative() {
        format!("-{digits}")
    } else {
        digits
    }
}

/// `digits` (`I.F`, positive, not all zero) minus one unit of its last place, without a
/// leading zero in the integer part.
fn minus_last_place(digits: &str) -> String {
    let mut b = digits.as_bytes().to_vec();
    for c in b.iter_mut().rev() {
        match *c {
            b'.' => continue,
            b'0' => *c = b'9',
            _ => {
                *c -= 1;
                break;
            }
        }
    }
    let s = String::from_utf8(b).unwrap_or_default();
    let trimmed = s.trim_start_matches('0');
    if trimmed.starts_with('.') {
        format!("0{trimmed}")
    } else {
        trimmed.to_string()
    }
}

/// Runs `parse` over the document `text`: once, or, when it met an f32 midpoint, again with
/// the f32 roundings of the text's midpoint tokens (see the module docs). Nested documents
/// (a pipeline's step Programs) keep their own state.
pub(crate) fn with_document<T>(text: &str, mut parse: impl FnMut() -> T) -> T {
    struct Restore(Option<State>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(outer) = self.0.take() {
                STATE.with(|s| *s.borrow_mut() = outer);
            }
        }
    }
    let _restore = Restore(Some(STATE.with(|s| s.take())));
    let first = parse();
    if !STATE.with(|s| s.borrow().seen) {
        return first;
    }
    drop(first);
    let table = Rc::new(midpoint_table(text));
    STATE.with(|s| {
        *s.borrow_mut() = State {
            table: Some(table),
            seen: false,
        }
    });
    parse()
}

/// The f32 rounding of every number token of `text` whose f64 is an f32 midpoint.
fn midpoint_table(text: &str) -> Table {
    let mut table = Table::new();
    for token in number_tokens(text) {
        let Ok(v) = token.parse::<f64>() else {
            continue;
        };
        if !is_f32_midpoint(v) {
            continue;
        }
        let Ok(f) = token.parse::<f32>() else {
            continue;
        };
        table
            .entry(v.to_bits())
            .and_modify(|r| {
                if *r != Rounding::One(f.to_bits()) {
                    *r = Rounding::Several;
                }
            })
            .or_insert(Rounding::One(f.to_bits()));
    }
    table
}

/// The number tokens of JSON text, outside strings, in order.
fn number_tokens(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            match b[i] {
                b'"' => {
                    i += 1;
                    while i < b.len() {
                        match b[i] {
                            b'\\' => i += 2,
                            b'"' => {
                                i += 1;
                                break;
                            }
                            _ => i += 1,
                        }
                    }
                }
                b'-' | b'0'..=b'9' => {
                    let start = i;
                    i += 1;
                    while i < b.len()
                        && matches!(b[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                    {
                        i += 1;
                    }
                    return text.get(start..i);
                }
                _ => i += 1,
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn midpoints_are_found_and_nothing_else() {
        let one_up = 1.0f64 + 2f64.powi(-24);
        assert!(is_f32_midpoint(one_up));
        assert!(is_f32_midpoint(-one_up));
        assert!(is_f32_midpoint(2f64.powi(-150)), "half the least subnormal");
        assert!(is_f32_midpoint(3.0 * 2f64.powi(-150)));
        assert!(is_f32_midpoint(f32::MAX as f64 + 2f64.powi(103)));
        assert!(is_f32_midpoint(16_777_217.0));
        for v in [
            1.0,
            0.1,
            1.0 + 2f64.powi(-23),
            2f64.powi(-151),
            f64::MAX,
            0.0,
        ] {
            assert!(!is_f32_midpoint(v), "{v:e}");
        }
        assert!(!is_f32_midpoint(one_up.next_up()));
        assert!(!is_f32_midpoint(f64::NAN));
        // Random f32 pairs: the halfway point is a midpoint, its f64 neighbours are not.
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..10_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let lo = f32::from_bits(s as u32 & 0x7f7f_ffff);
            let mid = (lo as f64 + lo.next_up() as f64) / 2.0;
            assert!(is_f32_midpoint(mid), "{lo:e}");
            assert!(!is_f32_midpoint(mid.next_up()) && !is_f32_midpoint(mid.next_down()));
        }
    }

    #[test]
    fn decimal_text_keeps_both_roundings_at_every_midpoint() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..4000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let lo = f32::from_bits(s as u32 & 0x7f7f_ffff);
            let mid = (lo as f64 + lo.next_up() as f64) / 2.0;
            let mid = if i % 2 == 0 { mid } else { -mid };
            let (down, up) = (lo.copysign(mid as f32), lo.next_up().copysign(mid as f32));
            for f32 in [down, up] {
                let lit = FloatLit { value: mid, f32 };
                let text = decimal_text(lit);
                assert_eq!(
                    text.parse::<f64>().map(f64::to_bits),
                    Ok(mid.to_bits()),
                    "{text}"
                );
                assert_eq!(
                    text.parse::<f32>().map(f32::to_bits),
                    Ok(f32.to_bits()),
                    "{text}"
                );
                assert!(
                    serde_json::from_str::<f64>(&text).is_ok(),
                    "not JSON: {text}"
                );
            }
        }
        assert_eq!(minus_last_place("10.00"), "9.99");
        assert_eq!(decimal_text(FloatLit::exact(0.1)), "0.1");
    }

    #[test]
    fn number_tokens_skip_strings() {
        let t = r#"{"a\"1": [1.5, -2e-3, "x 7 \\", 0], "b": {"c": 12}}"#;
        assert_eq!(
            number_tokens(t).collect::<Vec<_>>(),
            ["1.5", "-2e-3", "0", "12"]
        );
    }

    #[test]
    fn the_table_rounds_from_the_text_and_marks_disagreement() {
        let t = "[1.0000000596046447754, 1.000000059604644775390625, 0.5, -1.0000000596046447754]";
        let m = (1.0f64 + 2f64.powi(-24)).to_bits();
        let table = midpoint_table(t);
        assert_eq!(table.get(&m), Some(&Rounding::Several));
        assert_eq!(
            table.get(&(-f64::from_bits(m)).to_bits()),
            Some(&Rounding::One(0xbf80_0001))
        );
        assert_eq!(table.len(), 2);
    }
}
