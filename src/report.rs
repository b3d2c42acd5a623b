//! What a run produced, in one shape for every backend: [`RunReport`] (printed as text or
//! JSON by `vyrescope run`), plus the checksum and element formatting it uses.
//!
//! The checksum of a buffer is FNV-1a 64 over its raw little-endian bytes (offset basis
//! `0xcbf29ce484222325`, prime `0x100000001b3`), written as 16 lowercase hex digits; equal
//! bytes give equal checksums on every backend.

use std::fmt::Write as _;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::inputs::{HostBuffer, LaunchShape};
use crate::ir::ElemType;

/// Elements shown per output buffer.
pub const FIRST_ELEMENTS: usize = 8;

pub use crate::util::hash::fnv1a as fnv1a64;

/// Element `i` of raw little-endian `bytes` as a JSON value (numbers; `bool` as true/false;
/// non-finite floats as the strings "nan", "inf", "-inf"). `None` past the end.
pub fn element_json(elem: ElemType, bytes: &[u8], i: usize) -> Option<serde_json::Value> {
    use serde_json::Value;
    let size = elem.size_bytes();
    let c = bytes.get(i * size..(i + 1) * size)?;
    let mut b = [0u8; 8];
    b[..size].copy_from_slice(c);
    let raw = u64::from_le_bytes(b);
    let float = |v: f64| {
        if v.is_nan() {
            Value::from("nan")
        } else if v.is_infinite() {
            Value::from(if v > 0.0 { "inf" } else { "-inf" })
        } else {
            Value::from(v)
        }
    };
    Some(match elem {
        ElemType::Bool => Value::from(raw as u32 != 0),
        ElemType::U8 | ElemType::U16 | ElemType::U32 | ElemType::U64 => Value::from(raw),
        ElemType::I8 => Value::from(raw as u8 as i8),
        ElemType::I16 => Value::from(raw as u16 as i16),
        ElemType::I32 => Value::from(raw as u32 as i32),
        ElemType::I64 => Value::from(raw as i64),
        ElemType::F16 => float(half::f16::from_bits(raw as u16).to_f64()),
        ElemType::F32 => float(f32::from_bits(raw as u32) as f64),
        ElemType::F64 => float(f64::from_bits(raw)),
    })
}

/// Element `i` as text (floats in Rust's shortest round-trip form).
pub fn element_text(elem: ElemType, bytes: &[u8], i: usize) -> Option<String> {
    let size = elem.size_bytes();
    let c = bytes.get(i * size..(i + 1) * size)?;
    let mut b = [0u8; 8];
    b[..size].copy_from_slice(c);
    let raw = u64::from_le_bytes(b);
    Some(match elem {
        ElemType::F16 => format!("{:?}", half::f16::from_bits(raw as u16).to_f32()),
        ElemType::F32 => format!("{:?}", f32::from_bits(raw as u32)),
        ElemType::F64 => format!("{:?}", f64::from_bits(raw)),
        _ => element_json(elem, bytes, i)?.to_string(),
    })
}

/// Summary of one output buffer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputSummary {
    /// Element type.
    #[serde(rename = "type", serialize_with = "ser_elem")]
    pub elem: ElemType,
    /// Element count.
    pub len: usize,
    /// FNV-1a 64 of the raw bytes, 16 hex digits.
    pub checksum: String,
    /// The first [`FIRST_ELEMENTS`] elements.
    pub first: Vec<serde_json::Value>,
}

fn ser_elem<S: Serializer>(e: &ElemType, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(e.name())
}

impl OutputSummary {
    /// Summarises a host buffer.
    pub fn of(b: &HostBuffer) -> OutputSummary {
        Self::of_bytes(b.elem, &b.data)
    }

