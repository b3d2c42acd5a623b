//! Fused emission against the meaning of a pipeline: for many small pipelines (chains,
//! workgroup neighbour dependences, reduce + normalize over a grid barrier, returns, loops,
//! atomics, different grids, persistent grids smaller than the steps' grids) the steps run one
//! by one on the reference interpreter, the fused Program runs once, and every pipeline buffer
//! must end bit for bit the same, from random inputs. The fused PTX must assemble with ptxas.

use std::collections::HashMap;

use vyrescope::emit::ptxas::assemble;
use vyrescope::emit::{emit, EmitOptions};
use vyrescope::inputs::contents::fill_bytes;
use vyrescope::inputs::{HostBuffer, LaunchShape};
use vyrescope::interp;
use vyrescope::ir::{
    parse_program, BarrierScope, ElemType, Fill, InputSource, InputSpec, Pipeline, PipelineBuffer,
    Program, Step, StmtKind,
};
use vyrescope::megakernel::{fuse_group, DepKind, FusedGroupSpec, FusedKernel, Separation};

/// A Program from its buffers and body (JSON text).
pub(crate) fn prog(name: &str, wg: [u32; 3], buffers: &str, body: &str) -> Program {
    let text = format!(
        r#"{{"format": 1, "name": "{name}", "workgroup_size": {wg:?},
            "buffers": [{buffers}], "body": [{body}]}}"#
    );
    parse_program(&text, name).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"))
}

/// A step: its Program, `(program buffer, pipeline buffer)` bindings and its grid.
pub(crate) type CaseStep = (Program, Vec<(&'static str, &'static str)>, [u32; 3]);

/// One pipeline to check: buffers (name, type, length, fill), steps (Program, bind, grid) and
/// the separation after each step but the last.
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) buffers: Vec<(&'static str, ElemType, usize, Fill)>,
    pub(crate) steps: Vec<CaseStep>,
    pub(crate) seps: Vec<DepKind>,
    /// Transient pipeline buffers: nobody reads their final contents, so they are not compared.
    pub(crate) transient: Vec<&'static str>,
}

pub(crate) fn rnd(seed: u64, lo: f64, hi: f64) -> Fill {
    Fill::Random {
        seed,
        range: Some((lo, hi)),
    }
}

impl Case {
    pub(crate) fn pipeline(&self) -> (Pipeline, Vec<LaunchShape>) {
        let buffers = self
            .buffers
            .iter()
            .map(|&(name, elem, len, fill)| PipelineBuffer {
                name: name.into(),
                elem,
                contents: InputSpec {
                    len: Some(len as u64),
                    source: InputSource::Fill(fill),
                },
                transient: self.transient.contains(&name),
            })
            .collect();
        let mut shapes = Vec::new();
        let steps = self
            .steps
            .iter()
            .map(|(p, bind, grid)| {
                shapes.push(LaunchShape {
                    workgroup_size: p.workgroup_size,
                    grid: *grid,
                });
                Step {
                    program: p.clone(),
                    program_path: None,
                    bind: bind.iter().map(|&(a, b)| (a.into(), b.into())).collect(),
                    workgroup_size: None,
                    grid: Some(*grid),
                    elements: None,
                }
            })
            .collect();
        let pipeline = Pipeline {
            name: self.name.into(),
            doc: None,
            buffers,
            steps,
        };
        (pipeline, shapes)
    }

    pub(crate) fn spec(&self, persistent: Option<u32>) -> FusedGroupSpec {
        FusedGroupSpec {
            steps: (0..self.steps.len()).collect(),
            separations: self
                .seps
                .iter()
                .enumerate()
                .map(|(i, &kind)| Separation {
                    after_step: i,
                    kind,
                    reason: "test".into(),
                })
                .collect(),
            persistent_blocks: persistent,
            dataflow: None,
            implied: Vec::new(),
            no_prefetch: false,
            halo: None,
        }
    }

    /// Initial pipeline buffer contents (random unless the case says zeros).
    pub(crate) fn initial(&self) -> HashMap<String, (ElemType, Vec<u8>)> {
        self.buffers
            .iter()
            .map(|&(name, elem, len, fill)| {
                let data = fill_bytes(name, elem, len, fill).expect("fill");
                (name.to_string(), (elem, data))
            })
            .collect()
    }
}

