//! Test helpers: small Programs and pipelines built in code (u32 buffers, so atomics work).

use crate::ir::{
    parse_program, ElemType, Fill, InputSource, InputSpec, Pipeline, PipelineBuffer, Program, Step,
};
use crate::shape::LaunchShape;

/// A Program with workgroup size `wg`, host buffers `(name, access)` of type u32 and `body`
/// (a JSON array of statements).
pub fn program(name: &str, wg: [u32; 3], buffers: &[(&str, &str)], body: &str) -> Program {
    let decls: Vec<String> = buffers
        .iter()
        .enumerate()
        .map(|(i, (n, a))| {
            if *a == "workgroup" {
                format!(r#"{{"name": "{n}", "access": "workgroup", "type": "u32", "count": 256}}"#)
            } else {
                format!(r#"{{"name": "{n}", "binding": {i}, "access": "{a}", "type": "u32"}}"#)
            }
        })
        .collect();
    let text = format!(
        r#"{{"format": 1, "name": "{name}", "workgroup_size": {wg:?}, "buffers": [{}], "body": {body}}}"#,
        decls.join(", ")
    );
    match parse_program(&text, name) {
        Ok(p) => p,
        Err(e) => panic!("test program {name}: {e}\n{text}"),
    }
}

/// A pipeline over u32 buffers `x y z w` (4096 elements each) with the given steps
/// `(program, bind)`.
pub fn pipeline(steps: Vec<(Program, &[(&str, &str)])>) -> Pipeline {
    let buffers = ["x", "y", "z", "w"]
        .iter()
        .map(|n| PipelineBuffer {
            name: n.to_string(),
            elem: ElemType::U32,
            contents: InputSpec {
                len: Some(4096),
                source: InputSource::Fill(Fill::Zeros),
            },
            transient: false,
        })
        .collect();
    Pipeline {
        name: "test".to_string(),
        doc: None,
        buffers,
        steps: steps
            .into_iter()
            .map(|(program, bind)| Step {
                program,
                program_path: None,
                bind: bind
                    .iter()
                    .map(|(p, b)| (p.to_string(), b.to_string()))
                    .collect(),
                workgroup_size: None,
                grid: None,
                elements: None,
            })
            .collect(),
    }
}

/// A launch shape.
pub fn shape(wg: [u32; 3], grid: [u32; 3]) -> LaunchShape {
    LaunchShape {
        workgroup_size: wg,
        grid,
    }
}

/// A one-statement body `dst[DST] = src[SRC] + 1` with the two indices as JSON.
pub fn copy_body(src_index: &str, dst_index: &str) -> String {
    format!(
        r#"[{{"store": "dst", "index": {dst_index}, "value": {{"add": [{{"load": "src", "index": {src_index}}}, 1]}}}}]"#
    )
}

/// A copy step `dst[d] = src[s] + 1` with workgroup size `wg`.
pub fn copy(name: &str, wg: [u32; 3], src_index: &str, dst_index: &str) -> Program {
    program(
        name,
        wg,
        &[("src", "read"), ("dst", "read_write")],
        &copy_body(src_index, dst_index),
    )
}
