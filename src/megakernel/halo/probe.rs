//! The probe behind [`super::check`]: how far a window step's reads reach from its own
//! element, and whether it stores exactly its own element, for every invocation.
//!
//! The step's Program is run on the interpreter with its stores to the output replaced by a
//! note of where they went, and with a note before every statement that loads the carried
//! buffer of the distance, per axis, from the invocation's element to the element read
//! (periodic: an element `d` away across the wrap-around is `d` away, which is how the
//! recomputed window holds it). An index past the buffer reads 0 in both forms and counts as
//! no distance. A window step's control flow and indices do not depend on loaded data
//! (`super::window_step`), so one run on zeros gives the answer for every input; what the
//! probe measures is exact for this pipeline's sizes, not an estimate from the index
//! analysis.

use std::collections::HashSet;

use crate::inputs::HostBuffer;
use crate::ir::{Access, Axis, BinOp, BufferDecl, ElemType, Expr, Program, Stmt, StmtKind};
use crate::ir::{Builtin, Pipeline};
use crate::megakernel::fuse::{bin, if_, synth, u32_lit};
use crate::shape::LaunchShape;

use super::{refuse, HaloError, StepWindow};

/// What the probe found for one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    /// The farthest read of the carried buffer from the invocation's own element, per axis
    /// (`[0, 0]` when no buffer is carried).
    pub radius: [u32; 2],
    /// Every element of the domain is stored by its own invocation.
    pub stores_every: bool,
}

struct Names {
    dx: String,
    dy: String,
    st: String,
}

/// Probes step `w.step`; `carried` is the Program buffer whose reads are measured.
pub fn probe(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    w: &StepWindow,
    carried: Option<&str>,
) -> Result<Reach, HaloError> {
    let fail = |why: String| {
        refuse(
            format!("step {}: probing its reads: {why}", w.step),
            "check the step on its own with `vyrescope run` on the interpreter",
        )
    };
    let step = &pipeline.steps[w.step];
    let shape = shapes[w.step];
    let inv_x = u64::from(shape.workgroup_size[0]) * u64::from(shape.grid[0]);
    let inv_y = u64::from(shape.workgroup_size[1]) * u64::from(shape.grid[1]);
    let inv_x32 = u32::try_from(inv_x).map_err(|_| fail("too many invocations".into()))?;
    let slots = usize::try_from(inv_x * inv_y).map_err(|_| fail("too many invocations".into()))?;
    let taken: HashSet<&str> = step
        .program
        .buffers
        .iter()
        .map(|b| b.name.as_str())
        .collect();
    let fresh = |base: &str| {
        let mut n = base.to_string();
        while taken.contains(n.as_str()) {
            n.push('_');
        }
        n
    };
    let names = Names {
        dx: fresh("probe_dx"),
        dy: fresh("probe_dy"),
        st: fresh("probe_st"),
    };
    let ctx = Ctx {
        w,
        carried,
        names: &names,
        inv_x: inv_x32,
    };
    let mut program: Program = step.program.clone();
    program.body = ctx.rewrite(std::mem::take(&mut program.body));
    crate::ir::parse::assign_ids(&mut program.body, "body");
    let next = program
        .buffers
        .iter()
        .filter_map(|b| b.binding)
        .max()
        .map_or(0, |b| b + 1);
    for (i, n) in [&names.dx, &names.dy, &names.st].into_iter().enumerate() {
        program.buffers.push(BufferDecl {
            name: n.clone(),
            binding: Some(next + i as u32),
            access: Access::ReadWrite,
            elem: ElemType::U32,
            count: None,
        });
    }
    let mut host = Vec::with_capacity(program.buffers.len());
    for (i, d) in program.buffers.iter().enumerate() {
        let len = if i + 3 >= program.buffers.len() {
            slots
        } else {
            let l = pipeline
                .bound_len(w.step, &d.name)
                .ok_or_else(|| fail(format!("buffer `{}` has no declared length", d.name)))?;
            usize::try_from(l).map_err(|_| fail(format!("buffer `{}` is too long", d.name)))?
        };
        host.push(HostBuffer {
            name: d.name.clone(),
            elem: d.elem,
            access: d.access,
            binding: d.binding.unwrap_or(i as u32),
            data: vec![0u8; len * d.elem.size_bytes()],
        });
    }
    crate::interp::run_with(
        &program,
        &shape,
        &mut host,
        &crate::interp::Options::default(),
    )
    .map_err(|e| fail(format!("{}: {}", e.code, e.message)))?;
    let words = |b: &HostBuffer| -> Vec<u32> {
        b.data
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    let n = host.len();
    let (dx, dy, st) = (
        words(&host[n - 3]),
        words(&host[n - 2]),
        words(&host[n - 1]),
    );
    let mut reach = Reach {
        radius: [0, 0],
        stores_every: true,
    };
    for i in 0..slots {
        let (gx, gy) = (i as u64 % inv_x, i as u64 / inv_x);
        let inside = gx < u64::from(w.domain[0]) && gy < u64::from(w.domain[1]);
        if st[i] & 2 != 0 {
            return Err(refuse(
                format!(
                    "step {} stores `{}` at an element other than its own (invocation \
                     gid ({gx}, {gy}))",
                    w.step, w.out_prog
                ),
                super::NOT_A_WINDOW_FIX,
            ));
        }
        if inside {
            reach.radius[0] = reach.radius[0].max(dx[i]);
            reach.radius[1] = reach.radius[1].max(dy[i]);
            reach.stores_every &= st[i] == 1;
        }
    }
    Ok(reach)
}

struct Ctx<'a> {
    w: &'a StepWindow,
    carried: Option<&'a str>,
    names: &'a Names,
    inv_x: u32,
}

