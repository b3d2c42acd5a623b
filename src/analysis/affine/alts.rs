//! Index alternatives: what an index written with `select`, `min`, `max` (and clamp-like nests
//! of them) or `rem` by a buffer length takes, when it is not one affine form.
//!
//! `select(i > 0, i - 1, 0)` is `i - 1` for the threads with `i >= 1` and `0` for the others;
//! `min(i + 1, len(x) - 1)` is one of its operands; `max(i, 1) - 1` is `i - 1` or `0`;
//! `rem(i + 1, len(x))` is `i + 1` wrapped at the buffer's length. Each [`Alt`] is one such
//! value with the guards under which a thread takes it, which is what lets the megakernel's
//! tile analysis bound an index by a window of workgroups plus a few boundary workgroups
//! instead of calling it data-dependent.
//!
//! Sound under the same rules as the rest of the module: every operand value is its exact
//! form modulo 2^32 (only the exact walk builds alternatives), `select`/`min`/`max` always
//! return one of their operands whatever the signedness, and a guard is only a statement
//! about integers: its user must check that both compared sides stay in `[0, 2^31)` (where
//! signed, unsigned and integer comparisons agree) before relying on it.

use crate::ir::{BinOp, Expr, NodeId, ScalarType};

use super::walker::Walker;
use super::{add_parts, scale_parts, Parts, IDS};

/// Most alternatives one index keeps; past it the index is `Varying` as before.
pub const MAX_ALTS: usize = 8;
/// Most guards one alternative keeps (the rest are dropped: fewer guards only widen it).
const MAX_GUARDS: usize = 4;

/// A known linear form plus a multiple of one buffer's length: `parts + k * len(buffer)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lin {
    /// The known form (see [`Parts`]).
    pub parts: Parts,
    /// `(buffer, k)`: the Program's buffer whose length is added `k` times.
    pub len: Option<(String, i64)>,
}

impl Lin {
    fn constant(&self) -> Option<i64> {
        let (coef, wgid, c, lo, hi) = self.parts;
        (coef == [0; IDS] && wgid == [0; 3] && lo == 0 && hi == 0 && self.len.is_none())
            .then_some(c)
    }

    fn add(&self, o: &Lin, sign: i64) -> Option<Lin> {
        let b = scale_parts(o.parts, sign)?;
        let parts = add_parts(self.parts, b)?;
        let len = match (&self.len, &o.len) {
            (None, None) => None,
            (Some(x), None) => Some(x.clone()),
            (None, Some((b, k))) => Some((b.clone(), k.checked_mul(sign)?)),
            (Some((a, j)), Some((b, k))) if a == b => {
                Some((a.clone(), j.checked_add(k.checked_mul(sign)?)?))
            }
            _ => return None,
        };
        Some(Lin {
            parts,
            len: len.filter(|(_, k)| *k != 0),
        })
    }

    fn scale(&self, k: i64) -> Option<Lin> {
        Some(Lin {
            parts: scale_parts(self.parts, k)?,
            len: match &self.len {
                Some((b, j)) => Some((b.clone(), j.checked_mul(k)?)).filter(|(_, j)| *j != 0),
                None => None,
            },
        })
    }
}

/// One value an index may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// The value of the form.
    Value(Lin),
    /// `rem(form, len(buffer))`, `buffer` a Program buffer.
    Wrap(Lin, String),
}

/// `big >= small + gap` (as integers): a thread only takes an alternative where it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// The larger side.
    pub big: Lin,
    /// The smaller side.
    pub small: Lin,
    /// How much larger at least.
    pub gap: i64,
}

/// One alternative of an index: its value and the guards of the threads that take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alt {
    /// The value.
    pub value: Piece,
    /// Every guard holds for a thread that takes this value.
    pub when: Vec<Guard>,
}

