//! Test backends and data for the capture tests: a host backend that XORs its inputs (host
//! and resident API) and a vyre Program to hand it.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Mutex;

use vyre_driver::backend::{
    private, BackendError, DispatchConfig, ResidentOwner, Resource, TimedDispatchResult,
    VyreBackend,
};
use vyre_foundation::ir::{BufferDecl, DataType, Expr, Node, Program};

/// SplitMix64 bytes: random test data, reproducible by seed.
pub fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

/// `out[i] = a[i] ^ b[i]` over `n` u32 elements, as a vyre Program.
pub fn xor_program(n: u32) -> Program {
    let i = || Expr::var("i");
    Program::wrapped(
        vec![
            BufferDecl::read("a", 0, DataType::U32),
            BufferDecl::read("b", 1, DataType::U32),
            BufferDecl::output("out", 2, DataType::U32).with_count(n),
        ],
        [64, 1, 1],
        vec![
            Node::let_bind("i", Expr::gid_x()),
            Node::if_then(
                Expr::lt(i(), Expr::buf_len("out")),
                vec![Node::store(
                    "out",
                    i(),
                    Expr::bitxor(Expr::load("a", i()), Expr::load("b", i())),
                )],
            ),
        ],
    )
}

fn xor_all(inputs: &[&[u8]]) -> Vec<u8> {
    let len = inputs.iter().map(|b| b.len()).max().unwrap_or(0);
    (0..len)
        .map(|k| {
            inputs
                .iter()
                .fold(0u8, |acc, b| acc ^ b.get(k).copied().unwrap_or(0))
        })
        .collect()
}

/// A host backend: one output, the XOR of its inputs; fails on a dispatch labelled `fail`.
/// Its resident half keeps buffers in host memory, and a resident dispatch writes the XOR
/// of every resource but the last into the last.
pub struct XorBackend {
    owner: ResidentOwner,
    next: Mutex<u64>,
    buffers: Mutex<HashMap<u64, Vec<u8>>>,
}

impl XorBackend {
    pub fn new() -> Self {
        XorBackend {
            owner: ResidentOwner::new().unwrap(),
            next: Mutex::new(1),
            buffers: Mutex::new(HashMap::new()),
        }
    }

    fn id_of(&self, r: &Resource) -> Result<u64, BackendError> {
        match r {
            Resource::Resident(h) => self.owner.resolve(*h, "xor test backend"),
            Resource::Borrowed(_) => Err(BackendError::new("Fix: pass a resident buffer")),
        }
    }
}

impl private::Sealed for XorBackend {}

impl VyreBackend for XorBackend {
    fn id(&self) -> &'static str {
        "xor-test"
    }

    fn version(&self) -> &'static str {
        "9.9.9"
    }

    fn dispatch(
        &self,
        _program: &Program,
        inputs: &[Vec<u8>],
        config: &DispatchConfig,
    ) -> Result<Vec<Vec<u8>>, BackendError> {
        if config.label.as_deref() == Some("fail") {
            return Err(BackendError::DispatchFailed {
                code: Some(7),
                message: "asked to fail. Fix: do not label a dispatch `fail`".into(),
            });
        }
        let views: Vec<&[u8]> = inputs.iter().map(|v| v.as_slice()).collect();
        Ok(vec![xor_all(&views)])
    }

    fn supports_resident_dispatch(&self) -> bool {
        true
    }

    fn allocate_resident(&self, byte_len: usize) -> Result<Resource, BackendError> {
        let mut next = self.next.lock().unwrap();
        let id = *next;
        *next += 1;
        self.buffers.lock().unwrap().insert(id, vec![0; byte_len]);
        Ok(Resource::Resident(self.owner.handle(id)))
    }

    fn upload_resident(&self, resource: &Resource, bytes: &[u8]) -> Result<(), BackendError> {
        self.upload_resident_at(resource, 0, bytes)
    }

    fn upload_resident_at(
        &self,
        resource: &Resource,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), BackendError> {
        let id = self.id_of(resource)?;
        let mut map = self.buffers.lock().unwrap();
        let buf = map
            .get_mut(&id)
            .ok_or_else(|| BackendError::new("Fix: unknown buffer"))?;
        let end = offset + bytes.len();
        if end > buf.len() {
            return Err(BackendError::new("Fix: upload past the end"));
        }
        buf[offset..end].copy_from_slice(bytes);
        Ok(())
    }

    fn download_resident_into(
        &self,
        resource: &Resource,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        let id = self.id_of(resource)?;
        let map = self.buffers.lock().unwrap();
        out.clear();
        out.extend_from_slice(
            map.get(&id)
                .ok_or_else(|| BackendError::new("Fix: unknown buffer"))?,
        );
        Ok(())
    }

    fn free_resident(&self, resource: Resource) -> Result<(), BackendError> {
        let id = self.id_of(&resource)?;
        self.buffers.lock().unwrap().remove(&id);
        Ok(())
    }

    fn dispatch_resident_timed(
        &self,
        _program: &Program,
        resources: &[Resource],
        _config: &DispatchConfig,
    ) -> Result<TimedDispatchResult, BackendError> {
        let ids = resources
            .iter()
            .map(|r| self.id_of(r))
            .collect::<Result<Vec<_>, _>>()?;
        let (last, ins) = ids
            .split_last()
            .ok_or_else(|| BackendError::new("Fix: pass resources"))?;
        let mut map = self.buffers.lock().unwrap();
        let views: Vec<Vec<u8>> = ins.iter().map(|i| map[i].clone()).collect();
        let refs: Vec<&[u8]> = views.iter().map(|v| v.as_slice()).collect();
        let x = xor_all(&refs);
        let out = map.get_mut(last).unwrap();
        let n = out.len().min(x.len());
        out[..n].copy_from_slice(&x[..n]);
        Ok(TimedDispatchResult {
            outputs: Vec::new(),
            wall_ns: 5,
            device_ns: Some(3),
            enqueue_ns: None,
            wait_ns: None,
        })
    }
}