fn gid(a: Axis) -> Expr {
    Expr::Builtin(Builtin::GlobalId(a))
}

fn load(buffer: &str, index: Expr) -> Expr {
    Expr::Load {
        buffer: buffer.to_string(),
        index: Box::new(index),
    }
}

fn store(buffer: &str, index: Expr, value: Expr) -> Stmt {
    synth(StmtKind::Store {
        buffer: buffer.to_string(),
        index,
        value,
    })
}

impl Ctx<'_> {
    /// The invocation's slot in the probe buffers: its element `gid.y * W + gid.x` inside
    /// the domain.
    fn slot(&self) -> Expr {
        bin(
            BinOp::Add,
            bin(BinOp::Mul, gid(Axis::Y), u32_lit(self.inv_x)),
            gid(Axis::X),
        )
    }

    /// The periodic distance along one axis of extent `n` from coordinate `c` to `e`.
    fn dist(e: Expr, c: Expr, n: u32) -> Expr {
        let fwd = bin(
            BinOp::Rem,
            bin(
                BinOp::Sub,
                bin(BinOp::Add, e.clone(), u32_lit(n)),
                c.clone(),
            ),
            u32_lit(n),
        );
        let back = bin(
            BinOp::Rem,
            bin(BinOp::Sub, bin(BinOp::Add, c, u32_lit(n)), e),
            u32_lit(n),
        );
        bin(BinOp::Min, fwd, back)
    }

    /// The notes of one read at `index`: the larger distance kept per axis.
    fn note_read(&self, index: &Expr) -> Stmt {
        let [w, h] = self.w.domain;
        let total = w.saturating_mul(h);
        let inside = Expr::Binary(BinOp::Lt, Box::new(index.clone()), Box::new(u32_lit(total)));
        let (ex, ey) = if h == 1 {
            (index.clone(), u32_lit(0))
        } else {
            (
                bin(BinOp::Rem, index.clone(), u32_lit(w)),
                bin(BinOp::Div, index.clone(), u32_lit(w)),
            )
        };
        let keep = |buf: &str, d: Expr| {
            store(
                buf,
                self.slot(),
                bin(
                    BinOp::Max,
                    load(buf, self.slot()),
                    Expr::Select(Box::new(inside.clone()), Box::new(d), Box::new(u32_lit(0))),
                ),
            )
        };
        let mut notes = vec![keep(&self.names.dx, Self::dist(ex, gid(Axis::X), w))];
        if h > 1 {
            notes.push(keep(&self.names.dy, Self::dist(ey, gid(Axis::Y), h)));
        }
        let in_domain = bin(
            BinOp::LAnd,
            bin(BinOp::Lt, gid(Axis::X), u32_lit(w)),
            bin(BinOp::Lt, gid(Axis::Y), u32_lit(h)),
        );
        if_(in_domain, notes)
    }

    fn rewrite(&self, list: Vec<Stmt>) -> Vec<Stmt> {
        let mut out = Vec::with_capacity(list.len());
        for mut s in list {
            if let Some(c) = self.carried {
                let mut reads = Vec::new();
                for e in s.exprs() {
                    e.visit(&mut |x| {
                        if let Expr::Load { buffer, index } = x {
                            if buffer == c {
                                reads.push(index.as_ref().clone());
                            }
                        }
                    });
                }
                out.extend(reads.iter().map(|i| self.note_read(i)));
            }
            s.kind = match s.kind {
                StmtKind::Store { buffer, index, .. } if buffer == self.w.out_prog => {
                    let own = bin(BinOp::Eq, index, self.slot());
                    let bit =
                        Expr::Select(Box::new(own), Box::new(u32_lit(1)), Box::new(u32_lit(2)));
                    StmtKind::Store {
                        buffer: self.names.st.clone(),
                        index: self.slot(),
                        value: bin(BinOp::Or, load(&self.names.st, self.slot()), bit),
                    }
                }
                other => other.map_lists(&mut |l| self.rewrite(l)),
            };
            out.push(s);
        }
        out
    }
}
