//! Soundness of window+boundary producer sets, by brute force: clamped (`select`, `min`,
//! `max`, clamp nests) and periodic (`rem` by a length) neighbour indices over small random
//! shapes, offsets and lengths. Every producer workgroup that touches an element a consumer
//! workgroup touches (one of the two writing) must be in the producer set, and a consumer
//! that reads through such an index never gets `all`.

use proptest::prelude::*;

use super::super::{tile_dep, ProducerSet, SyncLabel};
use crate::ir::{ElemType, Fill, InputSource, InputSpec, Pipeline, PipelineBuffer};
use crate::megakernel::test_support::{copy, shape};

/// A clamped or wrapped index over `gid` (u32 arithmetic, `n` the buffer length).
#[derive(Debug, Clone, Copy)]
enum F {
    /// `select(gid > c, gid - a, k)`
    SelectLow { c: u32, a: u32, k: u32 },
    /// `select(gid + a < len, gid + a, gid)`
    SelectHigh { a: u32 },
    /// `min(gid + a, len - 1 - d)`
    Min { a: u32, d: u32 },
    /// `max(gid, k) - a`
    Max { k: u32, a: u32 },
    /// `min(max(gid + a - b, 0), len - 1)`, a clamp nest
    Clamp { a: u32, b: u32 },
    /// `rem(gid + a, len)`
    Wrap { a: u32 },
    /// `rem(gid + len - a, len)`
    WrapBack { a: u32 },
}

const GID: &str = r#"{"gid": "x"}"#;
const LEN: &str = r#"{"len": "src"}"#;

