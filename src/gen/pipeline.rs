//! Random pipelines for `selftest --fuzz-pipelines` and the fused-versus-separate property
//! tests: chains and DAGs of race-free steps over shared `u32` buffers, with random element
//! counts and workgroup sizes (mixed in one pipeline), neighbour reads, block reductions with
//! workgroup barriers, one-workgroup folds (a 32-thread subgroup reduction or a single thread),
//! broadcasts of a fold's result, atomic histograms and lookups into them, and the stencils
//! whose index forms the megakernel's tile analysis reads as a window of workgroups plus a
//! few boundary workgroups (`window+boundary`) rather than all of them:
//!
//! - clamped reads at offsets 1 to 3, written the ways users write them:
//!   `select(i > 0, i - 1, 0)`, `select(i >= k, i - k, 0)`, `max(i, k) - k`,
//!   `min(i + k, n - 1)` (either operand order), `select(i + k < n, i + k, n - 1)`, with `n`
//!   a `let` of the buffer's length or `len(x)` inline; one-sided or a 3-point stencil;
//! - periodic reads: `(i + k) % len(x)`, `(i + len(x) - k) % len(x)` and
//!   `(i + (len(x) - k)) % len(x)`;
//! - ping-pong runs: 2 to 8 consecutive stencil steps alternating between two buffers
//!   (A -> B, B -> A, ...), mostly of one workgroup size (equal tiles give windows; a step of
//!   another size gives an all-to-all dependence), whose waits further back than the step
//!   before are implied by the chain of waits (the plan's transitive reduction).
//!
//! Every step is race-free on its own (it never reads the buffer it writes, except through
//! commutative atomics), so its result does not depend on thread order; what the steps share
//! is ordered only by the pipeline, which is what a megakernel plan must respect. A step may
//! overwrite a buffer an earlier step read (an anti-dependence) and read any earlier output
//! (so the steps form a DAG, not only a chain). A stencil mostly reads a buffer an earlier
//! step wrote, at that step's workgroup size, so the dependence is a real cross-workgroup one
//! with equal tiles. The same seed always gives the same pipeline.
//!
//! The steps of the generator before the stencils were added come first, drawn exactly as
//! before (a seed reported by an earlier fuzz run still starts with the same steps); the
//! stencils, ping-pong runs and more steps of every kind follow.

use crate::ir::{
    parse_program, ElemType, Fill, InputSource, InputSpec, Pipeline, PipelineBuffer, Step,
};
use crate::util::Problem;

use super::Rng;

/// A buffer the generator can read: its name and length.
#[derive(Debug, Clone)]
struct Buf {
    name: String,
    len: usize,
    /// Workgroup size of the last step that wrote it (`None`: only its random contents).
    writer_wg: Option<u32>,
}

/// Workgroup sizes of elementwise steps (96: not a power of two; 1: one thread per workgroup).
const MAP_SIZES: [u32; 6] = [1, 32, 64, 96, 128, 256];
/// Workgroup sizes of block reductions (powers of two: a tree of halvings).
const REDUCE_SIZES: [u32; 4] = [32, 64, 128, 256];

/// How a stencil step reaches past the ends of its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edge {
    /// Clamped to the first and last element (`select`, `min`, `max`).
    Clamped,
    /// Wrapped around (`rem` by the length).
    Periodic,
    /// Not at all: `i - k` and `i + k`, a read past either end gives 0 (an out-of-bounds load).
    Open,
}

impl Edge {
    /// The step name's suffix.
    fn name(self) -> &'static str {
        match self {
            Edge::Clamped => "clamped",
            Edge::Periodic => "periodic",
            Edge::Open => "shifted",
        }
    }
}

struct Builder {
    rng: Rng,
    /// Element count of every data buffer.
    n: usize,
    /// Data buffers (length `n`).
    data: Vec<Buf>,
    /// Small buffers written by reductions, folds and histograms.
    small: Vec<Buf>,
    buffers: Vec<PipelineBuffer>,
    steps: Vec<Step>,
}

