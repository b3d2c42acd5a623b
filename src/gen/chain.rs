//! Random chains of window steps for the recomputed (halo) form (`megakernel::halo`): the
//! pipeline fuzzer runs them recomputed against the steps one by one.
//!
//! A chain has 2 to 8 steps over one domain: one-dimensional (64 to 3063 elements, workgroups
//! of 32 to 256) or two-dimensional (`W x H` covered exactly by workgroups of 8x8 to 32x4).
//! Each step reads the previous step's output at its own element and at offsets up to its
//! own radius along each axis (0 to 3 in 1-D, 0 to 2 per axis in 2-D, drawn per step: mixed
//! radii), each axis with its own boundary, drawn per step: clamped (`max`/`min`), periodic
//! (`rem` by the extent) or open (a read past the buffer loads 0; in 2-D an open read along
//! x past the row's end reads the next row, as a linear index does). Some steps also read a
//! right-hand side that no step writes, some end invocations past the domain with an early
//! `return`. The steps either ping-pong between two buffers or write a new buffer each, the
//! intermediates `transient`; elements are `f32` or `u32`. The same seed gives the same chain.

use serde_json::{json, Value};

use crate::ir::{
    parse_program, ElemType, Fill, InputSource, InputSpec, Pipeline, PipelineBuffer, Step,
};
use crate::util::Problem;

use super::Rng;

#[derive(Clone, Copy)]
enum Edge {
    Clamped,
    Periodic,
    Open,
}

/// One read of `src` along one axis, `d` elements from coordinate `c` (`c` and `n` are
/// expressions: the coordinate and the extent).
fn tap(edge: Edge, c: &Value, d: i64, n: &Value) -> Value {
    let k = d.unsigned_abs();
    match (edge, d < 0) {
        (Edge::Clamped, true) => json!({"sub": [{"max": [c, k]}, k]}),
        (Edge::Clamped, false) => json!({"min": [{"add": [c, k]}, {"sub": [n, 1]}]}),
        (Edge::Periodic, true) => json!({"rem": [{"sub": [{"add": [c, n]}, k]}, n]}),
        (Edge::Periodic, false) => json!({"rem": [{"add": [c, k]}, n]}),
        (Edge::Open, true) => json!({"sub": [c, k]}),
        (Edge::Open, false) => json!({"add": [c, k]}),
    }
}

/// Keys that name what an object is: written first (a statement's kind is its first key).
const KIND_KEYS: [&str; 6] = ["let", "store", "if", "return", "load", "format"];

/// `v` as JSON text with each object's kind key first (`serde_json` sorts keys).
fn ordered(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_by_key(|k| (!KIND_KEYS.contains(&k.as_str()), k.as_str()));
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}: {}", Value::from(k.as_str()), ordered(&m[*k])))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(ordered).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

struct Chain {
    rng: Rng,
    two_d: bool,
    /// `[W, H]`.
    domain: [u32; 2],
    wg: [u32; 2],
    float: bool,
}

impl Chain {
    fn edge(&mut self) -> Edge {
        self.rng.pick(&[Edge::Clamped, Edge::Periodic, Edge::Open])
    }

    /// Step `k`'s Program: `dst = f(src near the element) (+ rhs)`.
    fn program(&mut self, k: usize, rhs: bool) -> Result<crate::ir::Program, Problem> {
        let [w, h] = self.domain;
        let (rx, ry) = if self.two_d {
            (self.rng.below(3) as i64, self.rng.below(3) as i64)
        } else {
            (self.rng.below(4) as i64, 0)
        };
        let (ex, ey) = (self.edge(), self.edge());
        let x = json!({"gid": "x"});
        let y = json!({"gid": "y"});
        let nx = if self.two_d {
            json!(w)
        } else {
            json!({"len": "src"})
        };
        let ny = json!(h);
        let at = |xi: Value, yi: Value| {
            if self.two_d {
                json!({"load": "src", "index": {"add": [{"mul": [yi, w]}, xi]}})
            } else {
                json!({"load": "src", "index": xi})
            }
        };
        let mut terms = vec![at(json!("x"), json!("y"))];
        for d in 1..=rx {
            for s in [-d, d] {
                terms.push(at(tap(ex, &json!("x"), s, &nx), json!("y")));
            }
        }
        for d in 1..=ry {
            for s in [-d, d] {
                terms.push(at(json!("x"), tap(ey, &json!("y"), s, &ny)));
            }
        }
        let own = if self.two_d {
            json!({"add": [{"mul": ["y", w]}, "x"]})
        } else {
            json!("x")
        };
        if rhs {
            terms.push(json!({"load": "rhs", "index": own.clone()}));
        }
        let mut sum = terms.remove(0);
        for t in terms {
            sum = json!({"add": [sum, t]});
        }
        let value = if self.float {
            json!({"mul": [sum, 0.25]})
        } else {
            json!({"xor": [sum, {"shr": [sum, 3]}]})
        };
        let inside = if self.two_d {
            json!({"land": [{"lt": ["x", w]}, {"lt": ["y", h]}]})
        } else {
            json!({"lt": ["x", {"len": "dst"}]})
        };
        let mut body = vec![
            json!({"let": "x", "value": x}),
            json!({"let": "y", "value": y}),
        ];
        let store = json!({"store": "dst", "index": own, "value": value});
        if self.rng.chance(1, 3) {
            body.push(json!({"if": {"lnot": inside}, "then": [{"return": {}}]}));
            body.push(store);
        } else {
            body.push(json!({"if": inside, "then": [store]}));
        }
        let ty = if self.float { "f32" } else { "u32" };
        let mut buffers = vec![
            json!({"name": "src", "binding": 0, "access": "read", "type": ty}),
            json!({"name": "dst", "binding": 1, "access": "write", "type": ty}),
        ];
        if rhs {
            buffers.push(json!({"name": "rhs", "binding": 2, "access": "read", "type": ty}));
        }
        let name = format!("chain_step{k}");
        let text = ordered(&json!({
            "format": 1,
            "name": name,
            "workgroup_size": [self.wg[0], self.wg[1], 1],
            "buffers": buffers,
            "body": body,
        }));
        parse_program(&text, &name)
            .map_err(|e| Problem::bug(format!("generated chain step {k} does not parse: {e}")))
    }

