//! Every valid fixture, run by the reference interpreter, against values computed here.
//!
//! For each `fixtures/programs/<stem>.json` there is one check below. It loads the Program,
//! builds its inputs with `inputs::prepare` (the documented SplitMix64 fills; the bytes it
//! returns are the only thing taken from the library), runs `interp::run`, and compares every
//! output buffer with values computed from those input bytes by straightforward Rust loops that
//! restate the spec's semantics (`docs/program-format.md`, `docs/semantics.md`). Results the
//! spec makes IEEE-exact are compared bit for bit; NaNs only need to be NaN (payloads and signs
//! of NaNs are not specified); approximate functions (`rsqrt exp exp2 log log2 sin cos tan
//! tanh`) are compared within a few ULP. `every_fixture_has_a_reference_check` fails when a
//! fixture is added without a check here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use vyrescope::inputs::{prepare, HostBuffer, LaunchShape};
use vyrescope::ir::{load_program, Program};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One fixture, run: inputs as prepared and buffers after the interpreter.
struct Run {
    shape: LaunchShape,
    before: Vec<HostBuffer>,
    after: Vec<HostBuffer>,
}

fn run_fixture(stem: &str) -> Run {
    let path = root()
        .join("fixtures/programs")
        .join(format!("{stem}.json"));
    let program: Program = load_program(&path).unwrap_or_else(|e| panic!("{e}"));
    let base = path.parent().unwrap_or(Path::new("."));
    let prepared = prepare(&program, base, None, None).unwrap_or_else(|e| panic!("{stem}: {e}"));
    let before = prepared.buffers.clone();
    let mut after = prepared.buffers;
    vyrescope::interp::run(&program, &prepared.shape, &mut after)
        .unwrap_or_else(|e| panic!("{stem}: {e}"));
    Run {
        shape: prepared.shape,
        before,
        after,
    }
}

fn find<'a>(bufs: &'a [HostBuffer], name: &str) -> &'a HostBuffer {
    bufs.iter()
        .find(|b| b.name == name)
        .unwrap_or_else(|| panic!("no buffer `{name}`"))
}

macro_rules! reader {
    ($name:ident, $t:ty, $n:literal) => {
        fn $name(b: &HostBuffer) -> Vec<$t> {
            assert_eq!(b.elem.size_bytes(), $n, "buffer `{}` element size", b.name);
            b.data
                .chunks_exact($n)
                .map(|c| {
                    let mut a = [0u8; $n];
                    a.copy_from_slice(c);
                    <$t>::from_le_bytes(a)
                })
                .collect()
        }
    };
}
reader!(u8s, u8, 1);
reader!(i8s, i8, 1);
reader!(u16s, u16, 2);
reader!(i16s, i16, 2);
reader!(u32s, u32, 4);
reader!(i32s, i32, 4);
reader!(u64s, u64, 8);
reader!(i64s, i64, 8);
reader!(f32s, f32, 4);
reader!(f64s, f64, 8);

impl Run {
    fn input(&self, name: &str) -> &HostBuffer {
        find(&self.before, name)
    }
    fn output(&self, name: &str) -> &HostBuffer {
        find(&self.after, name)
    }
    fn threads(&self) -> [u32; 3] {
        let (w, g) = (self.shape.workgroup_size, self.shape.grid);
        [w[0] * g[0], w[1] * g[1], w[2] * g[2]]
    }
}

/// Fails with the first few differing indices.
fn assert_same<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<String> = (0..got.len())
        .filter(|&i| got[i] != want[i])
        .take(8)
        .map(|i| format!("[{i}] got {:?} want {:?}", got[i], want[i]))
        .collect();
    assert!(bad.is_empty(), "{what}: mismatches\n  {}", bad.join("\n  "));
}

/// IEEE-exact comparison: bit-equal, or both NaN.
fn same_f32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn assert_f32(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<String> = (0..got.len())
        .filter(|&i| !same_f32(got[i], want[i]))
        .take(8)
        .map(|i| format!("[{i}] got {:?} want {:?}", got[i], want[i]))
        .collect();
    assert!(bad.is_empty(), "{what}: mismatches\n  {}", bad.join("\n  "));
}

fn assert_f64(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<String> = (0..got.len())
        .filter(|&i| {
            got[i].to_bits() != want[i].to_bits() && !(got[i].is_nan() && want[i].is_nan())
        })
        .take(8)
        .map(|i| format!("[{i}] got {:?} want {:?}", got[i], want[i]))
        .collect();
    assert!(bad.is_empty(), "{what}: mismatches\n  {}", bad.join("\n  "));
}

/// Distance in units in the last place between two finite f32 of any sign.
fn ulps(a: f32, b: f32) -> u64 {
    let key = |x: f32| {
        let b = x.to_bits() as i64;
        if b < 0x8000_0000 {
            b
        } else {
            0x8000_0000 - b
        }
    };
    key(a).abs_diff(key(b))
}

