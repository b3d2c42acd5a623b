//! The instruction-count estimate: the instrumented build run on the reference interpreter,
//! whose `clock()` counts the Program's own statements. It says where the *work* is (which
//! statements run most often, over how many threads), never how long anything takes.

use super::instrument::{instrument, stride_for};
use super::report::{from_table, Lowering, Profile, Source};
use super::ProfileError;
use crate::inputs::PreparedRun;
use crate::ir::Program;
use crate::util::Problem;

/// Runs the instrumented build of `plain` on the interpreter over `prepared` (the plain
/// build's inputs, left untouched) and returns the estimate profile.
pub fn estimate(
    plain: &Program,
    prepared: &PreparedRun,
    lowering: Lowering,
) -> Result<Profile, Problem> {
    let inst = instrument(plain, stride_for(prepared.shape.workgroups()))?;
    let mut buffers = prepared.buffers.clone();
    buffers.push(inst.table_buffer());
    crate::interp::run(&inst.program, &prepared.shape, &mut buffers)?;
    let table = inst.read_table(&buffers).ok_or(ProfileError::NoTable {
        table: inst.table.clone(),
    })?;
    Ok(from_table(plain, &inst, &table, Source::Estimate, lowering))
}