/// Runs `program` over `shape` with host buffer `name` taken from pipeline buffer `bind(name)`
/// and writes the results back.
pub(crate) fn run_bound(
    program: &Program,
    shape: &LaunchShape,
    bind: &dyn Fn(&str) -> String,
    mem: &mut HashMap<String, (ElemType, Vec<u8>)>,
) {
    let mut bufs: Vec<HostBuffer> = program
        .host_buffers()
        .into_iter()
        .map(|b| HostBuffer {
            name: b.name.clone(),
            elem: b.elem,
            access: b.access,
            binding: b.binding.unwrap_or(0),
            data: mem[&bind(&b.name)].1.clone(),
        })
        .collect();
    interp::run(program, shape, &mut bufs)
        .unwrap_or_else(|e| panic!("interpreting {}: {e}", program.name));
    for b in bufs {
        mem.get_mut(&bind(&b.name)).expect("bound").1 = b.data;
    }
}

pub(crate) fn check_ptx(k: &FusedKernel, what: &str) {
    let Some(ptxas) = crate::support::tools::ptxas(what) else {
        return;
    };
    let kernel = emit(&k.program, &EmitOptions::for_program(&k.program))
        .unwrap_or_else(|e| panic!("{what}: emit: {e}"));
    assemble(&ptxas, &kernel.ptx, 90, false).unwrap_or_else(|e| panic!("{what}: ptxas: {e}"));
}

/// Every pipeline buffer after the steps of `case` ran one by one on the interpreter (the
/// pipeline's meaning); panics if that changes nothing.
pub(crate) fn expected(case: &Case) -> HashMap<String, (ElemType, Vec<u8>)> {
    let (pipeline, shapes) = case.pipeline();
    let mut expected = case.initial();
    for (k, step) in pipeline.steps.iter().enumerate() {
        run_bound(
            &step.program,
            &shapes[k],
            &|n| step.bound(n).expect("bound").to_string(),
            &mut expected,
        );
    }
    // The inputs must change, or the comparison proves little.
    let initial = case.initial();
    assert!(
        expected.iter().any(|(n, v)| initial[n] != *v),
        "{}: the pipeline writes nothing",
        case.name
    );
    expected
}

/// Runs the fused kernel `k` of `case` once on the interpreter: the first pipeline buffer
/// (and element) that differs from `expected`, if any.
pub(crate) fn first_difference(
    case: &Case,
    k: &FusedKernel,
    expected: &HashMap<String, (ElemType, Vec<u8>)>,
) -> Option<String> {
    let mut got = case.initial();
    run_bound(&k.program, &k.shape, &|n| n.to_string(), &mut got);
    for (name, (elem, want)) in expected {
        if case.transient.contains(&name.as_str()) {
            continue;
        }
        let have = &got[name].1;
        if have != want {
            let size = elem.size_bytes();
            let at = (0..want.len() / size)
                .find(|&i| have[i * size..(i + 1) * size] != want[i * size..(i + 1) * size])
                .unwrap_or(0);
            return Some(format!("buffer `{name}` differs first at element {at}"));
        }
    }
    None
}

/// Fuses `case` with each persistent setting and compares with the separate run.
pub(crate) fn check(case: &Case, persistent: &[Option<u32>]) {
    let (pipeline, shapes) = case.pipeline();
    let expected = expected(case);
    for &p in persistent {
        let what = format!("{} (persistent {p:?})", case.name);
        let k =
            fuse_group(&pipeline, &shapes, &case.spec(p)).unwrap_or_else(|e| panic!("{what}: {e}"));
        if let Some(p) = p {
            assert_eq!(k.shape.grid, [p, 1, 1], "{what}");
        }
        if let Some(d) = first_difference(case, &k, &expected) {
            panic!(
                "{what}: {d}\nfused program:\n{}",
                vyrescope::ir::print::print_program(&k.program).text_with_gutter()
            );
        }
        check_ptx(&k, &what);
    }
}

