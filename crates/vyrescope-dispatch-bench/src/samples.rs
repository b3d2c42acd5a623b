//! vyre Programs built with vyre's own builder API for the dispatch benchmark: the shapes a
//! vyre application sends most.

use vyre_foundation::ir::{BufferDecl as VB, DataType as DT, Expr as E, Node as N, Program};

/// vyre's Program type, under the name vyrescope's callers use.
pub type VyreProgram = Program;

/// `out[i] = a[i] + b[i]` over `n` f32 elements, workgroup 256.
pub fn vadd_f32(n: u32) -> Program {
    Program::wrapped(
        vec![
            VB::read("a", 0, DT::F32).with_count(n),
            VB::read("b", 1, DT::F32).with_count(n),
            VB::output("out", 2, DT::F32).with_count(n),
        ],
        [256, 1, 1],
        vec![
            N::let_bind("i", E::gid_x()),
            N::if_then(
                E::lt(E::var("i"), E::buf_len("out")),
                vec![N::store(
                    "out",
                    E::var("i"),
                    E::add(E::load("a", E::var("i")), E::load("b", E::var("i"))),
                )],
            ),
        ],
    )
}

/// The wrapping sum of `n` u32 elements into `sum[0]`: a 256-thread shared-memory tree per
/// workgroup, then one atomic add per workgroup.
pub fn reduce_sum_u32(n: u32) -> Program {
    let lid = || E::var("lid");
    Program::wrapped(
        vec![
            VB::read("input", 0, DT::U32).with_count(n),
            VB::output("sum", 1, DT::U32).with_count(1),
            VB::workgroup("tile", 256, DT::U32),
        ],
        [256, 1, 1],
        vec![
            N::let_bind("lid", E::local_x()),
            N::let_bind("i", E::gid_x()),
            N::let_bind("v", E::u32(0)),
            N::if_then(
                E::lt(E::var("i"), E::buf_len("input")),
                vec![N::assign("v", E::load("input", E::var("i")))],
            ),
            N::store("tile", lid(), E::var("v")),
            N::barrier(),
            N::loop_for(
                "s",
                E::u32(0),
                E::u32(8),
                vec![
                    N::let_bind("stride", E::shr(E::u32(128), E::var("s"))),
                    N::if_then(
                        E::lt(lid(), E::var("stride")),
                        vec![N::store(
                            "tile",
                            lid(),
                            E::add(
                                E::load("tile", lid()),
                                E::load("tile", E::add(lid(), E::var("stride"))),
                            ),
                        )],
                    ),
                    N::barrier(),
                ],
            ),
            N::if_then(
                E::eq(lid(), E::u32(0)),
                vec![N::let_bind(
                    "old",
                    E::atomic_add("sum", E::u32(0), E::load("tile", E::u32(0))),
                )],
            ),
        ],
    )
}
