//! Soundness property of the dependence typing: random index expressions over gid/lid/wgid
//! (with wrapping arithmetic, `rem` and masks), every claim checked by brute force over the
//! launched threads. `invocation` must mean every element is touched by one thread at most
//! (over both steps), `workgroup` that it is touched by one workgroup at most.

use std::collections::HashMap;

use super::*;
use crate::inputs::prng::SplitMix64;
use crate::megakernel::test_support::{pipeline, program, shape};

#[derive(Debug, Clone)]
enum E {
    Gid,
    Lid,
    Wgid,
    C(u32),
    Add(Box<E>, Box<E>),
    Sub(Box<E>, Box<E>),
    MulC(Box<E>, u32),
    Rem(Box<E>, u32),
    And(Box<E>, u32),
}

struct Gen {
    rng: SplitMix64,
    w: u32,
}

impl Gen {
    fn below(&mut self, n: u64) -> u64 {
        self.rng.next_u64() % n
    }

    fn small(&mut self) -> u32 {
        // Constants near the tile size, where the edge cases are.
        let w = self.w;
        [0, 1, 2, w - 1, w, w + 1, 2 * w, 3][self.below(8) as usize]
    }

    fn expr(&mut self, depth: u32) -> E {
        if depth == 0 || self.below(3) == 0 {
            return match self.below(5) {
                0 | 1 => E::Gid,
                2 => E::Lid,
                3 => E::Wgid,
                _ => E::C(self.small()),
            };
        }
        let a = Box::new(self.expr(depth - 1));
        match self.below(6) {
            0 => E::Add(a, Box::new(self.expr(depth - 1))),
            1 => E::Sub(a, Box::new(self.expr(depth - 1))),
            2 => {
                let k = self.small();
                E::MulC(a, k)
            }
            3 => E::Rem(a, self.small().max(1)),
            4 => E::And(a, self.small()),
            _ => {
                // The tiled form the proofs are about.
                let w = self.w;
                E::Add(Box::new(E::MulC(Box::new(E::Wgid), w)), a)
            }
        }
    }
}

/// A dependence claim against the invocations (`(workgroup, invocation)`) that touched each
/// shared element: `invocation` means one invocation per element, `workgroup` one workgroup.
fn check_claim(kind: DepKind, touched: &HashMap<u32, Vec<(u32, u32)>>, case: &dyn Fn() -> String) {
    match kind {
        DepKind::Invocation => {
            assert!(touched.values().all(|t| t.len() == 1), "{}", case());
        }
        DepKind::Workgroup => {
            assert!(
                touched.values().all(|t| t.iter().all(|x| x.0 == t[0].0)),
                "{}",
                case()
            );
        }
        DepKind::Grid => {}
        DepKind::None => panic!("a shared written buffer typed none: {}", case()),
    }
}