impl F {
    fn json(self) -> String {
        let add = |a: &str, b: &str| format!(r#"{{"add": [{a}, {b}]}}"#);
        let sub = |a: &str, b: &str| format!(r#"{{"sub": [{a}, {b}]}}"#);
        match self {
            F::SelectLow { c, a, k } => format!(
                r#"{{"select": [{{"gt": [{GID}, {c}]}}, {}, {k}]}}"#,
                sub(GID, &a.to_string())
            ),
            F::SelectHigh { a } => {
                let up = add(GID, &a.to_string());
                format!(r#"{{"select": [{{"lt": [{up}, {LEN}]}}, {up}, {GID}]}}"#)
            }
            F::Min { a, d } => format!(
                r#"{{"min": [{}, {}]}}"#,
                add(GID, &a.to_string()),
                sub(LEN, &(1 + d).to_string())
            ),
            F::Max { k, a } => sub(&format!(r#"{{"max": [{GID}, {k}]}}"#), &a.to_string()),
            F::Clamp { a, b } => {
                let x = sub(&add(GID, &a.to_string()), &b.to_string());
                format!(r#"{{"min": [{{"max": [{x}, 0]}}, {}]}}"#, sub(LEN, "1"))
            }
            F::Wrap { a } => format!(r#"{{"rem": [{}, {LEN}]}}"#, add(GID, &a.to_string())),
            F::WrapBack { a } => format!(
                r#"{{"rem": [{}, {LEN}]}}"#,
                sub(&add(GID, LEN), &a.to_string())
            ),
        }
    }

    /// The element thread `g` touches (u32 semantics, as the interpreter computes it).
    fn eval(self, g: u32, n: u32) -> u32 {
        match self {
            F::SelectLow { c, a, k } => {
                if g > c {
                    g.wrapping_sub(a)
                } else {
                    k
                }
            }
            F::SelectHigh { a } => {
                let up = g.wrapping_add(a);
                if up < n {
                    up
                } else {
                    g
                }
            }
            F::Min { a, d } => g.wrapping_add(a).min(n.wrapping_sub(1 + d)),
            F::Max { k, a } => g.max(k).wrapping_sub(a),
            // `max(x, 0)` of a u32 is `x`: the lower clamp only matters for signed indices.
            F::Clamp { a, b } => g.wrapping_add(a).wrapping_sub(b).min(n.wrapping_sub(1)),
            F::Wrap { a } => g.wrapping_add(a) % n,
            F::WrapBack { a } => g.wrapping_add(n).wrapping_sub(a) % n,
        }
    }
}

fn form() -> impl Strategy<Value = F> {
    prop_oneof![
        (0u32..4, 0u32..4, 0u32..6).prop_map(|(c, a, k)| F::SelectLow { c, a, k }),
        (0u32..4).prop_map(|a| F::SelectHigh { a }),
        (0u32..4, 0u32..3).prop_map(|(a, d)| F::Min { a, d }),
        (0u32..4, 0u32..4).prop_map(|(k, a)| F::Max { k, a: a.min(k) }),
        (0u32..4, 0u32..4).prop_map(|(a, b)| F::Clamp { a, b }),
        (0u32..4).prop_map(|a| F::Wrap { a }),
        (1u32..4).prop_map(|a| F::WrapBack { a }),
    ]
}

/// A pipeline over u32 buffers `x y z` of `n` elements.
fn pipeline(n: u64, steps: Vec<(crate::ir::Program, &[(&str, &str)])>) -> Pipeline {
    let mut p = crate::megakernel::test_support::pipeline(steps);
    p.buffers = ["x", "y", "z"]
        .iter()
        .map(|b| PipelineBuffer {
            name: b.to_string(),
            elem: ElemType::U32,
            contents: InputSpec {
                len: Some(n),
                source: InputSource::Fill(Fill::Zeros),
            },
            transient: false,
        })
        .collect();
    p
}

/// Producer workgroups of each consumer workgroup, by brute force: `pe(t)`/`ce(t)` the
/// element thread `t` of the producer/consumer touches.
fn brute(
    w: u32,
    g: u32,
    n: u32,
    pe: impl Fn(u32) -> u32,
    ce: impl Fn(u32) -> u32,
) -> Vec<Vec<u64>> {
    // Per element, the producer workgroups touching it (out-of-bounds elements: nothing).
    let mut by_elem: Vec<Vec<u64>> = vec![Vec::new(); n as usize];
    for t in 0..w * g {
        let e = pe(t);
        if e < n && !by_elem[e as usize].contains(&u64::from(t / w)) {
            by_elem[e as usize].push(u64::from(t / w));
        }
    }
    (0..g)
        .map(|q| {
            let mut ps: Vec<u64> = (q * w..(q + 1) * w)
                .map(&ce)
                .filter(|e| *e < n)
                .flat_map(|e| by_elem[e as usize].clone())
                .collect();
            ps.sort_unstable();
            ps.dedup();
            ps
        })
        .collect()
}

fn check(set: ProducerSet, truth: &[Vec<u64>], g: u64) -> Result<(), TestCaseError> {
    for (q, ps) in truth.iter().enumerate() {
        let have = set.ranges(q as u64, g);
        for p in ps {
            prop_assert!(
                have.iter().any(|r| r.contains(p)),
                "consumer {q} needs producer {p}, set {} gives {have:?}",
                set.describe()
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// A consumer reading through the index after a producer writing `gid` (read after
    /// write): sound, and never all of the producers.
    #[test]
    fn clamped_and_wrapped_reads_wait_for_a_window_plus_boundary(
        f in form(),
        w in prop_oneof![Just(4u32), Just(8), Just(32)],
        g in 1u32..12,
        short in 0u32..32,
    ) {
        // A launch that covers the buffer, as `elements` launches do: grid = ceil(n / w).
        let n = (w * g).saturating_sub(short % w).max(1);
        let wg = [w, 1, 1];
        let p = pipeline(u64::from(n), vec![
            (copy("a", wg, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", wg, &f.json(), GID), &[("src", "y"), ("dst", "z")]),
        ]);
        let s = shape(wg, [g, 1, 1]);
        let d = tile_dep(&p, &[s, s], 0, 1).expect("tile dependence");
        check(d.producers, &brute(w, g, n, |t| t, |t| f.eval(t, n)), u64::from(g))?;
        // `rem(gid + n - a, n)` with `a > n` wraps below 0 at 2^32: really unknown.
        let wraps_below = matches!(f, F::WrapBack { a } if a > n);
        if !wraps_below {
            prop_assert!(d.producers != ProducerSet::All, "{f:?}: {}", d.reason);
        }
    }

    /// The producer reads through the index and the consumer overwrites `gid` (write after
    /// read): sound whatever the guards say.
    #[test]
    fn writes_after_clamped_and_wrapped_reads_are_separated(
        f in form(),
        w in prop_oneof![Just(4u32), Just(8), Just(32)],
        g in 1u32..12,
        short in 0u32..32,
    ) {
        let n = (w * g).saturating_sub(short % w).max(1);
        let wg = [w, 1, 1];
        let p = pipeline(u64::from(n), vec![
            (copy("a", wg, &f.json(), GID), &[("src", "y"), ("dst", "x")]),
            (copy("b", wg, GID, GID), &[("src", "z"), ("dst", "y")]),
        ]);
        let s = shape(wg, [g, 1, 1]);
        let d = tile_dep(&p, &[s, s], 0, 1).expect("tile dependence");
        check(d.producers, &brute(w, g, n, |t| f.eval(t, n), |t| t), u64::from(g))?;
    }
}

/// The clamped 3-point stencil of the fixtures (`select(i > 0, i - 1, 0)` and
/// `select(i + 1 < n, i + 1, i)`) over 79 workgroups, both ways round: a window plus
/// workgroup 0 (the clamped left edge), labelled `window+boundary`, with the `let` that
/// made the boundary.
#[test]
fn clamped_stencil_is_window_plus_first_workgroup() {
    let wg = [256, 1, 1];
    let n = 20_000;
    let body = r#"[
        {"let": "i", "value": {"gid": "x"}},
        {"let": "l", "value": {"select": [{"gt": ["i", 0]}, {"sub": ["i", 1]}, 0]}},
        {"let": "r", "value": {"select": [{"lt": [{"add": ["i", 1]}, {"len": "src"}]}, {"add": ["i", 1]}, "i"]}},
        {"store": "dst", "index": "i", "value": {"add": [{"load": "src", "index": "l"}, {"load": "src", "index": "r"}]}}]"#;
    let blur = crate::megakernel::test_support::program(
        "blur",
        wg,
        &[("src", "read"), ("dst", "read_write")],
        body,
    );
    let s = shape(wg, [79, 1, 1]);
    let raw = tile_dep(
        &pipeline(
            n,
            vec![
                (copy("a", wg, GID, GID), &[("src", "x"), ("dst", "y")]),
                (blur.clone(), &[("src", "y"), ("dst", "z")]),
            ],
        ),
        &[s, s],
        0,
        1,
    )
    .expect("tile dependence");
    let want = ProducerSet::WindowBoundary {
        lo: -1,
        hi: 1,
        edges: [Some([0, 0]), None],
    };
    assert_eq!(raw.producers, want, "{}", raw.reason);
    assert_eq!(raw.label, SyncLabel::WindowBoundary);
    assert_eq!(raw.label.name(), "window+boundary");
    assert_eq!(raw.node.as_deref(), Some("steps[1].body[1]"));
    assert_eq!(raw.producers.describe(), "w-1..w+1 + 0");
    // Write after read: the reader's left edge is taken by workgroup 0 only (its guard).
    let war = tile_dep(
        &pipeline(
            n,
            vec![
                (blur, &[("src", "y"), ("dst", "z")]),
                (copy("b", wg, GID, GID), &[("src", "x"), ("dst", "y")]),
            ],
        ),
        &[s, s],
        0,
        1,
    )
    .expect("tile dependence");
    assert_eq!(war.producers, want, "{}", war.reason);
}

/// A periodic neighbour read `rem(i + 1, len)` over a grid that covers the buffer exactly:
/// the window and the wrap-around workgroup 0.
#[test]
fn periodic_read_is_window_plus_wrap_around() {
    let wg = [256, 1, 1];
    let f = F::Wrap { a: 1 };
    let p = pipeline(
        256 * 16,
        vec![
            (copy("a", wg, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", wg, &f.json(), GID), &[("src", "y"), ("dst", "z")]),
        ],
    );
    let s = shape(wg, [16, 1, 1]);
    let d = tile_dep(&p, &[s, s], 0, 1).expect("tile dependence");
    assert_eq!(
        d.producers,
        ProducerSet::WindowBoundary {
            lo: 0,
            hi: 1,
            edges: [Some([0, 0]), None],
        },
        "{}",
        d.reason
    );
    assert_eq!(d.label, SyncLabel::WindowBoundary);
}
