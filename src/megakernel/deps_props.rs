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
        match d.kind {
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
    // The property only means something if the proofs fire.
    for k in [DepKind::Invocation, DepKind::Workgroup, DepKind::Grid] {
        assert!(claims.get(&k).copied().unwrap_or(0) > 100, "{claims:?}");
    }
}
