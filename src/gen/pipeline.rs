//! Random pipelines for `selftest --fuzz-pipelines` and the fused-versus-separate property
//! tests: chains and DAGs of race-free steps over shared `u32` buffers, with random element
//! counts and workgroup sizes (mixed in one pipeline), neighbour reads, block reductions with
//! workgroup barriers, one-workgroup folds (a 32-thread subgroup reduction or a single thread),
//! broadcasts of a fold's result, atomic histograms and lookups into them.
//!
//! Every step is race-free on its own (it never reads the buffer it writes, except through
//! commutative atomics), so its result does not depend on thread order; what the steps share
//! is ordered only by the pipeline, which is what a megakernel plan must respect. A step may
//! overwrite a buffer an earlier step read (an anti-dependence) and read any earlier output
//! (so the steps form a DAG, not only a chain). The same seed always gives the same pipeline.

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
}

/// Workgroup sizes of elementwise steps (96: not a power of two; 1: one thread per workgroup).
const MAP_SIZES: [u32; 6] = [1, 32, 64, 96, 128, 256];
/// Workgroup sizes of block reductions (powers of two: a tree of halvings).
const REDUCE_SIZES: [u32; 4] = [32, 64, 128, 256];

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
        });
        Ok(())
    }
}

/// The pipeline of `seed`: 2 to 6 steps over 3 to 5 data buffers of 100 to 5000 `u32`
/// elements (one count per pipeline), all buffers random. Errors only when a generated step
/// does not parse, which is a bug of this generator.
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
        b.data.push(Buf { name, len: n });
    }
    let steps = 2 + b.rng.below(5);
    for _ in 0..steps {
        match b.rng.below(6) {
            0 | 1 => b.map()?,
            2 => b.neighbour()?,
            3 => b.block_reduce()?,
            4 => b.fold()?,
            _ => b.histogram()?,
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