fn json(e: &E) -> String {
    match e {
        E::Gid => r#"{"gid": "x"}"#.into(),
        E::Lid => r#"{"lid": "x"}"#.into(),
        E::Wgid => r#"{"wgid": "x"}"#.into(),
        E::C(c) => c.to_string(),
        E::Add(a, b) => format!(r#"{{"add": [{}, {}]}}"#, json(a), json(b)),
        E::Sub(a, b) => format!(r#"{{"sub": [{}, {}]}}"#, json(a), json(b)),
        E::MulC(a, k) => format!(r#"{{"mul": [{}, {k}]}}"#, json(a)),
        E::Rem(a, k) => format!(r#"{{"rem": [{}, {k}]}}"#, json(a)),
        E::And(a, k) => format!(r#"{{"and": [{}, {k}]}}"#, json(a)),
    }
}

/// The u32 value the kernel computes for thread (`wgid`, `lid`) of workgroups of `w`.
fn eval(e: &E, w: u32, wgid: u32, lid: u32) -> u32 {
    let f = |x: &E| eval(x, w, wgid, lid);
    match e {
        E::Gid => wgid * w + lid,
        E::Lid => lid,
        E::Wgid => wgid,
        E::C(c) => *c,
        E::Add(a, b) => f(a).wrapping_add(f(b)),
        E::Sub(a, b) => f(a).wrapping_sub(f(b)),
        E::MulC(a, k) => f(a).wrapping_mul(*k),
        E::Rem(a, k) => f(a) % k,
        E::And(a, k) => f(a) & k,
    }
}

#[test]
fn every_claim_holds_by_brute_force() {
    let mut claims: HashMap<DepKind, usize> = HashMap::new();
    for seed in 0..3000u64 {
        let mut rng = SplitMix64::new(seed);
        let w = [4u32, 8, 16][(rng.next_u64() % 3) as usize];
        let groups = 1 + (rng.next_u64() % 4) as u32;
        let mut g = Gen { rng, w };
        let fa = g.expr(3);
        // Often the same index in both steps, the invocation case.
        let fb = if g.below(3) == 0 {
            fa.clone()
        } else {
            g.expr(3)
        };
        let a = program(
            "a",
            [w, 1, 1],
            &[("src", "read"), ("dst", "read_write")],
            &format!(
                r#"[{{"store": "dst", "index": {}, "value": 1}}]"#,
                json(&fa)
            ),
        );
        let b = program(
            "b",
            [w, 1, 1],
            &[("src", "read"), ("dst", "read_write")],
            &format!(
                r#"[{{"store": "dst", "index": {{"gid": "x"}}, "value": {{"load": "src", "index": {}}}}}]"#,
                json(&fb)
            ),
        );
        let p = pipeline(vec![
            (a, &[("src", "x"), ("dst", "y")]),
            (b, &[("src", "y"), ("dst", "z")]),
        ]);
        let s = shape([w, 1, 1], [groups, 1, 1]);
        let d = analyse(&p, &[s, s]).unwrap().get(0, 1).unwrap().clone();
        *claims.entry(d.kind).or_default() += 1;
        // Element -> the threads (workgroup, lane in it) touching it in either step.
        let mut touched: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
        for wg in 0..groups {
            for l in 0..w {
                for f in [&fa, &fb] {
                    let t = touched.entry(eval(f, w, wg, l)).or_default();
                    if !t.contains(&(wg, l)) {
                        t.push((wg, l));
                    }
                }
            }
        }
        let case = || {
            format!(
                "seed {seed}: w {w} groups {groups}\nA {}\nB {}\n{d:?}",
                json(&fa),
                json(&fb)
            )
        };
        check_claim(d.kind, &touched, &case);
    }
    // The property only means something if the proofs fire.
    for k in [DepKind::Invocation, DepKind::Workgroup, DepKind::Grid] {
        assert!(claims.get(&k).copied().unwrap_or(0) > 100, "{claims:?}");
    }
}

/// How a generated step leaves early: `if gid.x >= K { return }` somewhere.
#[derive(Debug, Clone, Copy)]
enum Exit {
    None,
    /// At the top: `!(gid.x >= K)` holds for the rest of the Program.
    Top,
    /// `if gid.x < K {} else { return }`: the same, through the else branch.
    Else,
    /// Inside a two-iteration loop: a real exit, but no fact after the loop.
    InLoop,
    /// Only for the threads with `lid.x < c`: no fact after the `if`.
    Under(u32),
    /// `let n = K; if gid.x >= n { return }; n = n + d`, the clamp on `n`: the fact on `n`
    /// stops holding at the assignment (for `d > 0` it really is wrong).
    Assigned(u32),
}

/// The bound `K` of an exit or a clamp: a buffer's length or a constant.
#[derive(Debug, Clone, Copy)]
enum Bound {
    Len(&'static str),
    C(u32),
}

/// The index the shared buffer is accessed at, from `index`.
#[derive(Debug, Clone, Copy)]
enum Clamp {
    Raw,
    /// `select(index < K, index, c)` (`K` the exit's `n` for [`Exit::Assigned`]).
    Select(Bound, u32),
    /// `min(index, len(B) - 1)`
    Min(&'static str),
}

/// One generated step: its exit, its bound, `let index = E` and the clamp of its access.
#[derive(Debug, Clone)]
struct Guarded {
    exit: Exit,
    bound: Bound,
    index: E,
    clamp: Clamp,
}

impl Gen {
    fn bound(&mut self, c: u32) -> Bound {
        match self.below(3) {
            0 => Bound::Len("src"),
            1 => Bound::Len("dst"),
            _ => Bound::C(c),
        }
    }

    fn guarded(&mut self, index: E, total: u32) -> Guarded {
        let near = total.saturating_sub(self.below(3) as u32 * self.w / 2);
        let exit = match self.below(7) {
            0 => Exit::None,
            1 | 2 => Exit::Top,
            3 => Exit::Else,
            4 => Exit::InLoop,
            5 => Exit::Under(self.small()),
            _ => Exit::Assigned(self.below(2) as u32),
        };
        let bound = self.bound(near);
        let c = self.small();
        let clamp = match self.below(5) {
            0 => Clamp::Raw,
            1 => Clamp::Min(["src", "dst"][self.below(2) as usize]),
            _ => {
                let k = self.bound(near);
                Clamp::Select(k, c)
            }
        };
        Guarded {
            exit,
            bound,
            index,
            clamp,
        }
    }
}

fn bound_json(b: Bound) -> String {
    match b {
        Bound::Len(buf) => format!(r#"{{"len": "{buf}"}}"#),
        Bound::C(c) => c.to_string(),
    }
}

impl Guarded {
    /// The statements before the access, and the access's index.
    fn json(&self) -> (String, String) {
        let k = bound_json(self.bound);
        let ret = r#"{"return": {}}"#;
        let top =
            |k: &str| format!(r#"{{"if": {{"ge": [{{"gid": "x"}}, {k}]}}, "then": [{ret}]}}"#);
        let mut pre = match self.exit {
            Exit::None => Vec::new(),
            Exit::Top => vec![top(&k)],
            Exit::Else => vec![format!(
                r#"{{"if": {{"lt": [{{"gid": "x"}}, {k}]}}, "then": [], "else": [{ret}]}}"#
            )],
            Exit::InLoop => vec![format!(
                r#"{{"loop": "k", "from": 0, "to": 2, "body": [{}]}}"#,
                top(&k)
            )],
            Exit::Under(c) => vec![format!(
                r#"{{"if": {{"lt": [{{"lid": "x"}}, {c}]}}, "then": [{}]}}"#,
                top(&k)
            )],
            Exit::Assigned(d) => vec![
                format!(r#"{{"let": "n", "value": {k}}}"#),
                top(r#""n""#),
                format!(r#"{{"assign": "n", "value": {{"add": ["n", {d}]}}}}"#),
            ],
        };
        pre.push(format!(
            r#"{{"let": "index", "value": {}}}"#,
            json(&self.index)
        ));
        let index = match (self.clamp, self.exit) {
            (Clamp::Raw, _) => r#""index""#.to_string(),
            (Clamp::Select(_, c), Exit::Assigned(_)) => {
                format!(r#"{{"select": [{{"lt": ["index", "n"]}}, "index", {c}]}}"#)
            }
            (Clamp::Select(b, c), _) => format!(
                r#"{{"select": [{{"lt": ["index", {}]}}, "index", {c}]}}"#,
                bound_json(b)
            ),
            (Clamp::Min(buf), _) => {
                format!(r#"{{"min": ["index", {{"sub": [{{"len": "{buf}"}}, 1]}}]}}"#)
            }
        };
        (pre.join(", "), index)
    }

    /// The element of the shared buffer thread `lid` of workgroup `wg` touches (`None` when
    /// it returned first), `len` the lengths of the step's `src` and `dst`.
    fn touches(&self, w: u32, wg: u32, lid: u32, len: &dyn Fn(&str) -> u32) -> Option<u32> {
        let gid = wg * w + lid;
        let k = |b: Bound| match b {
            Bound::Len(buf) => len(buf),
            Bound::C(c) => c,
        };
        let exits = gid >= k(self.bound);
        let returned = match self.exit {
            Exit::None => false,
            Exit::Top | Exit::Else | Exit::InLoop | Exit::Assigned(_) => exits,
            Exit::Under(c) => lid < c && exits,
        };
        if returned {
            return None;
        }
        let i = eval(&self.index, w, wg, lid);
        Some(match (self.clamp, self.exit) {
            (Clamp::Raw, _) => i,
            (Clamp::Select(_, c), Exit::Assigned(d)) => {
                if i < k(self.bound).wrapping_add(d) {
                    i
                } else {
                    c
                }
            }
            (Clamp::Select(b, c), _) => {
                if i < k(b) {
                    i
                } else {
                    c
                }
            }
            (Clamp::Min(buf), _) => i.min(len(buf).wrapping_sub(1)),
        })
    }
}

/// Generated steps that leave early and clamp their accesses as vyre's do: a producer writing
/// `y` and a consumer reading it, buffers of random lengths around the launch. Every claim
/// is checked by brute force over the threads that really reach the access (out-of-bounds
/// elements are touched by nobody: loads give 0 and stores are dropped): `invocation` means
/// one thread per element, `workgroup` one workgroup, and the producer set of the tile
/// analysis holds every producer workgroup that wrote an element a consumer workgroup read.
#[test]
fn early_exits_and_clamps_hold_by_brute_force() {
    use crate::ir::{Fill, InputSource, InputSpec, PipelineBuffer};
    use crate::megakernel::tiles::tile_dep;
    let mut claims: HashMap<DepKind, usize> = HashMap::new();
    let mut clamped_invocations = 0;
    for seed in 0..3000u64 {
        let mut rng = SplitMix64::new(seed ^ 0x5eed_9a4d);
        let w = [4u32, 8, 16][(rng.next_u64() % 3) as usize];
        let groups = 1 + (rng.next_u64() % 4) as u32;
        let mut g = Gen { rng, w };
        let total = w * groups;
        // Lengths of x, y, z: the launch, or a little shorter or longer.
        let mut lens = [0u32; 3];
        for l in &mut lens {
            *l = match g.below(4) {
                0 | 1 => total,
                2 => total
                    .saturating_sub(1 + g.below(u64::from(w)) as u32)
                    .max(1),
                _ => total + 1 + g.below(u64::from(w)) as u32,
            };
        }
        // Mostly gid.x, vyre's index; sometimes any generated one.
        let ia = if g.below(2) == 0 { E::Gid } else { g.expr(2) };
        let ib = if g.below(3) > 0 {
            ia.clone()
        } else {
            g.expr(2)
        };
        let (a, b) = (g.guarded(ia, total), g.guarded(ib, total));
        let (pre_a, idx_a) = a.json();
        let (pre_b, idx_b) = b.json();
        let bufs = [("src", "read"), ("dst", "read_write")];
        let pa = program(
            "a",
            [w, 1, 1],
            &bufs,
            &format!(r#"[{pre_a}, {{"store": "dst", "index": {idx_a}, "value": 1}}]"#),
        );
        let pb = program(
            "b",
            [w, 1, 1],
            &bufs,
            &format!(
                r#"[{pre_b}, {{"store": "dst", "index": {{"gid": "x"}}, "value": {{"load": "src", "index": {idx_b}}}}}]"#
            ),
        );
        let mut p = pipeline(vec![
            (pa, &[("src", "x"), ("dst", "y")]),
            (pb, &[("src", "y"), ("dst", "z")]),
        ]);
        p.buffers = ["x", "y", "z"]
            .iter()
            .zip(lens)
            .map(|(n, len)| PipelineBuffer {
                name: n.to_string(),
                elem: crate::ir::ElemType::U32,
                contents: InputSpec {
                    len: Some(u64::from(len)),
                    source: InputSource::Fill(Fill::Zeros),
                },
                transient: false,
            })
            .collect();
        let [lx, ly, lz] = lens;
        let len_a = |b: &str| if b == "src" { lx } else { ly };
        let len_b = |b: &str| if b == "src" { ly } else { lz };
        let s = shape([w, 1, 1], [groups, 1, 1]);
        let d = analyse(&p, &[s, s]).unwrap().get(0, 1).unwrap().clone();
        let t = tile_dep(&p, &[s, s], 0, 1).unwrap();
        *claims.entry(d.kind).or_default() += 1;
        // Element of y -> the threads (workgroup, lane) touching it; producer workgroups of
        // each element, consumer elements of each workgroup.
        let mut touched: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
        let mut writers: HashMap<u32, Vec<u64>> = HashMap::new();
        let mut reads: Vec<Vec<u32>> = vec![Vec::new(); groups as usize];
        for wg in 0..groups {
            for l in 0..w {
                let ea = a.touches(w, wg, l, &len_a).filter(|e| *e < ly);
                let eb = b.touches(w, wg, l, &len_b).filter(|e| *e < ly);
                if let Some(e) = ea {
                    writers.entry(e).or_default().push(u64::from(wg));
                }
                if let Some(e) = eb {
                    reads[wg as usize].push(e);
                }
                for e in ea.into_iter().chain(eb) {
                    let t = touched.entry(e).or_default();
                    if !t.contains(&(wg, l)) {
                        t.push((wg, l));
                    }
                }
            }
        }
        let case = || {
            format!(
                "seed {seed}: w {w} groups {groups} lens {lens:?}\nA {pre_a} | {idx_a}\nB {pre_b} | {idx_b}\n{d:?}\n{t:?}"
            )
        };
        check_claim(d.kind, &touched, &case);
        let clamped = !matches!(a.clamp, Clamp::Raw) || !matches!(b.clamp, Clamp::Raw);
        if d.kind == DepKind::Invocation && clamped {
            clamped_invocations += 1;
        }
        for (q, es) in reads.iter().enumerate() {
            let have = t.producers.ranges(q as u64, u64::from(groups));
            for p in es.iter().flat_map(|e| writers.get(e).into_iter().flatten()) {
                assert!(
                    have.iter().any(|r| r.contains(p)),
                    "consumer {q} reads what producer {p} wrote, set {}: {}",
                    t.producers.describe(),
                    case()
                );
            }
        }
    }
    // The property only means something if the facts make clamped accesses one form.
    assert!(
        clamped_invocations > 100,
        "{clamped_invocations} {claims:?}"
    );
    for k in [DepKind::Invocation, DepKind::Grid] {
        assert!(claims.get(&k).copied().unwrap_or(0) > 100, "{claims:?}");
    }
}
