//! Fused emission of the recomputed (halo) form (`crate::megakernel::halo`): one ordinary
//! launch of one block per tile, the steps' cells in shared memory.
//!
//! The Program, for a pass with tile `Tx x Ty`, domain `W x H`, halo `H_i` of step `i` and
//! window `Lx x Ly` (the tile and `H_0` on each side):
//!
//! ```text
//! let f_ox = wgid.x * Tx; let f_oy = wgid.y * Ty           // the tile's first element
//! let f_bx = (f_ox + W - H_0x) % W; let f_by = ...         // the window's first element
//! for each step k (pipeline index) of the pass:
//!   loop f{k}_m over ceil(cells / threads):                // cells: (Tx + 2 H_kx)(Ty + 2 H_ky)
//!     let f{k}_j = lid.x + f{k}_m * threads
//!     if f{k}_j < cells:
//!       f{k}_jx, f{k}_jy: the cell in the window; f{k}_gx, f{k}_gy: its element (mod W, H)
//!       the step's body, with gid.x = f{k}_gx, gid.y = f{k}_gy,
//!         a load of the previous step's output at e -> the window cell of e (past the
//!         buffer: out of the array, so 0, as the step's own load),
//!         its store -> the cell, and to global memory too when the cell is in the tile
//!         (and the domain) and the step's output is needed after the pass
//!   barrier(workgroup)                                     // between steps
//! ```
//!
//! The shared arrays alternate between two per element type: step `i` writes array `i % 2`
//! and reads `(i - 1) % 2`, and the barrier between steps orders both. Lengths (`len`) become
//! literals, since a buffer that lives only in the window is not a parameter of the kernel.

use std::collections::{HashMap, HashSet};

use super::rewrite::{self, Renamer, VirtualIds};
use super::{err, renumber, tag_origin, FuseError, FusedKernel};
use crate::inputs::LaunchShape;
use crate::ir::{
    Access, Axis, BarrierScope, BinOp, BufferDecl, Builtin, Expr, NodeId, Pipeline, Program, Stmt,
    StmtKind,
};
use crate::megakernel::halo::{check, HaloSpec, Pass};
use crate::megakernel::mixed::StepLayout;
use crate::megakernel::FusedGroupSpec;

use super::{bin, bool_lit, if_, let_, synth, u32_lit};

fn var(n: &str) -> Expr {
    Expr::Var(n.to_string())
}