    fn buffer(&mut self, name: &str, transient: bool) -> PipelineBuffer {
        let seed = self.rng.next_u64() % 1_000_000;
        PipelineBuffer {
            name: name.to_string(),
            elem: if self.float {
                ElemType::F32
            } else {
                ElemType::U32
            },
            contents: InputSpec {
                len: Some(u64::from(self.domain[0]) * u64::from(self.domain[1])),
                source: InputSource::Fill(Fill::Random {
                    seed,
                    range: Some(if self.float {
                        (-1.0, 1.0)
                    } else {
                        (0.0, 1.0e6)
                    }),
                }),
            },
            transient,
        }
    }
}

/// The chain of `seed` (see the module docs). Errors only when a generated step does not
/// parse, which is a bug of this generator.
pub fn random_window_chain(seed: u64) -> Result<Pipeline, Problem> {
    let mut rng = Rng::new(seed ^ 0x0c4a_1e5e_ed00_0001);
    let two_d = rng.chance(1, 3);
    let (wg, domain, grid) = if two_d {
        let wg = rng.pick(&[[8u32, 8u32], [16, 8], [32, 4], [16, 16]]);
        let g = [2 + rng.below(7) as u32, 2 + rng.below(7) as u32];
        (wg, [wg[0] * g[0], wg[1] * g[1]], g)
    } else {
        let wg = rng.pick(&[32u32, 64, 128, 256]);
        let n = 64 + rng.below(3000) as u32;
        ([wg, 1], [n, 1], [n.div_ceil(wg), 1])
    };
    let float = rng.chance(3, 4);
    let steps = 2 + rng.below(7);
    let ping_pong = rng.chance(1, 2);
    let mut c = Chain {
        rng,
        two_d,
        domain,
        wg,
        float,
    };
    let mut buffers = Vec::new();
    let names: Vec<String> = if ping_pong {
        vec!["a".into(), "b".into()]
    } else {
        (0..=steps).map(|i| format!("t{i}")).collect()
    };
    for (i, n) in names.iter().enumerate() {
        let transient = !ping_pong && i > 0 && i < steps;
        buffers.push(c.buffer(n, transient));
    }
    let with_rhs = c.rng.chance(1, 3);
    if with_rhs {
        buffers.push(c.buffer("f", false));
    }
    let mut out = Vec::with_capacity(steps);
    for k in 0..steps {
        let rhs = with_rhs && c.rng.chance(1, 2);
        let program = c.program(k, rhs)?;
        let (src, dst) = if ping_pong {
            (names[k % 2].clone(), names[(k + 1) % 2].clone())
        } else {
            (names[k].clone(), names[k + 1].clone())
        };
        let mut bind = vec![("src".to_string(), src), ("dst".to_string(), dst)];
        if rhs {
            bind.push(("rhs".to_string(), "f".to_string()));
        }
        out.push(Step {
            program,
            program_path: None,
            bind,
            workgroup_size: None,
            grid: Some([grid[0], grid[1], 1]),
            elements: None,
        });
    }
    Ok(Pipeline {
        name: format!("fuzz_chain_{seed:016x}"),
        doc: Some(format!(
            "generated by `vyrescope selftest --fuzz-pipelines 1 --seed {seed}` (its window chain)"
        )),
        buffers,
        steps: out,
    })
}