pub(crate) const PERSISTENT: [Option<u32>; 4] = [None, Some(3), Some(7), Some(64)];

pub(crate) const WG: [u32; 3] = [32, 1, 1];
/// Elements of the 1-D cases: 40 workgroups of 32, the last one partly idle.
pub(crate) const N: usize = 40 * 32 - 5;
pub(crate) const G40: [u32; 3] = [40, 1, 1];

pub(crate) const F32_IN: &str = r#"{"name": "src", "binding": 0, "access": "read", "type": "f32"},
    {"name": "dst", "binding": 1, "access": "read_write", "type": "f32"}"#;

pub(crate) fn scale2() -> Program {
    prog(
        "scale2",
        WG,
        F32_IN,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "i", "value": {"mul": [{"load": "src", "index": "i"}, 2.0]}}]}"#,
    )
}

pub(crate) fn add1() -> Program {
    // Declares `alive` and `t`, the names the fusion could be tempted to use itself.
    prog(
        "add1",
        WG,
        F32_IN,
        r#"{"let": "alive", "value": {"gid": "x"}},
           {"let": "t", "value": {"load": "src", "index": "alive"}},
           {"if": {"lt": ["alive", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "alive", "value": {"add": ["t", 1.5]}}]}"#,
    )
}

#[test]
fn chain_with_invocation_dependence() {
    let case = Case {
        name: "chain",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(7, -3.0, 3.0)),
            ("y", ElemType::F32, N, rnd(8, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(9, -1.0, 1.0)),
        ],
        steps: vec![
            (scale2(), vec![("src", "x"), ("dst", "y")], G40),
            (add1(), vec![("src", "y"), ("dst", "out")], G40),
            (scale2(), vec![("src", "out"), ("dst", "x")], G40),
        ],
        seps: vec![DepKind::Invocation, DepKind::Invocation],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
}

#[test]
fn workgroup_neighbour_dependence() {
    // Each thread reads its right neighbour (cyclic within the workgroup) of what step 0 wrote.
    let neighbour = prog(
        "neighbour",
        WG,
        F32_IN,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"let": "j", "value": {"add": [{"mul": [{"wgid": "x"}, 32]},
                                          {"rem": [{"add": [{"lid": "x"}, 1]}, 32]}]}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "i", "value": {"fma": [{"load": "src", "index": "j"}, 0.5,
                                                               {"load": "src", "index": "i"}]}}]}"#,
    );
    let case = Case {
        name: "neighbour",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(11, -2.0, 2.0)),
            ("y", ElemType::F32, N, rnd(12, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(13, -1.0, 1.0)),
        ],
        steps: vec![
            (scale2(), vec![("src", "x"), ("dst", "y")], G40),
            (neighbour, vec![("src", "y"), ("dst", "out")], G40),
        ],
        seps: vec![DepKind::Workgroup],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
    // The interpreter runs a workgroup in lockstep, so a missing workgroup barrier would go
    // unnoticed there: check that it sits between the steps, at top level.
    let (pipeline, shapes) = case.pipeline();
    for p in PERSISTENT {
        let k = fuse_group(&pipeline, &shapes, &case.spec(p)).expect("fuses");
        assert_eq!(k.program.body.len(), 3, "step, barrier, step");
        assert_eq!(
            k.program.body[1].kind,
            StmtKind::Barrier(BarrierScope::Workgroup)
        );
    }
    if std::env::var_os("FUSE_DUMP").is_some() {
        let k = fuse_group(&pipeline, &shapes, &case.spec(Some(3))).expect("fuses");
        eprintln!(
            "{}",
            vyrescope::ir::print::print_program(&k.program).text_with_gutter()
        );
    }
}