/// Builds the recomputed kernel of `spec.steps` with `halo`, after [`check`] accepts it.
pub(super) fn fuse_halo(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    spec: &FusedGroupSpec,
    halo: &HaloSpec,
    group: &str,
) -> Result<FusedKernel, FuseError> {
    let pass = check(pipeline, shapes, &spec.steps, halo).map_err(|e| {
        err(
            format!("{group}: the recomputed form is refused: {}", e.message),
            e.fix,
        )
    })?;
    // Host buffers: those read from global memory and those written to it, in pipeline order.
    let mut read: HashSet<&str> = HashSet::new();
    for (i, w) in pass.windows.iter().enumerate() {
        for (_, b) in &w.reads {
            if i == 0 || *b != pass.windows[i - 1].out {
                read.insert(b);
            }
        }
    }
    let written: HashSet<&str> = pass
        .windows
        .iter()
        .zip(&pass.writes_global)
        .filter(|(_, g)| **g)
        .map(|(w, _)| w.out.as_str())
        .collect();
    let mut decls = Vec::new();
    let mut buffers = Vec::new();
    for b in &pipeline.buffers {
        let access = if written.contains(b.name.as_str()) {
            Access::Write
        } else if read.contains(b.name.as_str()) {
            Access::Read
        } else {
            continue;
        };
        decls.push(BufferDecl {
            name: b.name.clone(),
            binding: Some(decls.len() as u32),
            access,
            elem: b.elem,
            count: None,
        });
        buffers.push(b.name.clone());
    }
    let mut taken: HashSet<String> = pipeline.buffers.iter().map(|b| b.name.clone()).collect();
    let window = halo.window();
    let cells = window[0] * window[1];
    // Per step: the shared array it writes.
    let mut arrays: HashMap<(usize, &str), String> = HashMap::new();
    let mut out_array = Vec::new();
    for (i, w) in pass.windows.iter().enumerate() {
        let key = (i % 2, w.elem.name());
        let name = arrays.entry(key).or_insert_with(|| {
            let mut n = format!("h{}_{}", i % 2, w.elem.name());
            while taken.contains(&n) {
                n.push('_');
            }
            taken.insert(n.clone());
            decls.push(BufferDecl {
                name: n.clone(),
                binding: None,
                access: Access::Workgroup,
                elem: w.elem,
                count: Some(cells),
            });
            n.clone()
        });
        out_array.push(name.clone());
    }
    let emit = Emit {
        pipeline,
        shapes,
        halo,
        pass: &pass,
        group,
    };
    let mut body = emit.prologue();
    for (i, &k) in spec.steps.iter().enumerate() {
        let input = (i > 0).then(|| out_array[i - 1].as_str());
        body.push(emit.step(i, k, input, &out_array[i])?);
        if i + 1 < spec.steps.len() {
            body.push(synth(StmtKind::Barrier(BarrierScope::Workgroup)));
        }
    }
    let node_origin = renumber(&mut body);
    let grid = halo.grid();
    let shape = LaunchShape {
        workgroup_size: [halo.threads, 1, 1],
        grid: [grid[0], grid[1], 1],
    };
    shape
        .check()
        .map_err(|e| err(format!("{group}: recomputed launch: {}", e.message), e.fix))?;
    let first = spec.steps.first().copied().unwrap_or(0);
    let last = spec.steps.last().copied().unwrap_or(0);
    let program = Program {
        name: format!("{}_halo_{first}_{last}", pipeline.name),
        doc: Some(format!(
            "steps {:?} of pipeline `{}` recomputed over {}x{} tiles with their halo",
            spec.steps, pipeline.name, halo.tile[0], halo.tile[1]
        )),
        workgroup_size: shape.workgroup_size,
        buffers: decls,
        body,
        run: Some(super::run_spec(pipeline, &buffers, &shape)),
    };
    let info = super::check_valid(&program, &node_origin, group)?;
    let kernel = FusedKernel {
        program,
        info,
        shape,
        buffers,
        node_origin,
        forwarding: Default::default(),
        layouts: vec![StepLayout::Whole; spec.steps.len()],
        steps: spec.steps.clone(),
    };
    Ok(kernel)
}

struct Emit<'a> {
    pipeline: &'a Pipeline,
    shapes: &'a [LaunchShape],
    halo: &'a HaloSpec,
    pass: &'a Pass,
    group: &'a str,
}

