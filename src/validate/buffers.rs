//! Declarations: kernel name, buffer table, shared-memory total, workgroup size, run inputs.

use std::collections::HashMap;

use crate::ir::parse::is_ident;
use crate::ir::{Access, Program};

use super::{Sink, MAX_SHARED_BYTES};

/// CUDA's most threads per block.
pub const MAX_THREADS_PER_WORKGROUP: u64 = 1024;

/// CUDA's per-axis block limits.
pub const MAX_WORKGROUP_DIMS: [u32; 3] = [1024, 1024, 64];

/// Checks everything outside `body`.
pub fn check(p: &Program, sink: &mut Sink) {
    if !is_ident(&p.name) {
        sink.error(
            "V001",
            Some("name"),
            format!("kernel name `{}` is not an identifier", p.name),
            "use letters, digits and `_`, not starting with a digit (e.g. \"vadd_f32\")",
        );
    }
    check_workgroup_size(p, sink);

    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut bindings: HashMap<u32, usize> = HashMap::new();
    let mut shared: u64 = 0;
    for (i, b) in p.buffers.iter().enumerate() {
        let at = format!("buffers[{i}]");
        let node = Some(at.as_str());
        if !is_ident(&b.name) {
            sink.error(
                "V001",
                node,
                format!("buffer name `{}` is not an identifier", b.name),
                "use letters, digits and `_`, not starting with a digit (e.g. \"input_a\")",
            );
        }
        if let Some(first) = names.get(b.name.as_str()) {
            sink.error(
                "V002",
                node,
                format!(
                    "buffer `{}` is already declared at buffers[{first}]",
                    b.name
                ),
                "give every buffer its own name",
            );
        } else {
            names.insert(&b.name, i);
        }
        if b.access.is_host() {
            match b.binding {
                None => sink.error(
                    "V003",
                    node,
                    format!(
                        "host buffer `{}` ({}) has no binding",
                        b.name,
                        b.access.name()
                    ),
                    "add \"binding\": N with a slot no other buffer uses",
                ),
                Some(slot) => {
                    if let Some(first) = bindings.get(&slot) {
                        sink.error(
                            "V004",
                            node,
                            format!(
                                "binding {slot} of `{}` is already used by `{}`",
                                b.name, p.buffers[*first].name
                            ),
                            format!("give `{}` an unused binding", b.name),
                        );
                    } else {
                        bindings.insert(slot, i);
                    }
                }
            }
            if let Some(c) = b.count {
                sink.error(
                    "V007",
                    node,
                    format!("host buffer `{}` has \"count\": {c}; host buffer lengths are chosen at run time", b.name),
                    format!("remove \"count\" (set the length in run.inputs.{}.len), or make it a workgroup buffer", b.name),
                );
            }
        } else {
            match b.count {
                None | Some(0) => sink.error(
                    "V005",
                    node,
                    format!("workgroup buffer `{}` needs a \"count\" above 0", b.name),
                    "add \"count\": N (elements per workgroup), e.g. the workgroup size",
                ),
                Some(c) => shared += c as u64 * b.elem.size_bytes() as u64,
            }
            if let Some(slot) = b.binding {
                sink.error(
                    "V006",
                    node,
                    format!("workgroup buffer `{}` has \"binding\": {slot}; shared memory is not bound by the host", b.name),
                    "remove \"binding\"",
                );
            }
        }
    }
    if shared > MAX_SHARED_BYTES {
        sink.error(
            "V008",
            Some("buffers"),
            format!(
                "workgroup buffers need {shared} bytes of shared memory; static shared memory holds at most {MAX_SHARED_BYTES} bytes (48 KiB) per workgroup"
            ),
            "reduce the workgroup buffers' counts to 48 KiB in all (use smaller tiles) or use narrower element types",
        );
    }

    if let Some(run) = &p.run {
        for (name, _) in &run.inputs {
            let problem = match p.buffer(name) {
                None => Some(format!("run.inputs names `{name}`, which is not a declared buffer")),
                Some(b) if b.access == Access::Workgroup => Some(format!(
                    "run.inputs gives contents for `{name}`, a workgroup buffer (it has no host contents)"
                )),
                Some(_) => None,
            };
            if let Some(message) = problem {
                sink.error(
                    "V010",
                    Some(&format!("run.inputs.{name}")),
                    message,
                    "name a host buffer declared in \"buffers\", or remove this input",
                );
            }
        }
    }
}

fn check_workgroup_size(p: &Program, sink: &mut Sink) {
    let wg = p.workgroup_size;
    let threads: u64 = wg.iter().map(|&d| d as u64).product();
    let axis_over = wg
        .iter()
        .zip(MAX_WORKGROUP_DIMS)
        .zip(["x", "y", "z"])
        .find(|((&d, max), _)| d > *max);
    let message = if wg.contains(&0) {
        Some(format!("workgroup_size {wg:?} has a zero dimension"))
    } else if threads > MAX_THREADS_PER_WORKGROUP {
        Some(format!(
            "workgroup_size {wg:?} is {threads} threads; CUDA allows at most {MAX_THREADS_PER_WORKGROUP} per workgroup"
        ))
    } else {
        axis_over.map(|((&d, max), axis)| {
            format!("workgroup_size {axis} = {d} exceeds CUDA's limit of {max} on that axis")
        })
    };
    if let Some(message) = message {
        sink.error(
            "V009",
            Some("workgroup_size"),
            message,
            "use at most 1024 threads in total (x, y <= 1024, z <= 64), e.g. [256, 1, 1]",
        );
    }
}