/// `f16` bits -> `f32` (exact).
fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let man = (h & 0x3ff) as f32;
    match exp {
        0 => sign * man * 2f32.powi(-24),
        31 if man == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        _ => sign * (1.0 + man / 1024.0) * 2f32.powi(exp - 15),
    }
}

/// floor(log2(x)) of a positive normal f64.
fn exponent(x: f64) -> i32 {
    ((x.to_bits() >> 52) & 0x7ff) as i32 - 1023
}

/// `f32` -> `f16` bits, rounding to nearest even; overflow gives inf, NaN stays NaN.
fn f32_to_f16(v: f32) -> u16 {
    let sign: u16 = if v.is_sign_negative() { 0x8000 } else { 0 };
    if v.is_nan() {
        return 0x7e00;
    }
    let x = (v as f64).abs();
    if x.is_infinite() {
        return sign | 0x7c00;
    }
    if x == 0.0 {
        return sign;
    }
    // Round to a multiple of the f16 quantum at x's binade (subnormal quantum below 2^-14).
    let q = 2f64.powi(exponent(x).max(-14) - 10);
    let r = (x / q).round_ties_even() * q;
    if r >= 65536.0 {
        return sign | 0x7c00;
    }
    if r < 2f64.powi(-14) {
        return sign | (r / 2f64.powi(-24)) as u16;
    }
    let e = exponent(r);
    let man = (r / 2f64.powi(e - 10)) as u16 - 1024;
    sign | (((e + 15) as u16) << 10) | man
}

fn assert_f16(what: &str, got: &[u16], want: &[u16]) {
    let nan = |h: u16| h & 0x7c00 == 0x7c00 && h & 0x3ff != 0;
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<String> = (0..got.len())
        .filter(|&i| got[i] != want[i] && !(nan(got[i]) && nan(want[i])))
        .take(8)
        .map(|i| {
            format!(
                "[{i}] got {:#06x} ({}) want {:#06x} ({})",
                got[i],
                f16_to_f32(got[i]),
                want[i],
                f16_to_f32(want[i])
            )
        })
        .collect();
    assert!(bad.is_empty(), "{what}: mismatches\n  {}", bad.join("\n  "));
}

// ---- the spec's scalar semantics, restated -------------------------------------------------

fn sdiv(a: i32, b: i32) -> i32 {
    if b == 0 {
        0
    } else {
        a.wrapping_div(b)
    }
}
fn srem(a: i32, b: i32) -> i32 {
    if b == 0 {
        0
    } else {
        a.wrapping_rem(b)
    }
}
fn udiv(a: u32, b: u32) -> u32 {
    a.checked_div(b).unwrap_or(0)
}
fn urem(a: u32, b: u32) -> u32 {
    a.checked_rem(b).unwrap_or(0)
}
fn shl32(a: i32, s: u32) -> i32 {
    if s >= 32 {
        0
    } else {
        a << s
    }
}
fn shr_s32(a: i32, s: u32) -> i32 {
    if s >= 32 {
        if a < 0 {
            -1
        } else {
            0
        }
    } else {
        a >> s
    }
}
fn shr_u32(a: u32, s: u32) -> u32 {
    if s >= 32 {
        0
    } else {
        a >> s
    }
}
fn absdiff_i32(a: i32, b: i32) -> i32 {
    if a > b {
        a.wrapping_sub(b)
    } else {
        b.wrapping_sub(a)
    }
}
fn absdiff_i64(a: i64, b: i64) -> i64 {
    if a > b {
        a.wrapping_sub(b)
    } else {
        b.wrapping_sub(a)
    }
}
fn fmin(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}
fn fmax(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b || (a == b && b.is_sign_negative()) {
        a
    } else {
        b
    }
}
fn fsign(a: f32) -> f32 {
    if a.is_nan() || a == 0.0 {
        a
    } else if a > 0.0 {
        1.0
    } else {
        -1.0
    }
}

// ---- one check per fixture -------------------------------------------------------------------

fn check_vadd_f32(r: &Run) {
    let (a, b) = (f32s(r.input("a")), f32s(r.input("b")));
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert!(a.iter().any(|&x| x != 0.0));
    assert_f32("c", &f32s(r.output("c")), &want);
}

fn check_saxpy_f32(r: &Run) {
    let a = f32s(r.input("params"))[0];
    assert_eq!(a, 2.5);
    let (x, y) = (f32s(r.input("x")), f32s(r.input("y")));
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| a * x + y).collect();
    assert_f32("y", &f32s(r.output("y")), &want);
}

fn check_reduce_sum_f32(r: &Run) {
    let x = f32s(r.input("x"));
    let groups = r.shape.grid[0] as usize;
    let mut want = vec![0f32; f32s(r.output("partial")).len()];
    for (g, w) in want.iter_mut().enumerate().take(groups) {
        let mut t: Vec<f32> = (0..256)
            .map(|l| x.get(g * 256 + l).copied().unwrap_or(0.0))
            .collect();
        let mut stride = 128;
        while stride > 0 {
            for l in 0..stride {
                t[l] += t[l + stride];
            }
            stride /= 2;
        }
        *w = t[0];
    }
    assert_f32("partial", &f32s(r.output("partial")), &want);
    // Sanity: the tree sums are close to the plain sum of each block.
    let plain: f64 = x[..256].iter().map(|&v| v as f64).sum();
    assert!((plain - want[0] as f64).abs() < 1e-3);
}