impl Emit<'_> {
    /// The tile's and the window's first element.
    fn prologue(&self) -> Vec<Stmt> {
        let h = self.halo;
        let h0 = h.halo_of(0);
        let wgid = |a| Expr::Builtin(Builtin::WorkgroupId(a));
        let base = |origin: &str, n: u32, h0: u32| {
            bin(
                BinOp::Rem,
                bin(BinOp::Add, var(origin), u32_lit(n - h0)),
                u32_lit(n),
            )
        };
        vec![
            let_("f_ox", bin(BinOp::Mul, wgid(Axis::X), u32_lit(h.tile[0]))),
            let_("f_oy", bin(BinOp::Mul, wgid(Axis::Y), u32_lit(h.tile[1]))),
            let_("f_bx", base("f_ox", h.domain[0], h0[0])),
            let_("f_by", base("f_oy", h.domain[1], h0[1])),
        ]
    }

    /// Step `i` of the pass (pipeline step `k`): its loop over the cells it computes.
    fn step(
        &self,
        i: usize,
        k: usize,
        input: Option<&str>,
        output: &str,
    ) -> Result<Stmt, FuseError> {
        let h = self.halo;
        let w = &self.pass.windows[i];
        let h0 = h.halo_of(0);
        let hi = h.halo_of(i);
        let lo = [h0[0] - hi[0], h0[1] - hi[1]];
        let wx = h.tile[0] + 2 * hi[0];
        let cells = wx * (h.tile[1] + 2 * hi[1]);
        let trips = cells.div_ceil(h.threads);
        let p = |n: &str| format!("f{k}_{n}");
        let step = &self.pipeline.steps[k];
        // Program buffer -> pipeline buffer.
        let names: HashMap<String, String> = step
            .program
            .buffers
            .iter()
            .map(|b| {
                (
                    b.name.clone(),
                    step.bound(&b.name).unwrap_or(&b.name).to_string(),
                )
            })
            .collect();
        let mut stmts = step.program.body.clone();
        tag_origin(&mut stmts, k);
        let renamer = Renamer {
            var_prefix: format!("s{k}_"),
            buffers: &names,
            virtual_ids: Some(VirtualIds {
                wgid: [p("wx"), p("wy"), p("wz")],
                gid: [p("gx"), p("gy"), p("gz")],
                grid: self.shapes[k].grid,
                lid: None,
            }),
        };
        renamer.stmts(&mut stmts).map_err(|u| {
            err(
                format!(
                    "{}: step {k} uses buffer `{}` at {}, which it does not declare",
                    self.group, u.buffer, u.node
                ),
                "declare every buffer the step uses",
            )
        })?;
        let cell = Cell {
            emit: self,
            k,
            carried: (i > 0).then(|| self.pass.windows[i - 1].out.clone()),
            input,
            output,
            out: &w.out,
            global: self.pass.writes_global[i],
            counter: std::cell::Cell::new(0),
        };
        let stmts = cell.rewrite(stmts);
        let stmts = rewrite::lower_returns(stmts, &p("alive"));
        let j = p("j");
        let jx = p("jx");
        let jy = p("jy");
        let mut inner = vec![
            let_(
                &jx,
                bin(
                    BinOp::Add,
                    u32_lit(lo[0]),
                    bin(BinOp::Rem, var(&j), u32_lit(wx)),
                ),
            ),
            let_(
                &jy,
                bin(
                    BinOp::Add,
                    u32_lit(lo[1]),
                    bin(BinOp::Div, var(&j), u32_lit(wx)),
                ),
            ),
            let_(
                &p("gx"),
                bin(
                    BinOp::Rem,
                    bin(BinOp::Add, var("f_bx"), var(&jx)),
                    u32_lit(h.domain[0]),
                ),
            ),
            let_(
                &p("gy"),
                bin(
                    BinOp::Rem,
                    bin(BinOp::Add, var("f_by"), var(&jy)),
                    u32_lit(h.domain[1]),
                ),
            ),
            synth(StmtKind::Assign {
                name: p("alive"),
                value: bool_lit(true),
            }),
        ];
        inner.extend(stmts);
        let body = vec![
            let_(
                &j,
                bin(
                    BinOp::Add,
                    Expr::Builtin(Builtin::LocalId(Axis::X)),
                    bin(BinOp::Mul, var(&p("m")), u32_lit(h.threads)),
                ),
            ),
            if_(bin(BinOp::Lt, var(&j), u32_lit(cells)), inner),
        ];
        // One statement per step: the timeline records it as the step's unit of the pass.
        Ok(synth(StmtKind::Block(vec![
            let_(&p("alive"), bool_lit(true)),
            synth(StmtKind::Loop {
                var: p("m"),
                from: u32_lit(0),
                to: u32_lit(trips),
                body,
            }),
        ])))
    }
}

/// The rewrite of one step's (renamed) statements onto the window.
struct Cell<'a> {
    emit: &'a Emit<'a>,
    k: usize,
    /// The pipeline buffer read from the window (the previous step's output).
    carried: Option<String>,
    /// The shared array holding it.
    input: Option<&'a str>,
    /// The shared array this step writes.
    output: &'a str,
    /// The pipeline buffer this step writes.
    out: &'a str,
    /// Whether the tile's cells also go to global memory.
    global: bool,
    counter: std::cell::Cell<usize>,
}