/// The alternatives of an index, and the statement that introduced them (the `let` of the
/// `select`/`min`/`max`/`rem`, or the access itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AltSet {
    /// Every value the index may take (at least one).
    pub alts: Vec<Alt>,
    /// The statement that made the index more than one affine form, when one did.
    pub node: Option<NodeId>,
}

impl AltSet {
    fn one(lin: Lin) -> AltSet {
        AltSet {
            alts: vec![Alt {
                value: Piece::Value(lin),
                when: Vec::new(),
            }],
            node: None,
        }
    }

    /// True when it says more than one plain form (worth keeping for a variable).
    pub fn is_rich(&self) -> bool {
        self.alts.len() > 1
            || self
                .alts
                .iter()
                .any(|a| matches!(&a.value, Piece::Wrap(..)) || !a.when.is_empty())
    }

    fn single_value(&self) -> Option<&Lin> {
        match self.alts.as_slice() {
            [Alt {
                value: Piece::Value(l),
                when,
            }] if when.is_empty() => Some(l),
            _ => None,
        }
    }

    /// Every pair of alternatives of `self` and `o` through `f` (guards of both kept).
    fn cross(
        &self,
        o: &AltSet,
        f: impl Fn(&Piece, &Piece) -> Option<Vec<(Piece, Option<Guard>)>>,
    ) -> Option<AltSet> {
        let mut alts = Vec::new();
        for a in &self.alts {
            for b in &o.alts {
                for (value, g) in f(&a.value, &b.value)? {
                    let mut when: Vec<Guard> = a.when.iter().chain(&b.when).cloned().collect();
                    when.extend(g);
                    when.truncate(MAX_GUARDS);
                    alts.push(Alt { value, when });
                    if alts.len() > MAX_ALTS {
                        return None;
                    }
                }
            }
        }
        Some(AltSet {
            alts,
            node: self.node.clone().or_else(|| o.node.clone()),
        })
    }