fn u32_decls(list: &[(&str, &str)]) -> String {
    list.iter()
        .enumerate()
        .map(|(i, (n, a))| {
            format!(r#"{{"name": "{n}", "binding": {i}, "access": "{a}", "type": "u32"}}"#)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Builder {
    fn buffer(&mut self, name: String, len: usize) {
        let seed = self.rng.next_u64() % 1_000_000;
        self.buffers.push(PipelineBuffer {
            name,
            elem: ElemType::U32,
            contents: InputSpec {
                len: Some(len as u64),
                source: InputSource::Fill(Fill::Random {
                    seed,
                    range: Some((0.0, 1.0e6)),
                }),
            },
            transient: false,
        });
    }

    fn step(
        &mut self,
        name: &str,
        wg: u32,
        grid: usize,
        bufs: &[(&str, &str, &str)],
        extra_decls: &str,
        body: &str,
    ) -> Result<(), Problem> {
        let k = self.steps.len();
        let pname = format!("s{k}_{name}");
        let text = format!(
            r#"{{"format": 1, "name": "{pname}", "workgroup_size": [{wg}, 1, 1], "buffers": [{}{extra_decls}], "body": [{body}]}}"#,
            u32_decls(&bufs.iter().map(|&(n, a, _)| (n, a)).collect::<Vec<_>>())
        );
        let program = parse_program(&text, &pname).map_err(|e| {
            Problem::bug(format!("generated step {k} ({pname}) does not parse: {e}"))
        })?;
        let grid = u32::try_from(grid.max(1))
            .map_err(|_| Problem::bug(format!("step {k}: grid too large")))?;
        for &(_, access, bound) in bufs {
            if access != "read" {
                if let Some(d) = self.data.iter_mut().find(|d| d.name == bound) {
                    d.writer_wg = Some(wg);
                }
            }
        }
        self.steps.push(Step {
            program,
            program_path: None,
            bind: bufs
                .iter()
                .map(|(p, _, b)| (p.to_string(), b.to_string()))
                .collect(),
            workgroup_size: None,
            grid: Some([grid, 1, 1]),
            elements: None,
        });
        Ok(())
    }

    /// Two distinct data buffers to read and a third to write (3 or more data buffers).
    fn pick3(&mut self) -> (String, String, String) {
        let d = self.data.len();
        let dst = self.rng.below(d);
        // A step binds each pipeline buffer once (no aliasing within a dispatch).
        let others: Vec<usize> = (0..d).filter(|&i| i != dst).collect();
        let ai = self.rng.below(others.len());
        let a = others[ai];
        let b = others[(ai + 1 + self.rng.below(others.len() - 1)) % others.len()];
        (
            self.data[a].name.clone(),
            self.data[b].name.clone(),
            self.data[dst].name.clone(),
        )
    }

    fn value_expr(&mut self) -> String {
        let c = self.rng.below(1000) + 1;
        let sh = self.rng.below(31) + 1;
        let a = r#"{"load": "a", "index": "i"}"#;
        let b = r#"{"load": "b", "index": "i"}"#;
        match self.rng.below(5) {
            0 => format!(r#"{{"add": [{{"mul": [{a}, {c}]}}, {b}]}}"#),
            1 => format!(r#"{{"xor": [{a}, {{"shr": [{b}, {sh}]}}]}}"#),
            2 => format!(r#"{{"sub": [{a}, {b}]}}"#),
            3 => format!(r#"{{"max": [{a}, {{"add": [{b}, {c}]}}]}}"#),
            _ => format!(r#"{{"rotl": [{{"add": [{a}, {b}]}}, {sh}]}}"#),
        }
    }

    /// `dst[i] = f(a[i], b[i])`, maybe plus a lookup into a small buffer.
    fn map(&mut self) -> Result<(), Problem> {
        let (a, b, dst) = self.pick3();
        let wg = self.rng.pick(&MAP_SIZES);
        let mut value = self.value_expr();
        let mut bufs = vec![
            ("a", "read", a.as_str()),
            ("b", "read", b.as_str()),
            ("dst", "write", dst.as_str()),
        ];
        let small = (!self.small.is_empty() && self.rng.chance(1, 2))
            .then(|| self.small[self.rng.below(self.small.len())].clone());
        if let Some(s) = &small {
            // A broadcast (len 1) or a lookup by the element's own value.
            value = format!(
                r#"{{"add": [{value}, {{"load": "s", "index": {{"rem": [{{"load": "a", "index": "i"}}, {}]}}}}]}}"#,
                s.len
            );
            bufs.push(("s", "read", s.name.as_str()));
        }
        let body = format!(
            r#"{{"let": "i", "value": {{"gid": "x"}}}},
               {{"if": {{"lt": ["i", {{"len": "dst"}}]}}, "then": [
                 {{"store": "dst", "index": "i", "value": {value}}}]}}"#
        );
        let grid = self.n.div_ceil(wg as usize);
        self.step("map", wg, grid, &bufs, "", &body)
    }

    /// `dst[i] = a[i ± 1] + b[i]` (the missing neighbour reads 0).
    fn neighbour(&mut self) -> Result<(), Problem> {
        let (a, b, dst) = self.pick3();
        let wg = self.rng.pick(&MAP_SIZES);
        let op = if self.rng.chance(1, 2) { "add" } else { "sub" };
        let body = format!(
            r#"{{"let": "i", "value": {{"gid": "x"}}}},
               {{"if": {{"lt": ["i", {{"len": "dst"}}]}}, "then": [
                 {{"store": "dst", "index": "i", "value": {{"add": [
                   {{"load": "a", "index": {{"{op}": ["i", 1]}}}}, {{"load": "b", "index": "i"}}]}}}}]}}"#
        );
        let grid = self.n.div_ceil(wg as usize);
        self.step(
            "neighbour",
            wg,
            grid,
            &[("a", "read", &a), ("b", "read", &b), ("dst", "write", &dst)],
            "",
            &body,
        )
    }

    /// One partial sum per workgroup through a shared tile and a tree of workgroup barriers;
    /// some workgroups return early (a workgroup-uniform return) and leave their partial.
    fn block_reduce(&mut self) -> Result<(), Problem> {
        let k = self.steps.len();
        let src = self.data[self.rng.below(self.data.len())].name.clone();
        let wg = self.rng.pick(&REDUCE_SIZES);
        let grid = self.n.div_ceil(wg as usize);
        let part = format!("p{k}");
        self.buffer(part.clone(), grid);
        let rounds = wg.trailing_zeros();
        let half = wg / 2;
        let skip = self.rng.below(7) + 2;
        let body = format!(
            r#"{{"if": {{"eq": [{{"rem": [{{"wgid": "x"}}, {skip}]}}, 1]}}, "then": [{{"return": {{}}}}]}},
               {{"store": "tile", "index": {{"lid": "x"}}, "value": {{"load": "src", "index": {{"gid": "x"}}}}}},
               {{"barrier": "workgroup"}},
               {{"loop": "r", "from": 0, "to": {rounds}, "body": [
                 {{"let": "h", "value": {{"shr": [{half}, "r"]}}}},
                 {{"if": {{"lt": [{{"lid": "x"}}, "h"]}}, "then": [
                   {{"store": "tile", "index": {{"lid": "x"}}, "value": {{"add": [
                     {{"load": "tile", "index": {{"lid": "x"}}}},
                     {{"load": "tile", "index": {{"add": [{{"lid": "x"}}, "h"]}}}}]}}}}]}},
                 {{"barrier": "workgroup"}}]}},
               {{"if": {{"eq": [{{"lid": "x"}}, 0]}}, "then": [
                 {{"store": "part", "index": {{"wgid": "x"}}, "value": {{"load": "tile", "index": 0}}}}]}}"#
        );
        let tile =
            format!(r#", {{"name": "tile", "access": "workgroup", "type": "u32", "count": {wg}}}"#);
        self.step(
            "block_reduce",
            wg,
            grid,
            &[("src", "read", &src), ("part", "write", &part)],
            &tile,
            &body,
        )?;
        self.small.push(Buf {
            name: part,
            len: grid,
            writer_wg: Some(wg),
        });
        Ok(())
    }

    /// The total of a small buffer by one workgroup: 32 lanes and a subgroup reduction, or a
    /// single thread's loop.
    fn fold(&mut self) -> Result<(), Problem> {
        let Some(src) =
            (!self.small.is_empty()).then(|| self.small[self.rng.below(self.small.len())].clone())
        else {
            return self.block_reduce();
        };
        let k = self.steps.len();
        let total = format!("t{k}");
        self.buffer(total.clone(), 1);
        let (wg, body) = if self.rng.chance(1, 2) {
            let trips = src.len.div_ceil(32);
            (
                32,
                format!(
                    r#"{{"let": "acc", "value": 0}},
                       {{"loop": "j", "from": 0, "to": {trips}, "body": [
                         {{"assign": "acc", "value": {{"add": ["acc", {{"load": "src", "index": {{"add": [{{"lid": "x"}}, {{"mul": ["j", 32]}}]}}}}]}}}}]}},
                       {{"let": "sum", "value": {{"subgroup_reduce": "add", "value": "acc"}}}},
                       {{"if": {{"eq": [{{"lid": "x"}}, 0]}}, "then": [
                         {{"store": "total", "index": 0, "value": "sum"}}]}}"#
                ),
            )
        } else {
            (
                1,
                format!(
                    r#"{{"let": "acc", "value": 0}},
                       {{"loop": "j", "from": 0, "to": {}, "body": [
                         {{"assign": "acc", "value": {{"add": ["acc", {{"load": "src", "index": "j"}}]}}}}]}},
                       {{"store": "total", "index": 0, "value": "acc"}}"#,
                    src.len
                ),
            )
        };
        self.step(
            "fold",
            wg,
            1,
            &[("src", "read", &src.name), ("total", "write", &total)],
            "",
            &body,
        )?;
        self.small.push(Buf {
            name: total,
            len: 1,
            writer_wg: Some(wg),
        });
        Ok(())
    }

    /// `hist[a[i] % bins] += 1` with atomic adds.
    fn histogram(&mut self) -> Result<(), Problem> {
        let k = self.steps.len();
        let src = self.data[self.rng.below(self.data.len())].name.clone();
        let bins = self.rng.pick(&[4usize, 16, 256]);
        let hist = format!("h{k}");
        self.buffer(hist.clone(), bins);
        let wg = self.rng.pick(&MAP_SIZES);
        let body = format!(
            r#"{{"let": "i", "value": {{"gid": "x"}}}},
               {{"if": {{"lt": ["i", {{"len": "src"}}]}}, "then": [
                 {{"let": "old", "value": {{"atomic": "add", "buffer": "hist",
                   "index": {{"rem": [{{"load": "src", "index": "i"}}, {bins}]}}, "value": 1}}}}]}}"#
        );
        let grid = self.n.div_ceil(wg as usize);
        self.step(
            "histogram",
            wg,
            grid,
            &[("src", "read", &src), ("hist", "read_write", &hist)],
            "",
            &body,
        )?;
        self.small.push(Buf {
            name: hist,
            len: bins,
            writer_wg: Some(wg),
        });
        Ok(())
    }

    /// The kinds of the first part of a pipeline (the generator before the stencils).
    fn first_kind(&mut self) -> Result<(), Problem> {
        match self.rng.below(6) {
            0 | 1 => self.map(),
            2 => self.neighbour(),
            3 => self.block_reduce(),
            4 => self.fold(),
            _ => self.histogram(),
        }
    }

    /// A stencil's source, its destination and maybe a third buffer read at `i`, all distinct
    /// data buffers: the source mostly one an earlier step wrote (a real dependence).
    fn pick_stencil(&mut self) -> (String, String, Option<String>) {
        let d = self.data.len();
        let written: Vec<usize> = (0..d)
            .filter(|&i| self.data[i].writer_wg.is_some())
            .collect();
        let src = if !written.is_empty() && self.rng.chance(3, 4) {
            written[self.rng.below(written.len())]
        } else {
            self.rng.below(d)
        };
        let others: Vec<usize> = (0..d).filter(|&i| i != src).collect();
        let di = self.rng.below(others.len());
        let dst = others[di];
        // `others` has 2 or more entries (3 or more data buffers): the rest are neither.
        let extra = self.rng.chance(1, 3).then(|| {
            let rest: Vec<usize> = others.iter().copied().filter(|&i| i != dst).collect();
            self.data[rest[self.rng.below(rest.len())]].name.clone()
        });
        (
            self.data[src].name.clone(),
            self.data[dst].name.clone(),
            extra,
        )
    }

    /// The workgroup size of a stencil reading `src`: mostly its writer's (equal tiles, so a
    /// window), else any.
    fn stencil_wg(&mut self, src: &str) -> u32 {
        let writer = self
            .data
            .iter()
            .find(|d| d.name == src)
            .and_then(|d| d.writer_wg);
        match writer {
            Some(wg) if self.rng.chance(3, 4) => wg,
            _ => self.rng.pick(&MAP_SIZES),
        }
    }

    /// The index of `src` at offset `off` (non-zero, -3..=3) from `i` under `edge`, in one of
    /// the ways a user writes it; `n` is the length of `src` (a variable or `len` inline).
    fn tap(&mut self, edge: Edge, off: i64, n: &str) -> String {
        let k = off.unsigned_abs();
        match (edge, off < 0) {
            (Edge::Clamped, true) => match self.rng.below(3) {
                0 => format!(
                    r#"{{"select": [{{"gt": ["i", {}]}}, {{"sub": ["i", {k}]}}, 0]}}"#,
                    k - 1
                ),
                1 => format!(r#"{{"select": [{{"ge": ["i", {k}]}}, {{"sub": ["i", {k}]}}, 0]}}"#),
                _ => format!(r#"{{"sub": [{{"max": ["i", {k}]}}, {k}]}}"#),
            },
            (Edge::Clamped, false) => match self.rng.below(3) {
                0 => format!(r#"{{"min": [{{"add": ["i", {k}]}}, {{"sub": [{n}, 1]}}]}}"#),
                1 => format!(r#"{{"min": [{{"sub": [{n}, 1]}}, {{"add": ["i", {k}]}}]}}"#),
                _ => format!(
                    r#"{{"select": [{{"lt": [{{"add": ["i", {k}]}}, {n}]}}, {{"add": ["i", {k}]}}, {{"sub": [{n}, 1]}}]}}"#
                ),
            },
            (Edge::Periodic, true) => match self.rng.below(2) {
                0 => format!(r#"{{"rem": [{{"sub": [{{"add": ["i", {n}]}}, {k}]}}, {n}]}}"#),
                _ => format!(r#"{{"rem": [{{"add": ["i", {{"sub": [{n}, {k}]}}]}}, {n}]}}"#),
            },
            (Edge::Periodic, false) => format!(r#"{{"rem": [{{"add": ["i", {k}]}}, {n}]}}"#),
            // Past either end: an out-of-bounds load, 0 (`i - k` wraps to a huge index).
            (Edge::Open, true) => format!(r#"{{"sub": ["i", {k}]}}"#),
            (Edge::Open, false) => format!(r#"{{"add": ["i", {k}]}}"#),
        }
    }

    /// One stencil step `dst[i] = src[left] . src[i] . src[right] (. c[i])` under `edge`:
    /// one side or both (a 3-point stencil), offsets 1 to 3, `.` a random wrapping operation.
    /// Named `s<k>_<run><edge>`, which is how tests tell the kinds apart.
    fn stencil(
        &mut self,
        run: &str,
        edge: Edge,
        (src, dst, extra): (&str, &str, Option<&str>),
        wg: u32,
    ) -> Result<(), Problem> {
        let n = if self.rng.chance(1, 2) {
            r#""n""#
        } else {
            r#"{"len": "src"}"#
        };
        let offs: Vec<i64> = match self.rng.below(4) {
            0 => vec![-(self.rng.below(3) as i64 + 1)],
            1 => vec![self.rng.below(3) as i64 + 1],
            _ => vec![
                -(self.rng.below(3) as i64 + 1),
                0,
                self.rng.below(3) as i64 + 1,
            ],
        };
        let mut value = String::new();
        for off in offs {
            let index = if off == 0 {
                r#""i""#.to_string()
            } else {
                self.tap(edge, off, n)
            };
            let load = format!(r#"{{"load": "src", "index": {index}}}"#);
            value = if value.is_empty() {
                load
            } else {
                let op = self.rng.pick(&["add", "xor", "sub"]);
                format!(r#"{{"{op}": [{value}, {load}]}}"#)
            };
        }
        // The length as a variable, as the fixtures write it, where a tap uses it.
        let pre = if value.contains(r#""n""#) {
            r#"{"let": "n", "value": {"len": "src"}},"#
        } else {
            ""
        };
        let mut bufs = vec![("src", "read", src), ("dst", "write", dst)];
        if let Some(c) = extra {
            let sh = self.rng.below(31) + 1;
            value = format!(
                r#"{{"add": [{value}, {{"rotl": [{{"load": "c", "index": "i"}}, {sh}]}}]}}"#
            );
            bufs.push(("c", "read", c));
        }
        let body = format!(
            r#"{{"let": "i", "value": {{"gid": "x"}}}}, {pre}
               {{"if": {{"lt": ["i", {{"len": "dst"}}]}}, "then": [
                 {{"store": "dst", "index": "i", "value": {value}}}]}}"#
        );
        let grid = self.n.div_ceil(wg as usize);
        let name = format!("{run}{}", edge.name());
        self.step(&name, wg, grid, &bufs, "", &body)
    }

    /// A clamped or periodic stencil over an earlier output, mostly at its writer's
    /// workgroup size.
    fn edge_stencil(&mut self, edge: Edge) -> Result<(), Problem> {
        let (src, dst, extra) = self.pick_stencil();
        let wg = self.stencil_wg(&src);
        self.stencil("", edge, (&src, &dst, extra.as_deref()), wg)
    }

    /// 2 to 8 stencil steps alternating between two buffers, A -> B, B -> A, ...: one edge
    /// form for most of the run, one workgroup size for most steps.
    fn ping_pong(&mut self) -> Result<(), Problem> {
        let (a, b, extra) = self.pick_stencil();
        let wg = self.stencil_wg(&a);
        let edge = self.rng.pick(&[Edge::Clamped, Edge::Periodic, Edge::Open]);
        let len = 2 + self.rng.below(7);
        for j in 0..len {
            let (src, dst) = if j % 2 == 0 { (&a, &b) } else { (&b, &a) };
            let e = if self.rng.chance(1, 4) {
                self.rng.pick(&[Edge::Clamped, Edge::Periodic, Edge::Open])
            } else {
                edge
            };
            let w = if self.rng.chance(1, 8) {
                self.rng.pick(&MAP_SIZES)
            } else {
                wg
            };
            self.stencil("pingpong_", e, (src, dst, extra.as_deref()), w)?;
        }
        Ok(())
    }
}

/// The pipeline of `seed`: 2 to 6 steps of the first kinds, then up to 3 more actions
/// (a clamped or periodic stencil, one ping-pong run of 2 to 8 stencil steps, or a step of
/// the first kinds) over 3 to 5 data buffers of 100 to 5000 `u32` elements (one count per
/// pipeline), all buffers random. Errors only when a generated step does not parse, which is
/// a bug of this generator.
pub fn random_pipeline(seed: u64) -> Result<Pipeline, Problem> {
    let mut rng = Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15);
    let n = 100 + rng.below(4900);
    let nbufs = 3 + rng.below(3);
    let mut b = Builder {
        rng,
        n,
        data: Vec::new(),
        small: Vec::new(),
        buffers: Vec::new(),
        steps: Vec::new(),
    };
    for d in 0..nbufs {
        let name = format!("d{d}");
        b.buffer(name.clone(), n);
        b.data.push(Buf {
            name,
            len: n,
            writer_wg: None,
        });
    }
    let steps = 2 + b.rng.below(5);
    for _ in 0..steps {
        b.first_kind()?;
    }
    // Drawn after the first part, which therefore stays what it was before these kinds.
    let more = b.rng.below(4);
    let mut ping_pong = false;
    for _ in 0..more {
        match b.rng.below(7) {
            0 | 1 => b.edge_stencil(Edge::Clamped)?,
            2 | 3 => b.edge_stencil(Edge::Periodic)?,
            // One run per pipeline keeps pipelines small (at most 6 + 8 + 2 steps).
            4 | 5 if !ping_pong => {
                ping_pong = true;
                b.ping_pong()?
            }
            _ => b.first_kind()?,
        }
    }
    Ok(Pipeline {
        name: format!("fuzz_pipeline_{seed:016x}"),
        doc: Some(format!(
            "generated by `vyrescope selftest --fuzz-pipelines 1 --seed {seed}`"
        )),
        buffers: b.buffers,
        steps: b.steps,
    })
}