impl Cell<'_> {
    fn p(&self, n: &str) -> String {
        format!("f{}_{n}", self.k)
    }

    /// The window cell of element `e` of the carried buffer; past the buffer, an index
    /// outside the array (a load gives 0, as the step's own load past its buffer).
    fn cell_of(&self, e: Expr) -> Expr {
        let [w, h] = self.emit.halo.domain;
        let lx = self.emit.halo.window()[0];
        let along = |c: Expr, n: u32, base: &str| {
            bin(
                BinOp::Rem,
                bin(BinOp::Sub, bin(BinOp::Add, c, u32_lit(n)), var(base)),
                u32_lit(n),
            )
        };
        let off = if h == 1 {
            along(e.clone(), w, "f_bx")
        } else {
            bin(
                BinOp::Add,
                along(bin(BinOp::Rem, e.clone(), u32_lit(w)), w, "f_bx"),
                bin(
                    BinOp::Mul,
                    along(bin(BinOp::Div, e.clone(), u32_lit(w)), h, "f_by"),
                    u32_lit(lx),
                ),
            )
        };
        Expr::Select(
            Box::new(bin(BinOp::Lt, e, u32_lit(w * h))),
            Box::new(off),
            Box::new(u32_lit(u32::MAX)),
        )
    }

    fn expr(&self, e: &mut Expr) {
        for c in rewrite::children_mut(e) {
            self.expr(c);
        }
        match e {
            Expr::Len(b) => {
                let len = self
                    .emit
                    .pipeline
                    .buffer(b)
                    .and_then(|x| x.contents.len)
                    .unwrap_or(0);
                *e = u32_lit(u32::try_from(len).unwrap_or(u32::MAX));
            }
            Expr::Load { buffer, index } if Some(&*buffer) == self.carried.as_ref() => {
                let idx = std::mem::replace(index.as_mut(), u32_lit(0));
                *e = Expr::Load {
                    buffer: self.input.unwrap_or_default().to_string(),
                    index: Box::new(self.cell_of(idx)),
                };
            }
            _ => {}
        }
    }

    /// The store of the step's output: to its own cell, and for a cell of the tile to
    /// global memory (the probe proved the index is the cell's own element).
    fn store(&self, id: NodeId, index: Expr, value: Expr) -> Stmt {
        let h = self.emit.halo;
        let h0 = h.halo_of(0);
        let n = self.counter.get();
        self.counter.set(n + 1);
        let v = self.p(&format!("v{n}"));
        let cell = bin(
            BinOp::Add,
            var(&self.p("jx")),
            bin(BinOp::Mul, var(&self.p("jy")), u32_lit(h.window()[0])),
        );
        let mut list = vec![
            let_(&v, value),
            Stmt {
                id,
                kind: StmtKind::Store {
                    buffer: self.output.to_string(),
                    index: cell,
                    value: var(&v),
                },
            },
        ];
        if self.global {
            // In the tile: `j - H_0 < T` (below H_0 wraps past T), and in the domain.
            let axis = |j: &str, origin: &str, t: u32, hh: u32, n: u32| {
                let rel = bin(BinOp::Sub, var(j), u32_lit(hh));
                bin(
                    BinOp::LAnd,
                    bin(BinOp::Lt, rel.clone(), u32_lit(t)),
                    bin(BinOp::Lt, bin(BinOp::Add, var(origin), rel), u32_lit(n)),
                )
            };
            let inside = bin(
                BinOp::LAnd,
                axis(&self.p("jx"), "f_ox", h.tile[0], h0[0], h.domain[0]),
                axis(&self.p("jy"), "f_oy", h.tile[1], h0[1], h.domain[1]),
            );
            list.push(if_(
                inside,
                vec![synth(StmtKind::Store {
                    buffer: self.out.to_string(),
                    index,
                    value: var(&v),
                })],
            ));
        }
        synth(StmtKind::Block(list))
    }

    fn rewrite(&self, list: Vec<Stmt>) -> Vec<Stmt> {
        list.into_iter()
            .map(|mut s| {
                for e in s.exprs_mut() {
                    self.expr(e);
                }
                let id = s.id.clone();
                let kind = match s.kind {
                    StmtKind::Store {
                        buffer,
                        index,
                        value,
                    } if buffer == self.out => return self.store(id, index, value),
                    other => other.map_lists(&mut |l| self.rewrite(l)),
                };
                Stmt { id, kind }
            })
            .collect()
    }
}