    fn map(&self, f: impl Fn(&Lin) -> Option<Lin>) -> Option<AltSet> {
        let alts = self
            .alts
            .iter()
            .map(|a| match &a.value {
                Piece::Value(l) => Some(Alt {
                    value: Piece::Value(f(l)?),
                    when: a.when.clone(),
                }),
                Piece::Wrap(..) => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(AltSet {
            alts,
            node: self.node.clone(),
        })
    }

    fn with_guard(mut self, g: &[Guard]) -> AltSet {
        for a in &mut self.alts {
            a.when.extend(g.iter().cloned());
            a.when.truncate(MAX_GUARDS);
        }
        self
    }
}

impl Walker<'_> {
    /// The alternatives of `e` (exact walk only); `None` when it is not built from known
    /// forms, lengths, `select`, `min`, `max`, `rem` by a length and `+ - *` by constants.
    pub(super) fn alts(&self, e: &Expr) -> Option<AltSet> {
        // An operand the path facts rule out is no alternative.
        if let Some(chosen) = self.chosen(e) {
            return self.alts(chosen);
        }
        match e {
            Expr::Lit(_) | Expr::Builtin(_) => self.eval(e).known_parts().map(|p| {
                AltSet::one(Lin {
                    parts: p,
                    len: None,
                })
            }),
            Expr::Var(v) => self.lookup_alts(v),
            Expr::Len(b) => Some(AltSet::one(Lin {
                parts: ([0; IDS], [0; 3], 0, 0, 0),
                len: Some((b.clone(), 1)),
            })),
            Expr::Cast(t, a) | Expr::Bitcast(t, a) => {
                matches!(t, ScalarType::U32 | ScalarType::I32)
                    .then(|| self.alts(a))
                    .flatten()
            }
            Expr::Unary(crate::ir::UnOp::Neg, a) => self.alts(a)?.map(|l| l.scale(-1)),
            Expr::Select(c, a, b) => {
                let (t, f) = self.guards(c);
                let (a, b) = (self.alts(a)?, self.alts(b)?);
                let node = a.node.clone().or_else(|| b.node.clone());
                let mut alts = a.with_guard(&t).alts;
                alts.extend(b.with_guard(&f).alts);
                (alts.len() <= MAX_ALTS).then_some(AltSet { alts, node })
            }
            Expr::Binary(op, a, b) => {
                let (x, y) = (self.alts(a)?, self.alts(b)?);
                match op {
                    BinOp::Add | BinOp::Sub => {
                        let sign = if *op == BinOp::Add { 1 } else { -1 };
                        x.cross(&y, |p, q| match (p, q) {
                            (Piece::Value(p), Piece::Value(q)) => {
                                Some(vec![(Piece::Value(p.add(q, sign)?), None)])
                            }
                            _ => None,
                        })
                    }
                    BinOp::Mul => match (x.single_value(), y.single_value()) {
                        (_, Some(k)) if k.constant().is_some() => {
                            let k = k.constant()?;
                            x.map(|l| l.scale(k))
                        }
                        (Some(k), _) if k.constant().is_some() => {
                            let k = k.constant()?;
                            y.map(|l| l.scale(k))
                        }
                        _ => None,
                    },
                    BinOp::Min | BinOp::Max => {
                        let min = *op == BinOp::Min;
                        x.cross(&y, |p, q| {
                            let (Piece::Value(l), Piece::Value(r)) = (p, q) else {
                                return Some(vec![(p.clone(), None), (q.clone(), None)]);
                            };
                            // min takes the left when it is not larger, max when not smaller.
                            let (left, right) = if min {
                                ((r.clone(), l.clone()), (l.clone(), r.clone()))
                            } else {
                                ((l.clone(), r.clone()), (r.clone(), l.clone()))
                            };
                            let guard = |(big, small): (Lin, Lin)| Guard { big, small, gap: 0 };
                            Some(vec![
                                (p.clone(), Some(guard(left))),
                                (q.clone(), Some(guard(right))),
                            ])
                        })
                    }
                    BinOp::Rem => {
                        let m = y.single_value()?;
                        let (parts, Some((buf, 1))) = (m.parts, &m.len) else {
                            return None;
                        };
                        if parts != ([0; IDS], [0; 3], 0, 0, 0) {
                            return None;
                        }
                        let alts = x
                            .alts
                            .iter()
                            .map(|a| match &a.value {
                                Piece::Value(l) => Some(Alt {
                                    value: Piece::Wrap(l.clone(), buf.clone()),
                                    when: a.when.clone(),
                                }),
                                Piece::Wrap(..) => None,
                            })
                            .collect::<Option<Vec<_>>>()?;
                        Some(AltSet { alts, node: x.node })
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The guards of `c` being true and being false (empty when `c` is not a comparison of
    /// two plain forms).
    fn guards(&self, c: &Expr) -> (Vec<Guard>, Vec<Guard>) {
        let Expr::Binary(op, a, b) = c else {
            return (Vec::new(), Vec::new());
        };
        let pair = self
            .alts(a)
            .and_then(|x| x.single_value().cloned())
            .zip(self.alts(b).and_then(|y| y.single_value().cloned()));
        let Some((x, y)) = pair else {
            return (Vec::new(), Vec::new());
        };
        let g = |big: &Lin, small: &Lin, gap| {
            vec![Guard {
                big: big.clone(),
                small: small.clone(),
                gap,
            }]
        };
        match op {
            // x < y: true when y >= x + 1, false when x >= y.
            BinOp::Lt => (g(&y, &x, 1), g(&x, &y, 0)),
            BinOp::Le => (g(&y, &x, 0), g(&x, &y, 1)),
            BinOp::Gt => (g(&x, &y, 1), g(&y, &x, 0)),
            BinOp::Ge => (g(&x, &y, 0), g(&y, &x, 1)),
            _ => (Vec::new(), Vec::new()),
        }
    }
}