fn check_histogram_u8(r: &Run) {
    let data = u8s(r.input("data"));
    let mut want = vec![0u32; 256];
    for &b in &data {
        want[b as usize] += 1;
    }
    assert!(want.iter().all(|&c| c > 0), "random bytes cover every bin");
    assert_same("hist", &u32s(r.output("hist")), &want);
}

fn check_matmul_tiled_f32(r: &Run) {
    let n = u32s(r.input("dims"))[0] as usize;
    let (a, b) = (f32s(r.input("a")), f32s(r.input("b")));
    let mut want = vec![0f32; n * n];
    for row in 0..n {
        for col in 0..n {
            let mut acc = 0f32;
            for k in 0..n {
                acc = a[row * n + k].mul_add(b[k * n + col], acc);
            }
            want[row * n + col] = acc;
        }
    }
    assert_f32("c", &f32s(r.output("c")), &want);
}

fn check_stencil5_f32(r: &Run) {
    let dims = u32s(r.input("dims"));
    let (w, h) = (dims[0] as usize, dims[1] as usize);
    let src = f32s(r.input("src"));
    let mut want = vec![0f32; w * h];
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            want[i] = if x == 0 || y == 0 || x == w - 1 || y == h - 1 {
                src[i]
            } else {
                0.2f32 * ((((src[i] + src[i - w]) + src[i + w]) + src[i + 1]) + src[i - 1])
            };
        }
    }
    assert_f32("out", &f32s(r.output("out")), &want);
}

fn check_bounds_fast_path(r: &Run) {
    let (p, q, src) = (u32s(r.input("p")), u32s(r.input("q")), u32s(r.input("src")));
    assert_eq!((p.len(), q.len(), src.len()), (1, 2, 200));
    // Out of range loads read 0 (the index arithmetic wraps in u32 first).
    let at = |v: &[u32], i: u32| v.get(i as usize).copied().unwrap_or(0);
    let (k, j, a, b) = (at(&p, 0), at(&p, 1), at(&q, 0), at(&q, 1));
    assert_eq!((k, j, a, b), (5, 0, 3, 7));
    let threads = r.shape.invocations() as u32;
    let mut out = vec![0u32; u32s(r.output("out")).len()];
    let mut out2 = vec![0u32; u32s(r.output("out2")).len()];
    let mut outside = 0;
    for i in 0..threads {
        let c = at(&src, i);
        let n = at(&src, i.wrapping_sub(k));
        let s = at(&src, i.wrapping_add(k));
        let e = at(&src, i.wrapping_add(1));
        let w = at(&src, i.wrapping_sub(1));
        outside += [i, i.wrapping_sub(k), i + k, i + 1, i.wrapping_sub(1)]
            .iter()
            .filter(|&&x| x as usize >= src.len())
            .count();
        let v = if c & 1 == 1 {
            c.wrapping_add(n.wrapping_mul(3))
                .wrapping_add(s.wrapping_mul(5))
                .wrapping_add(e.wrapping_mul(7).wrapping_add(w.wrapping_mul(11)))
                .wrapping_add(j.wrapping_add(a.wrapping_mul(b)))
        } else {
            (n ^ s).wrapping_sub(e.wrapping_add(w))
        };
        // Out of range stores are dropped.
        if let Some(o) = out.get_mut(i as usize) {
            *o = v;
        }
        let t = i * 2;
        if let Some(o) = out2.get_mut(t as usize) {
            *o = c.wrapping_add(k);
        }
        if let Some(o) = out2.get_mut(t as usize + 1) {
            *o = n.wrapping_add(a);
        }
    }
    assert!(outside > 100 && threads as usize > out.len() && 2 * threads as usize > out2.len());
    assert_same("out", &u32s(r.output("out")), &out);
    assert_same("out2", &u32s(r.output("out2")), &out2);
}

fn check_warp_scan_u32(r: &Run) {
    let x = u32s(r.input("x"));
    let mut want = vec![0u32; x.len()];
    let mut totals = vec![0u32; u32s(r.output("totals")).len()];
    for (w, chunk) in x.chunks(32).enumerate() {
        let mut s = 0u32;
        for (l, &v) in chunk.iter().enumerate() {
            s = s.wrapping_add(v);
            want[w * 32 + l] = s;
        }
        totals[w] = s;
    }
    assert_same("out", &u32s(r.output("out")), &want);
    assert_same("totals", &u32s(r.output("totals")), &totals);
}

fn check_grid_two_phase_u32(r: &Run) {
    let x = u32s(r.input("x"));
    let per_group = r.shape.workgroup_size[0] as usize;
    let sums: Vec<u32> = x
        .chunks(per_group)
        .map(|c| c.iter().fold(0u32, |s, &v| s.wrapping_add(v)))
        .collect();
    let total = sums.iter().fold(0u32, |s, &v| s.wrapping_add(v));
    assert_same("sums", &u32s(r.output("sums")), &sums);
    let want: Vec<u32> = x.iter().map(|&v| total.wrapping_sub(v)).collect();
    assert_same("out", &u32s(r.output("out")), &want);
}