pub(crate) fn reduce_partials() -> Program {
    prog(
        "reduce_partials",
        WG,
        r#"{"name": "x", "binding": 0, "access": "read", "type": "f32"},
           {"name": "partial", "binding": 1, "access": "write", "type": "f32"},
           {"name": "tile", "access": "workgroup", "type": "f32", "count": 32}"#,
        r#"{"store": "tile", "index": {"lid": "x"}, "value": {"load": "x", "index": {"gid": "x"}}},
           {"barrier": "workgroup"},
           {"loop": "s", "from": 0, "to": 5, "body": [
             {"let": "stride", "value": {"shr": [16, "s"]}},
             {"if": {"lt": [{"lid": "x"}, "stride"]}, "then": [
               {"store": "tile", "index": {"lid": "x"}, "value": {"add": [
                 {"load": "tile", "index": {"lid": "x"}},
                 {"load": "tile", "index": {"add": [{"lid": "x"}, "stride"]}}]}}]},
             {"barrier": "workgroup"}]},
           {"if": {"eq": [{"lid": "x"}, 0]}, "then": [
             {"store": "partial", "index": {"wgid": "x"}, "value": {"load": "tile", "index": 0}}]}"#,
    )
}

#[test]
fn reduce_then_normalize_over_a_grid_barrier() {
    let normalize = prog(
        "normalize",
        WG,
        r#"{"name": "x", "binding": 0, "access": "read", "type": "f32"},
           {"name": "partial", "binding": 1, "access": "read", "type": "f32"},
           {"name": "out", "binding": 2, "access": "write", "type": "f32"},
           {"name": "tile", "access": "workgroup", "type": "f32", "count": 32}"#,
        r#"{"let": "total", "value": 0.0},
           {"loop": "g", "from": 0, "to": {"len": "partial"}, "body": [
             {"assign": "total", "value": {"add": ["total", {"load": "partial", "index": "g"}]}}]},
           {"store": "tile", "index": {"lid": "x"}, "value": "total"},
           {"barrier": "workgroup"},
           {"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "out"}]}, "then": [
             {"store": "out", "index": "i", "value": {"div": [{"load": "x", "index": "i"},
                                                              {"load": "tile", "index": 0}]}}]}"#,
    );
    // The partials buffer is called `s0_tile`, the name step 0's workgroup `tile` would get.
    let case = Case {
        name: "reduce_normalize",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(21, 0.5, 2.0)),
            ("s0_tile", ElemType::F32, 40, rnd(22, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(23, -1.0, 1.0)),
        ],
        steps: vec![
            (
                reduce_partials(),
                vec![("x", "x"), ("partial", "s0_tile")],
                G40,
            ),
            (
                normalize,
                vec![("x", "x"), ("partial", "s0_tile"), ("out", "out")],
                G40,
            ),
        ],
        seps: vec![DepKind::Grid],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
}

#[test]
fn returns_end_only_their_step() {
    // Returns at several depths, inside a loop, and a workgroup-uniform return before a
    // workgroup barrier; the step after must still run for every thread.
    let returns = prog(
        "returns",
        WG,
        F32_IN,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"ge": ["i", {"len": "dst"}]}, "then": [{"return": {}}]},
           {"let": "v", "value": {"load": "src", "index": "i"}},
           {"if": {"lt": ["v", 0.0]}, "then": [
             {"store": "dst", "index": "i", "value": {"neg": "v"}},
             {"return": {}},
             {"store": "dst", "index": "i", "value": 99.0}]},
           {"loop": "k", "from": 0, "to": 8, "body": [
             {"block": [
               {"if": {"eq": [{"rem": [{"add": ["i", "k"]}, 7]}, 0]}, "then": [
                 {"store": "dst", "index": "i", "value": {"mul": ["v", {"cast": "f32", "value": "k"}]}},
                 {"return": {}}]}]},
             {"store": "dst", "index": "i", "value": {"add": [{"load": "dst", "index": "i"}, 1.0]}}]},
           {"store": "dst", "index": "i", "value": {"mul": ["v", 3.0]}}"#,
    );
    let skip_some_workgroups = prog(
        "skip_some",
        WG,
        r#"{"name": "src", "binding": 0, "access": "read", "type": "f32"},
           {"name": "dst", "binding": 1, "access": "read_write", "type": "f32"},
           {"name": "tile", "access": "workgroup", "type": "f32", "count": 32}"#,
        r#"{"if": {"eq": [{"rem": [{"wgid": "x"}, 3]}, 1]}, "then": [{"return": {}}]},
           {"store": "tile", "index": {"lid": "x"}, "value": {"load": "src", "index": {"gid": "x"}}},
           {"barrier": "workgroup"},
           {"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "i", "value": {"add": [
               {"load": "tile", "index": {"rem": [{"add": [{"lid": "x"}, 5]}, 32]}}, 1.0]}}]}"#,
    );
    let case = Case {
        name: "returns",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(31, -2.0, 2.0)),
            ("y", ElemType::F32, N, rnd(32, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(33, -1.0, 1.0)),
            ("out2", ElemType::F32, N, rnd(34, -1.0, 1.0)),
        ],
        steps: vec![
            (returns, vec![("src", "x"), ("dst", "y")], G40),
            (add1(), vec![("src", "y"), ("dst", "out")], G40),
            (
                skip_some_workgroups,
                vec![("src", "out"), ("dst", "out2")],
                G40,
            ),
        ],
        seps: vec![DepKind::Invocation, DepKind::Workgroup],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
}