    /// Summarises raw little-endian elements of type `elem` (any buffer, e.g. a pipeline's).
    pub fn of_bytes(elem: ElemType, data: &[u8]) -> OutputSummary {
        let len = data.len() / elem.size_bytes();
        OutputSummary {
            elem,
            len,
            checksum: format!("{:016x}", fnv1a64(data)),
            first: (0..FIRST_ELEMENTS.min(len))
                .filter_map(|i| element_json(elem, data, i))
                .collect(),
        }
    }
}

/// The result of one run on any backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// Program name.
    pub program: String,
    /// Backend name (`reference`, `cuda`).
    pub backend: String,
    /// Workgroups, x/y/z.
    pub grid: [u32; 3],
    /// Threads per workgroup, x/y/z.
    pub workgroup_size: [u32; 3],
    /// Output (writable host) buffers in binding order, serialized as a name -> summary map.
    #[serde(serialize_with = "ser_outputs")]
    pub outputs: Vec<(String, OutputSummary)>,
    /// Wall time of the execution itself (no input preparation), milliseconds.
    pub elapsed_ms: f64,
    /// IR node evaluations (reference backend only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_evals: Option<u64>,
}

fn ser_outputs<S: Serializer>(v: &[(String, OutputSummary)], s: S) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(v.len()))?;
    for (k, o) in v {
        m.serialize_entry(k, o)?;
    }
    m.end()
}

impl RunReport {
    /// A report for `buffers` after a run (outputs are the writable host buffers).
    pub fn new(
        program: &str,
        backend: &str,
        shape: &LaunchShape,
        buffers: &[HostBuffer],
        elapsed_ms: f64,
        node_evals: Option<u64>,
    ) -> RunReport {
        RunReport {
            program: program.to_string(),
            backend: backend.to_string(),
            grid: shape.grid,
            workgroup_size: shape.workgroup_size,
            outputs: buffers
                .iter()
                .filter(|b| b.is_output())
                .map(|b| (b.name.clone(), OutputSummary::of(b)))
                .collect(),
            elapsed_ms,
            node_evals,
        }
    }

    /// Human-readable text: a header line, then one line per output buffer.
    pub fn to_text(&self, buffers: &[HostBuffer]) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "{} on {}: grid {:?}, workgroup {:?}, {:.3} ms",
            self.program, self.backend, self.grid, self.workgroup_size, self.elapsed_ms
        );
        if let Some(n) = self.node_evals {
            let _ = write!(s, ", {n} node evaluations");
        }
        s.push('\n');
        for (name, o) in &self.outputs {
            let first: Vec<String> = match buffers.iter().find(|b| &b.name == name) {
                Some(b) => (0..FIRST_ELEMENTS.min(b.len()))
                    .filter_map(|i| element_text(b.elem, &b.data, i))
                    .collect(),
                None => o.first.iter().map(|v| v.to_string()).collect(),
            };
            let more = if o.len > first.len() { ", ..." } else { "" };
            let _ = writeln!(
                s,
                "  {name}: {}[{}] checksum {} first [{}{more}]",
                o.elem.name(),
                o.len,
                o.checksum,
                first.join(", ")
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Access;

    #[test]
    fn fnv1a64_reference_values() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn report_json_shape() {
        let b = HostBuffer {
            name: "c".into(),
            elem: ElemType::F32,
            access: Access::ReadWrite,
            binding: 0,
            data: [1.5f32, f32::NAN]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        };
        let shape = LaunchShape {
            workgroup_size: [64, 1, 1],
            grid: [1, 1, 1],
        };
        let r = RunReport::new(
            "p",
            "reference",
            &shape,
            std::slice::from_ref(&b),
            1.0,
            Some(7),
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["outputs"]["c"]["type"], "f32");
        assert_eq!(v["outputs"]["c"]["len"], 2);
        assert_eq!(v["outputs"]["c"]["first"][0], 1.5);
        assert_eq!(v["outputs"]["c"]["first"][1], "nan");
        assert_eq!(v["node_evals"], 7);
        assert_eq!(v["grid"][0], 1);
        assert!(r.to_text(&[b]).contains("checksum"));
    }
}