fn check_grid_barrier_loop_u32(r: &Run) {
    let mut a = u32s(r.input("a"));
    let n = a.len();
    for _ in 0..4 {
        a = (0..n)
            .map(|i| {
                let (l, m, rt) = (a[(i + n - 1) % n], a[i], a[(i + 1) % n]);
                (l ^ m.rotate_left(7)).wrapping_add(rt.wrapping_mul(3))
            })
            .collect();
    }
    assert_same("a", &u32s(r.output("a")), &a);
}

fn check_f16_storage(r: &Run) {
    let x = u16s(r.input("x"));
    let tiny = u16s(r.input("tiny"));
    let wide: Vec<f32> = x.iter().map(|&h| f16_to_f32(h)).collect();
    assert_f32("wide", &f32s(r.output("wide")), &wide);
    let y: Vec<u16> = wide.iter().map(|&v| f32_to_f16(v * 1.5 + 0.25)).collect();
    assert!(
        y.iter().any(|&h| h & 0x7fff == 0x7c00),
        "some results overflow"
    );
    assert_f16("y", &u16s(r.output("y")), &y);
    let t: Vec<u16> = tiny
        .iter()
        .map(|&h| f32_to_f16(f16_to_f32(h) * 0.25))
        .collect();
    assert!(
        t.iter().any(|&h| h & 0x7c00 == 0 && h & 0x3ff != 0),
        "subnormals"
    );
    assert_f16("tiny_out", &u16s(r.output("tiny_out")), &t);
}

fn check_u64_f64_arith(r: &Run) {
    let (a, b, f) = (u64s(r.input("a")), i64s(r.input("b")), f64s(r.input("f")));
    let mut ou = Vec::new();
    let mut oi = Vec::new();
    let mut of = Vec::new();
    for i in 0..a.len() {
        let (x, y, z) = (a[i], b[i], f[i]);
        let lcg = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let hi = ((x as u128 * lcg as u128) >> 64) as u64;
        ou.push((lcg ^ hi) ^ x.rotate_right(17).wrapping_sub(x << 40));
        oi.push(
            y.wrapping_div(-7)
                .wrapping_add((y % 1000).wrapping_sub(absdiff_i64(y, 123456789))),
        );
        let g = z.mul_add(z, 1.0) + y as f64;
        let h = g / (z.abs() + 1.0).sqrt();
        of.push(h + f64::from_bits(z.to_bits() & 0xfff0_0000_0000_0000));
    }
    assert_same("ou", &u64s(r.output("ou")), &ou);
    assert_same("oi", &i64s(r.output("oi")), &oi);
    assert_f64("of", &f64s(r.output("of")), &of);
}

fn check_int_edge_cases(r: &Run) {
    let vals = i32s(r.input("vals"));
    assert_eq!(vals.len(), 16);
    let mut out = Vec::new();
    let (mut o8, mut ou8, mut o16, mut ou16) = (vec![], vec![], vec![], vec![]);
    for t in 0..256 {
        let (a, b) = (vals[t / 16], vals[t % 16]);
        let (ua, ub) = (a as u32, b as u32);
        let smulhi = ((a as i64 * b as i64) >> 32) as i32;
        let bit = |c: bool, s: u32| (c as i32) << s;
        out.extend_from_slice(&[
            sdiv(a, b),
            srem(a, b),
            a.wrapping_mul(b),
            a.wrapping_add(b),
            a.wrapping_sub(b),
            shl32(a, ub),
            shr_s32(a, ub),
            shr_u32(ua, ub) as i32,
            a.rotate_left(ub % 32),
            a.rotate_right(ub % 32),
            smulhi,
            absdiff_i32(a, b),
            a.min(b),
            a.max(b),
            udiv(ua, ub) as i32,
            urem(ua, ub) as i32,
            ((ua as u64 * ub as u64) >> 32) as i32,
            ua.abs_diff(ub) as i32,
            ua.min(ub) as i32,
            ua.wrapping_neg().wrapping_add(ub << 3) as i32,
            a.wrapping_abs(),
            a.signum(),
            a.wrapping_neg(),
            !a,
            a.count_ones() as i32,
            a.leading_zeros() as i32,
            a.trailing_zeros() as i32,
            a.reverse_bits(),
            bit(a == b, 0)
                | bit(a != b, 1)
                | bit(a < b, 2)
                | bit(a <= b, 3)
                | bit(a > b, 4)
                | bit(a >= b, 5)
                | bit(ua < ub, 6),
            bit((a > 0 && b > 0) || a != b, 0) | bit(a >= b && b != 7, 1),
            (a & b) ^ ((a | b) << 1),
            (a ^ b).wrapping_add((smulhi == -1) as i32),
        ]);
        o8.push(a.wrapping_add(b) as i8);
        ou8.push(ua.wrapping_mul(ub) as u8);
        o16.push(a.wrapping_sub(b) as i16);
        ou16.push((ua ^ (ub << 8)) as u16);
    }
    assert_same("out", &i32s(r.output("out")), &out);
    assert_same("o8", &i8s(r.output("o8")), &o8);
    assert_same("ou8", &u8s(r.output("ou8")), &ou8);
    assert_same("o16", &i16s(r.output("o16")), &o16);
    assert_same("ou16", &u16s(r.output("ou16")), &ou16);
    let (bytes, halves, shorts) = (
        i8s(r.input("bytes")),
        u16s(r.input("halves")),
        i16s(r.input("shorts")),
    );
    let mut wide = vec![0i32; 24];
    for t in 0..bytes.len() {
        wide[t * 3] = bytes[t] as i32;
        wide[t * 3 + 1] = halves.get(t).map_or(0, |&h| h as i32);
        wide[t * 3 + 2] = shorts.get(t).map_or(0, |&h| h as i32);
    }
    assert_same("wide", &i32s(r.output("wide")), &wide);
    // Spot checks of the spec's rules, independent of the loops above.
    let at = |ai: usize, bi: usize, j: usize| out[(ai * 16 + bi) * 32 + j];
    let (i_m1, i_min, i_0, i_32) = (2, 11, 0, 8);
    assert_eq!(at(i_min, i_m1, 0), i32::MIN, "MIN / -1");
    assert_eq!(at(i_min, i_m1, 1), 0, "MIN % -1");
    assert_eq!(at(5, i_0, 0), 0, "7 / 0");
    assert_eq!(at(5, i_0, 1), 0, "7 % 0");
    assert_eq!(at(5, i_32, 5), 0, "7 << 32");
    assert_eq!(at(6, i_32, 6), -1, "-7 >> 32");
    assert_eq!(at(i_min, 0, 20), i32::MIN, "abs(MIN)");
}