#[test]
fn atomics_histogram_then_use() {
    let histogram = prog(
        "histogram",
        WG,
        r#"{"name": "x", "binding": 0, "access": "read", "type": "u32"},
           {"name": "counts", "binding": 1, "access": "read_write", "type": "u32"},
           {"name": "top", "binding": 2, "access": "read_write", "type": "u32"}"#,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "x"}]}, "then": [
             {"let": "v", "value": {"load": "x", "index": "i"}},
             {"let": "old", "value": {"atomic": "add", "buffer": "counts", "index": {"rem": ["v", 16]}, "value": 1}},
             {"let": "m", "value": {"atomic": "max", "buffer": "top", "index": 0, "value": "v"}}]}"#,
    );
    let use_counts = prog(
        "use_counts",
        WG,
        r#"{"name": "x", "binding": 0, "access": "read", "type": "u32"},
           {"name": "counts", "binding": 1, "access": "read", "type": "u32"},
           {"name": "top", "binding": 2, "access": "read", "type": "u32"},
           {"name": "y", "binding": 3, "access": "write", "type": "u32"}"#,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "y"}]}, "then": [
             {"let": "v", "value": {"load": "x", "index": "i"}},
             {"store": "y", "index": "i", "value": {"add": [
               {"mul": [{"load": "counts", "index": {"rem": ["v", 16]}}, 1000]},
               {"sub": [{"load": "top", "index": 0}, "v"]}]}}]}"#,
    );
    let case = Case {
        name: "atomics",
        buffers: vec![
            ("x", ElemType::U32, N, rnd(41, 0.0, 100000.0)),
            ("counts", ElemType::U32, 16, rnd(42, 0.0, 50.0)),
            ("top", ElemType::U32, 1, rnd(43, 0.0, 10.0)),
            ("y", ElemType::U32, N, rnd(44, 0.0, 10.0)),
        ],
        steps: vec![
            (
                histogram,
                vec![("x", "x"), ("counts", "counts"), ("top", "top")],
                G40,
            ),
            (
                use_counts,
                vec![("x", "x"), ("counts", "counts"), ("top", "top"), ("y", "y")],
                G40,
            ),
        ],
        seps: vec![DepKind::Grid],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
}

