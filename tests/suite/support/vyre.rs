//! Helpers of the vyre import/export tests (feature `vyre`).

use vyre_foundation::ir::Program as VP;
use vyrescope::finding::Severity;
use vyrescope::ir::{Expr, NodeId, Program, Stmt, StmtKind};

/// `v` imported as a Program named `name`, failing the test (with `what`) on any error
/// diagnostic.
pub fn import_clean(v: &VP, name: &str, what: &str) -> Program {
    let got = vyrescope::vyre::import_program(v, name);
    let errors: Vec<String> = got
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.to_string())
        .collect();
    assert!(errors.is_empty(), "{what}: import: {errors:?}");
    got.program
}

/// `p` with `if cond { return }` put in front of its body: vyre's dispatch early exit back in
/// place, to check that leaving it out changed nothing.
pub fn with_exit_first(p: &Program, cond: Expr) -> Program {
    let mut q = p.clone();
    let ret = Stmt {
        id: NodeId::new(""),
        kind: StmtKind::Return,
    };
    q.body.insert(
        0,
        Stmt {
            id: NodeId::new(""),
            kind: StmtKind::If {
                cond,
                then: vec![ret],
                otherwise: Vec::new(),
                has_else: false,
            },
        },
    );
    q
}