fn check_float_specials(r: &Run) {
    let bits = u32s(r.input("bits"));
    let v: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
    let (mut of, mut ob, mut oi, mut ou, mut ol) = (vec![], vec![], vec![], vec![], vec![]);
    for t in 0..256 {
        let (a, b) = (v[t / 16], v[t % 16]);
        let sel = |c: bool, x: f32, y: f32| if c { x } else { y };
        of.extend_from_slice(&[
            fmin(a, b),
            fmax(a, b),
            a + b,
            a - b,
            a * b,
            a / b,
            a.mul_add(b, a),
            // larger minus smaller; x - y and y - x differ only in sign, -0 < +0 gives +0
            (a - b).abs(),
            a.sqrt(),
            a.round_ties_even(),
            a.floor(),
            a.ceil(),
            a.trunc(),
            fsign(a),
            f32::from_bits(a.to_bits() & 0x7fff_ffff),
            f32::from_bits(a.to_bits() ^ 0x8000_0000),
            1.0 / a,
            (a as f64 * b as f64) as f32,
            sel(a.is_nan(), f32::INFINITY, a),
            fmax(a, f32::NEG_INFINITY),
            (if b.is_infinite() {
                f64::NAN
            } else {
                a as f64 + f64::NEG_INFINITY
            }) as f32,
            fmin(f32::NAN, b),
            sel(a.is_finite(), 1.5, f32::NEG_INFINITY),
            f32::from_bits(a.to_bits() ^ 0x8000_0000),
        ]);
        ob.extend_from_slice(&[
            a.is_nan(),
            a.is_infinite(),
            a.is_finite(),
            a < b,
            a <= b,
            a == b,
            a != b,
            a >= b,
            a != 0.0,
        ]);
        oi.push(a as i32);
        ou.push((a * b) as u32);
        ol.push((a * b) as i64);
        ol.push((a as f64 * 1e10) as u64 as i64);
    }
    assert_f32("of", &f32s(r.output("of")), &of);
    // bool elements are 32-bit words; stores write 1/0.
    let ob: Vec<u32> = ob.into_iter().map(u32::from).collect();
    assert_same("ob", &u32s(r.output("ob")), &ob);
    assert_same("oi", &i32s(r.output("oi")), &oi);
    assert_same("ou", &u32s(r.output("ou")), &ou);
    assert_same("ol", &i64s(r.output("ol")), &ol);
    // Spot checks: min(-0, +0) = -0, NaN casts to 0, round ties to even.
    let got = f32s(r.output("of"));
    assert_eq!(got[16 * 24].to_bits(), 0x8000_0000, "min(-0, +0)");
    assert_eq!(got[16 * 24 + 1].to_bits(), 0, "max(-0, +0)");
    assert_eq!(got[(6 * 16) * 24 + 9], 2.0, "round(2.5)");
    assert_eq!(got[(7 * 16) * 24 + 9], -2.0, "round(-2.5)");
    assert_eq!(i32s(r.output("oi"))[10 * 16], 0, "i32(NaN)");
    assert_eq!(i32s(r.output("oi"))[8 * 16], i32::MAX, "i32(inf)");
}