#[test]
fn steps_with_different_grids() {
    // Step 1 covers the data with 13 workgroups in a grid-stride loop (uses `nwg`); step 2 runs
    // a 2-D grid of 5 x 8 workgroups (of the same 32 threads), so `gid.y`, `wgid.y`, `nwg.x`
    // and `nwg.y` must be rebuilt from the virtual workgroup id.
    let grid_stride = prog(
        "grid_stride",
        WG,
        r#"{"name": "a", "binding": 0, "access": "read", "type": "f32"},
           {"name": "b", "binding": 1, "access": "read", "type": "f32"},
           {"name": "dst", "binding": 2, "access": "write", "type": "f32"}"#,
        r#"{"let": "stride", "value": {"mul": [{"nwg": "x"}, 32]}},
           {"loop": "r", "from": 0, "to": 4, "body": [
             {"let": "j", "value": {"add": [{"gid": "x"}, {"mul": ["r", "stride"]}]}},
             {"if": {"lt": ["j", {"len": "dst"}]}, "then": [
               {"store": "dst", "index": "j", "value": {"sub": [{"load": "a", "index": "j"},
                                                                {"load": "b", "index": "j"}]}}]}]}"#,
    );
    let two_d = prog(
        "two_d",
        WG,
        F32_IN,
        r#"{"let": "idx", "value": {"add": [{"mul": [{"gid": "y"}, {"mul": [{"nwg": "x"}, 32]}]}, {"gid": "x"}]}},
           {"if": {"lt": ["idx", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "idx", "value": {"fma": [
               {"load": "src", "index": "idx"},
               {"cast": "f32", "value": {"add": [{"wgid": "y"}, {"wgid": "x"}]}},
               {"cast": "f32", "value": {"nwg": "y"}}]}}]}"#,
    );
    let case = Case {
        name: "grids",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(51, -3.0, 3.0)),
            ("y", ElemType::F32, N, rnd(52, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(53, -1.0, 1.0)),
            ("out2", ElemType::F32, N, rnd(54, -1.0, 1.0)),
        ],
        steps: vec![
            (scale2(), vec![("src", "x"), ("dst", "y")], G40),
            (
                grid_stride,
                vec![("a", "y"), ("b", "x"), ("dst", "out")],
                [13, 1, 1],
            ),
            (two_d, vec![("src", "out"), ("dst", "out2")], [5, 8, 1]),
        ],
        seps: vec![DepKind::Grid, DepKind::Grid],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
}

#[test]
fn two_dimensional_workgroups_on_a_persistent_grid() {
    let wg = [8, 4, 1];
    let body = r#"{"let": "w", "value": {"mul": [{"nwg": "x"}, 8]}},
        {"let": "idx", "value": {"add": [{"mul": [{"gid": "y"}, "w"]}, {"gid": "x"}]}},
        {"if": {"lt": ["idx", {"len": "dst"}]}, "then": [
          {"store": "dst", "index": "idx", "value": {"add": [{"load": "src", "index": "idx"},
            {"cast": "f32", "value": {"add": [{"mul": [{"lid": "y"}, 100]}, {"wgid": "y"}]}}]}}]}"#;
    let a = prog("two_d_a", wg, F32_IN, body);
    let case = Case {
        name: "wg2d",
        buffers: vec![
            ("x", ElemType::F32, 1200, rnd(61, -3.0, 3.0)),
            ("y", ElemType::F32, 1200, rnd(62, -1.0, 1.0)),
            ("out", ElemType::F32, 1200, rnd(63, -1.0, 1.0)),
        ],
        steps: vec![
            (a.clone(), vec![("src", "x"), ("dst", "y")], [5, 8, 1]),
            (a, vec![("src", "y"), ("dst", "out")], [5, 8, 1]),
        ],
        seps: vec![DepKind::Invocation],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
}

#[test]
fn node_origin_maps_back_to_the_steps() {
    let case = Case {
        name: "origin",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(71, -3.0, 3.0)),
            ("y", ElemType::F32, N, rnd(72, -1.0, 1.0)),
        ],
        steps: vec![
            (scale2(), vec![("src", "x"), ("dst", "y")], G40),
            (add1(), vec![("src", "y"), ("dst", "x")], G40),
        ],
        seps: vec![DepKind::Invocation],
        transient: vec![],
    };
    let (pipeline, shapes) = case.pipeline();
    for p in [None, Some(3)] {
        let k = fuse_group(&pipeline, &shapes, &case.spec(p)).expect("fuses");
        let mut seen = 0;
        for (fused, (step, orig)) in &k.node_origin {
            let f = k.program.find_stmt(fused).expect("fused node exists");
            let o = pipeline.steps[*step]
                .program
                .find_stmt(orig)
                .expect("origin exists");
            assert_eq!(
                std::mem::discriminant(&f.kind),
                std::mem::discriminant(&o.kind),
                "{fused} -> step {step} {orig}"
            );
            seen += 1;
        }
        let total: usize = pipeline
            .steps
            .iter()
            .map(|s| {
                let mut n = 0;
                s.program.walk_stmts(&mut |_| n += 1);
                n
            })
            .sum();
        assert_eq!(seen, total, "every step statement is mapped once");
        assert_eq!(k.buffers, vec!["x".to_string(), "y".to_string()]);
        let launch = k.launch(&pipeline).expect("launch");
        assert_eq!(launch.buffers, vec![0, 1]);
        assert_eq!(launch.shape, k.shape);
        // x is read by step 0 and written by step 1: read_write in the fused Program.
        assert!(k.program.buffers[0].access.is_writable());
    }
}

