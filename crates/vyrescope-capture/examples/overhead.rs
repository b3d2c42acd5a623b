//! Calling-thread cost of capturing: a host backend that adds two 2^20-element u32 vectors,
//! dispatched with distinct inputs each call, plain and wrapped (full records, default limit),
//! into a temporary folder. Prints the median time per dispatch of each and their ratio.
//!
//! `cargo run --release -p vyrescope-capture --example overhead [CALLS]`

use std::time::Instant;

use vyre_driver::backend::{private, BackendError, DispatchConfig, VyreBackend};
use vyre_foundation::ir::{BufferDecl, DataType, Expr, Node, Program};

/// Adds its two inputs as u32 vectors on the host.
struct HostAdd;

impl private::Sealed for HostAdd {}

impl VyreBackend for HostAdd {
    fn id(&self) -> &'static str {
        "host-add"
    }

    fn dispatch(
        &self,
        _p: &Program,
        inputs: &[Vec<u8>],
        _c: &DispatchConfig,
    ) -> Result<Vec<Vec<u8>>, BackendError> {
        let (a, b) = (&inputs[0], &inputs[1]);
        let mut out = vec![0u8; a.len()];
        for ((o, x), y) in out
            .chunks_exact_mut(4)
            .zip(a.chunks_exact(4))
            .zip(b.chunks_exact(4))
        {
            let s = u32::from_le_bytes(x.try_into().unwrap())
                .wrapping_add(u32::from_le_bytes(y.try_into().unwrap()));
            o.copy_from_slice(&s.to_le_bytes());
        }
        Ok(vec![out])
    }
}

fn program(n: u32) -> Program {
    let i = || Expr::var("i");
    Program::wrapped(
        vec![
            BufferDecl::read("a", 0, DataType::U32),
            BufferDecl::read("b", 1, DataType::U32),
            BufferDecl::output("out", 2, DataType::U32).with_count(n),
        ],
        [256, 1, 1],
        vec![
            Node::let_bind("i", Expr::gid_x()),
            Node::if_then(
                Expr::lt(i(), Expr::buf_len("out")),
                vec![Node::store(
                    "out",
                    i(),
                    Expr::add(Expr::load("a", i()), Expr::load("b", i())),
                )],
            ),
        ],
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn time(b: &dyn VyreBackend, p: &Program, calls: usize, seed: u32) -> Vec<f64> {
    let n = 1usize << 20;
    (0..calls)
        .map(|k| {
            // Distinct inputs every call (no deduplication helps).
            let a: Vec<u8> = (0..n as u32)
                .flat_map(|i| (i ^ (k as u32).wrapping_mul(2654435761) ^ seed).to_le_bytes())
                .collect();
            let c: Vec<u8> = (0..n as u32)
                .flat_map(|i| (i.wrapping_mul(7) ^ k as u32).to_le_bytes())
                .collect();
            let t = Instant::now();
            let out = b.dispatch(p, &[a, c], &DispatchConfig::default()).unwrap();
            let dt = t.elapsed().as_secs_f64() * 1e3;
            assert_eq!(out[0].len(), n * 4);
            dt
        })
        .collect()
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(30);
    let p = program(1 << 20);
    let plain = median(time(&HostAdd, &p, calls, 1));
    let tmp =
        std::env::temp_dir().join(format!("vyrescope-capture-overhead-{}", std::process::id()));
    let wrapped = vyrescope_capture::capture(HostAdd, &tmp);
    let t = Instant::now();
    let captured = median(time(&wrapped, &p, calls, 2));
    wrapped.flush_capture();
    let with_flush = t.elapsed().as_secs_f64() * 1e3 / calls as f64;
    drop(wrapped);
    let _ = std::fs::remove_dir_all(&tmp);
    println!("2^20 u32 vector add, {calls} calls, distinct inputs, full records:");
    println!("  plain dispatch      median {plain:.3} ms");
    println!(
        "  captured dispatch   median {captured:.3} ms  ({:.2}x)",
        captured / plain
    );
    println!("  captured incl. writing everything to disk: {with_flush:.3} ms per call (incl. input generation)");
}