fn check_loop_early_return(r: &Run) {
    let key = u32s(r.input("params"))[0];
    let data = u32s(r.input("data"));
    let want: Vec<u32> = data
        .chunks(64)
        .map(|row| {
            row.iter()
                .position(|&v| v == key)
                .map_or(u32::MAX, |k| k as u32)
        })
        .collect();
    assert!(want.contains(&u32::MAX) && want.iter().any(|&k| k != u32::MAX));
    assert_same("found", &u32s(r.output("found")), &want);
}

fn check_nested_blocks(r: &Run) {
    let x = i32s(r.input("x"));
    let mask = u32s(r.input("mask"));
    let mut cls = Vec::new();
    let mut y = Vec::new();
    for (i, &v) in x.iter().enumerate() {
        let a = v.wrapping_abs();
        let mut c: u32 = match v {
            v if v < 0 && a > 1000 => 1,
            v if v < 0 => 2,
            0 => 3,
            v if v > 1000 => 4,
            _ => 5,
        };
        if mask[i] != 0 {
            c += 10;
        }
        cls.push(c as u16);
        y.push((if a > 32767 { v >> 4 } else { v.wrapping_mul(3) }) as i16);
    }
    assert_same("cls", &u16s(r.output("cls")), &cls);
    assert_same("y", &i16s(r.output("y")), &y);
}

fn check_atomics_mixed(r: &Run) {
    let (x, y) = (u32s(r.input("x")), i32s(r.input("y")));
    let mut acc = u32s(r.input("acc"));
    let mut iacc = i32s(r.input("iacc"));
    let mut big = u64s(r.input("big"));
    let mut fsum = 0f64;
    let mut olds = Vec::new();
    let mut slots = u32s(r.input("slots"));
    for i in 0..x.len() {
        let (v, w) = (x[i], y[i]);
        acc[0] = acc[0].wrapping_add(v & 255);
        acc[1] &= v | (1 << (i % 32));
        acc[2] |= v & 61680;
        acc[3] ^= v;
        acc[4] = acc[4].min(v);
        acc[5] = acc[5].max(v);
        iacc[0] = iacc[0].min(w);
        iacc[1] = iacc[1].max(w);
        big[0] = big[0].wrapping_add(v as u64);
        big[1] = big[1].max((v as u64).wrapping_mul(w as u32 as u64));
        fsum += (v & 15) as f64 * 0.25;
        let e = slots[i];
        slots[i] = v;
        let c1 = slots[i];
        slots[i] = (i as u32).wrapping_mul(2);
        let c2 = slots[i];
        if c2 == v {
            slots[i] = 7;
        }
        olds.extend_from_slice(&[e, c1, c2]);
    }
    assert_same("acc", &u32s(r.output("acc")), &acc);
    assert_same("iacc", &i32s(r.output("iacc")), &iacc);
    assert_same("big", &u64s(r.output("big")), &big);
    assert_f32("fsum", &f32s(r.output("fsum")), &[fsum as f32]);
    assert_eq!(
        fsum as f32 as f64, fsum,
        "the f32 sum is exact in any order"
    );
    assert_same("slots", &u32s(r.output("slots")), &slots);
    assert_same("olds", &u32s(r.output("olds")), &olds);
}

fn check_subgroup_ops(r: &Run) {
    let x = u32s(r.input("x"));
    let mut out = Vec::new();
    let mut fo = Vec::new();
    for warp in x.chunks(32) {
        let red = |f: &dyn Fn(u32, u32) -> u32, m: &dyn Fn(u32) -> u32| {
            warp.iter().skip(1).fold(m(warp[0]), |s, &v| f(s, m(v)))
        };
        let add = red(&|s, v| s.wrapping_add(v), &|v| v);
        let mul = red(&|s, v| s.wrapping_mul(v), &|v| v | 1);
        let min = red(&|s, v| s.min(v), &|v| v);
        let max = red(&|s, v| s.max(v), &|v| v);
        let and = red(&|s, v| s & v, &|v| v | 0x0f0f_0f0f);
        let or = red(&|s, v| s | v, &|v| v & 0xffff);
        let xor = red(&|s, v| s ^ v, &|v| v);
        let ballot = warp
            .iter()
            .enumerate()
            .fold(0u32, |m, (l, &v)| m | ((v & 1) << l));
        let imin = warp
            .iter()
            .map(|&v| (v as i32).wrapping_sub(500))
            .min()
            .unwrap_or(0);
        let f: Vec<f32> = warp.iter().map(|&v| (v & 1023) as f32 * 0.5).collect();
        let fsum: f64 = f.iter().map(|&v| v as f64).sum();
        let fmax_neg = f.iter().map(|&v| -v).fold(f32::NEG_INFINITY, f32::max);
        for lane in 0..warp.len() {
            out.extend_from_slice(&[
                add,
                mul,
                min,
                max,
                and,
                or,
                xor,
                ballot,
                warp[lane ^ 1],
                warp[31 - lane],
                imin as u32,
                lane as u32 * 100 + 32,
            ]);
            fo.extend_from_slice(&[fsum as f32, fmax_neg]);
        }
    }
    assert_same("out", &u32s(r.output("out")), &out);
    assert_f32("fo", &f32s(r.output("fo")), &fo);
}