#[test]
fn unfusable_groups_are_errors() {
    let other_wg = prog(
        "other_wg",
        [8, 8, 1],
        F32_IN,
        r#"{"store": "dst", "index": {"gid": "x"}, "value": 1.0}"#,
    );
    let mut case = Case {
        name: "bad",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(81, -3.0, 3.0)),
            ("y", ElemType::F32, N, rnd(82, -1.0, 1.0)),
        ],
        steps: vec![
            (scale2(), vec![("src", "x"), ("dst", "y")], G40),
            (other_wg, vec![("src", "y"), ("dst", "x")], [20, 1, 1]),
        ],
        seps: vec![DepKind::Grid],
        transient: vec![],
    };
    let (pipeline, shapes) = case.pipeline();
    let e = fuse_group(&pipeline, &shapes, &case.spec(None)).expect_err("2-D size next to 1-D");
    assert!(
        e.to_string().contains("multi-dimensional") && e.to_string().contains("Fix:"),
        "{e}"
    );

    // A step with its own grid barrier cannot run on virtual workgroups.
    case.steps[1] = (
        prog(
            "own_grid_barrier",
            WG,
            F32_IN,
            r#"{"store": "dst", "index": {"gid": "x"}, "value": 1.0},
               {"barrier": "grid"},
               {"store": "dst", "index": {"gid": "x"}, "value": {"load": "src", "index": 0}}"#,
        ),
        vec![("src", "y"), ("dst", "x")],
        G40,
    );
    let (pipeline, shapes) = case.pipeline();
    let e = fuse_group(&pipeline, &shapes, &case.spec(Some(3))).expect_err("grid barrier");
    assert!(e.to_string().contains("grid barrier at body[1]"), "{e}");
    // ...but it can when the step keeps its own grid.
    fuse_group(&pipeline, &shapes, &case.spec(None)).expect("same grid: fuses");

    // Invocation order between different grids means nothing unless both are one-dimensional.
    case.steps[1].2 = [4, 5, 1];
    let (pipeline, shapes) = case.pipeline();
    let mut spec = case.spec(None);
    spec.separations[0].kind = DepKind::Invocation;
    let e = fuse_group(&pipeline, &shapes, &spec).expect_err("invocation across grids");
    assert!(e.to_string().contains("different grids"), "{e}");

    // Separations that do not match the steps.
    let mut spec = case.spec(None);
    spec.separations.clear();
    let e = fuse_group(&pipeline, &shapes, &spec).expect_err("separations");
    assert!(e.to_string().contains("separations"), "{e}");
}

#[test]
fn separate_launches_index_the_pipeline_buffers() {
    let case = Case {
        name: "launches",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(91, -3.0, 3.0)),
            ("y", ElemType::F32, N, rnd(92, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(93, -1.0, 1.0)),
        ],
        steps: vec![
            (scale2(), vec![("src", "x"), ("dst", "out")], G40),
            (add1(), vec![("src", "out"), ("dst", "y")], [20, 1, 1]),
        ],
        seps: vec![DepKind::Grid],
        transient: vec![],
    };
    let (pipeline, shapes) = case.pipeline();
    let l = vyrescope::runtime::pipeline::separate_launches(&pipeline, &shapes).expect("launches");
    assert_eq!(l.len(), 2);
    assert_eq!(l[0].buffers, vec![0, 2]);
    assert_eq!(l[1].buffers, vec![2, 1]);
    assert_eq!(l[1].shape.grid, [20, 1, 1]);
    assert!(vyrescope::runtime::pipeline::separate_launches(&pipeline, &shapes[..1]).is_err());
}