fn check_ids_3d(r: &Run) {
    let (wg, grid) = (r.shape.workgroup_size, r.shape.grid);
    let [sx, sy, _] = r.threads();
    let mut want = vec![1u32; u32s(r.output("out")).len()];
    for wz in 0..grid[2] {
        for wy in 0..grid[1] {
            for wx in 0..grid[0] {
                // Ballot of lid.x < 3 per warp of this workgroup, by linear local id.
                let n = (wg[0] * wg[1] * wg[2]) as usize;
                let mut ballots = vec![0u32; n.div_ceil(32)];
                for l in 0..n {
                    if (l as u32 % wg[0]) < 3 {
                        ballots[l / 32] |= 1 << (l % 32);
                    }
                }
                for lz in 0..wg[2] {
                    for ly in 0..wg[1] {
                        for lx in 0..wg[0] {
                            let (gx, gy, gz) = (wx * wg[0] + lx, wy * wg[1] + ly, wz * wg[2] + lz);
                            let t = (gx + gy * sx + gz * sx * sy) as usize;
                            let l = (lx + ly * wg[0] + lz * wg[0] * wg[1]) as usize;
                            want[t * 8..t * 8 + 8].copy_from_slice(&[
                                gx,
                                gy,
                                gz,
                                lx | ly << 8 | lz << 16,
                                wx | wy << 8 | wz << 16,
                                grid[0] | grid[1] << 8 | grid[2] << 16,
                                (l % 32) as u32 | 32 << 8,
                                ballots[l / 32],
                            ]);
                        }
                    }
                }
            }
        }
    }
    assert!(!want.contains(&1) || want.iter().filter(|&&v| v == 1).count() < want.len() / 4);
    assert_same("out", &u32s(r.output("out")), &want);
}

fn check_math_f32(r: &Run) {
    let (x, s) = (f32s(r.input("x")), f32s(r.input("s")));
    let got = f32s(r.output("out"));
    assert_eq!(got.len(), x.len() * 16);
    let mut bad = Vec::new();
    for i in 0..x.len() {
        let (p, q) = (x[i], s[i]);
        // (want, exact?) per output slot.
        let want: [(f32, bool); 16] = [
            (p.sqrt(), true),
            (1.0 / p.sqrt(), false),
            (1.0 / p, true),
            (q.exp(), false),
            (q.exp2(), false),
            (p.ln(), false),
            (p.log2(), false),
            (q.sin(), false),
            (q.cos(), false),
            (q.tan(), false),
            (q.tanh(), false),
            (q.floor(), true),
            (q.ceil(), true),
            (q.trunc(), true),
            ((q * 2.0).round_ties_even(), true),
            (fsign(q), true),
        ];
        for (j, (w, exact)) in want.into_iter().enumerate() {
            let g = got[i * 16 + j];
            let ok = if exact {
                same_f32(g, w)
            } else {
                ulps(g, w) <= 4 || (g - w).abs() <= 1e-6
            };
            if !ok && bad.len() < 8 {
                bad.push(format!("[{i}][{j}] got {g:?} want {w:?}"));
            }
        }
    }
    assert!(bad.is_empty(), "out: mismatches\n  {}", bad.join("\n  "));
}

// ---- registry ----------------------------------------------------------------------------------

/// Saturating operators: each result computed exactly in i128, then clamped to the type's
/// range (independent of Rust's `saturating_*`, which the interpreter uses), and the fixture's
/// random inputs checked to reach both bounds of every operator so the test means something.
fn check_saturating_int(r: &Run) {
    fn clamp(v: i128, lo: i128, hi: i128) -> i128 {
        v.max(lo).min(hi)
    }
    fn check(
        what: &str,
        a: &[i128],
        b: &[i128],
        m: &[i128],
        got: &[i128],
        shr: fn(i128) -> i128,
        (lo, hi): (i128, i128),
    ) {
        let mut want = Vec::new();
        for i in 0..a.len() {
            want.push(clamp(a[i] + b[i], lo, hi));
            want.push(clamp(a[i] - b[i], lo, hi));
            want.push(clamp(shr(a[i]) * m[i], lo, hi));
        }
        assert_same(what, got, &want);
        // Every operator clamps somewhere and passes through somewhere.
        for k in 0..3 {
            let col: Vec<i128> = want.iter().skip(k).step_by(3).copied().collect();
            let clamped = col.iter().filter(|&&v| v == lo || v == hi).count();
            assert!(
                clamped > 0 && clamped < col.len(),
                "{what} op {k}: {clamped} clamped"
            );
        }
    }
    let w = |v: Vec<u32>| v.into_iter().map(i128::from).collect::<Vec<_>>();
    let wi = |v: Vec<i32>| v.into_iter().map(i128::from).collect::<Vec<_>>();
    let wl = |v: Vec<u64>| v.into_iter().map(i128::from).collect::<Vec<_>>();
    let wn = |v: Vec<i64>| v.into_iter().map(i128::from).collect::<Vec<_>>();
    // `shr` by 14 of the element type (arithmetic for signed types).
    let sh = |x: i128| x >> 14;
    check(
        "out_u32",
        &w(u32s(r.input("au"))),
        &w(u32s(r.input("bu"))),
        &w(u32s(r.input("m_u32"))),
        &w(u32s(r.output("out_u32"))),
        sh,
        (0, u32::MAX as i128),
    );
    check(
        "out_i32",
        &wi(i32s(r.input("ai"))),
        &wi(i32s(r.input("bi"))),
        &wi(i32s(r.input("m_i32"))),
        &wi(i32s(r.output("out_i32"))),
        sh,
        (i32::MIN as i128, i32::MAX as i128),
    );
    check(
        "out_u64",
        &wl(u64s(r.input("aw"))),
        &wl(u64s(r.input("bw"))),
        &wl(u64s(r.input("m_u64"))),
        &wl(u64s(r.output("out_u64"))),
        sh,
        (0, u64::MAX as i128),
    );
    check(
        "out_i64",
        &wn(i64s(r.input("an"))),
        &wn(i64s(r.input("bn"))),
        &wn(i64s(r.input("m_i64"))),
        &wn(i64s(r.output("out_i64"))),
        sh,
        (i64::MIN as i128, i64::MAX as i128),
    );
}

macro_rules! fixtures {
    ($($stem:ident => $check:ident),* $(,)?) => {
        /// Every fixture stem with a check.
        const CHECKED: &[&str] = &[$(stringify!($stem)),*];
        $(
            #[test]
            fn $stem() {
                $check(&run_fixture(stringify!($stem)));
            }
        )*
    };
}

fixtures! {
    vadd_f32 => check_vadd_f32,
    saxpy_f32 => check_saxpy_f32,
    reduce_sum_f32 => check_reduce_sum_f32,
    histogram_u8 => check_histogram_u8,
    histogram_u8_relaxed => check_histogram_u8,
    matmul_tiled_f32 => check_matmul_tiled_f32,
    stencil5_f32 => check_stencil5_f32,
    bounds_fast_path => check_bounds_fast_path,
    warp_scan_u32 => check_warp_scan_u32,
    grid_two_phase_u32 => check_grid_two_phase_u32,
    grid_barrier_loop_u32 => check_grid_barrier_loop_u32,
    f16_storage => check_f16_storage,
    u64_f64_arith => check_u64_f64_arith,
    int_edge_cases => check_int_edge_cases,
    float_specials => check_float_specials,
    loop_early_return => check_loop_early_return,
    nested_blocks => check_nested_blocks,
    atomics_mixed => check_atomics_mixed,
    atomics_mixed_relaxed => check_atomics_mixed,
    subgroup_ops => check_subgroup_ops,
    ids_3d => check_ids_3d,
    math_f32 => check_math_f32,
    saturating_int => check_saturating_int,
}

#[test]
fn every_fixture_has_a_reference_check() {
    let dir = root().join("fixtures/programs");
    let stems: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    let checked: BTreeSet<String> = CHECKED.iter().map(|s| s.to_string()).collect();
    let missing: Vec<&String> = stems.difference(&checked).collect();
    assert!(
        missing.is_empty(),
        "fixtures without a reference check in tests/fixtures_reference.rs: {missing:?}"
    );
    let stale: Vec<&String> = checked.difference(&stems).collect();
    assert!(stale.is_empty(), "checks without a fixture: {stale:?}");
}

#[test]
fn f16_conversions_are_right() {
    // Known encodings, independent of the helpers' arithmetic.
    for (h, f) in [
        (0x3c00u16, 1.0f32),
        (0xc000, -2.0),
        (0x7bff, 65504.0),
        (0x0400, 6.103_515_6e-5),
        (0x0001, 5.960_464_5e-8),
        (0x3555, 0.333_251_95),
        (0x8000, -0.0),
    ] {
        assert_eq!(f16_to_f32(h).to_bits(), f.to_bits(), "{h:#x}");
        assert_eq!(f32_to_f16(f), h, "{f}");
    }
    assert_eq!(f32_to_f16(65519.99), 0x7bff);
    assert_eq!(f32_to_f16(65520.0), 0x7c00, "ties to even overflow to inf");
    assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00, "tie rounds to even");
    assert_eq!(
        f32_to_f16(1.0 + 3.0 / 2048.0),
        0x3c02,
        "tie rounds to even (up)"
    );
    assert_eq!(
        f32_to_f16(2.980_232_2e-8),
        0x0000,
        "half the smallest subnormal: even"
    );
    assert_eq!(f32_to_f16(-1e9), 0xfc00);
    assert!(f16_to_f32(f32_to_f16(f32::NAN)).is_nan());
    // Every finite f16 round-trips.
    for h in 0..=0xffffu16 {
        if h & 0x7c00 != 0x7c00 {
            assert_eq!(f32_to_f16(f16_to_f32(h)), h, "{h:#x}");
        }
    }
}
