//! A test application that records a capture (issue 46, feature `vyre`): real vyre
//! Programs with random inputs, dispatched through the capturing backend over any backend,
//! and the edits a test makes to a capture (an output changed by one element).

use std::path::{Path, PathBuf};

use vyre_driver::backend::{DispatchConfig, VyreBackend};
use vyre_foundation::ir::{BufferDecl, DataType, Expr, Node, Program as VP};
use vyrescope::vyre::replay::VyreReference;
use vyrescope_capture::format::content_hash;
use vyrescope_capture::{capture_boxed, CaptureOptions};

/// SplitMix64 words, reproducible by seed.
pub fn words(seed: u64, n: usize) -> Vec<u32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as u32
        })
        .collect()
}

pub fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Random finite f32 values in [-4, 4).
pub fn f32_bytes(seed: u64, n: usize) -> Vec<u8> {
    words(seed, n)
        .iter()
        .flat_map(|w| ((*w as f64 / 4294967296.0 * 8.0 - 4.0) as f32).to_le_bytes())
        .collect()
}

fn gid_guarded(out: &str, body: Node) -> Vec<Node> {
    vec![
        Node::let_bind("i", Expr::gid_x()),
        Node::if_then(Expr::lt(Expr::var("i"), Expr::buf_len(out)), vec![body]),
    ]
}

/// `out[i] = a[i] ^ b[i]` (u32).
pub fn xor_program(n: u32) -> VP {
    let i = || Expr::var("i");
    VP::wrapped(
        vec![
            BufferDecl::read("a", 0, DataType::U32),
            BufferDecl::read("b", 1, DataType::U32),
            BufferDecl::output("out", 2, DataType::U32).with_count(n),
        ],
        [64, 1, 1],
        gid_guarded(
            "out",
            Node::store(
                "out",
                i(),
                Expr::bitxor(Expr::load("a", i()), Expr::load("b", i())),
            ),
        ),
    )
}

/// `y[i] = x[i] * x[i] + y0[i]` (f32).
pub fn fma_program(n: u32) -> VP {
    let i = || Expr::var("i");
    VP::wrapped(
        vec![
            BufferDecl::read("x", 0, DataType::F32),
            BufferDecl::read("y0", 1, DataType::F32),
            BufferDecl::output("y", 2, DataType::F32).with_count(n),
        ],
        [32, 1, 1],
        gid_guarded(
            "y",
            Node::store(
                "y",
                i(),
                Expr::add(
                    Expr::mul(Expr::load("x", i()), Expr::load("x", i())),
                    Expr::load("y0", i()),
                ),
            ),
        ),
    )
}

/// `acc[i] = acc[i] + a[i]` (u32): a read-write buffer is both input and output.
pub fn accumulate_program() -> VP {
    let i = || Expr::var("i");
    VP::wrapped(
        vec![
            BufferDecl::read_write("acc", 0, DataType::U32),
            BufferDecl::read("a", 1, DataType::U32),
        ],
        [64, 1, 1],
        gid_guarded(
            "acc",
            Node::store(
                "acc",
                i(),
                Expr::add(Expr::load("acc", i()), Expr::load("a", i())),
            ),
        ),
    )
}

/// The test application: records its dispatches on vyre's reference interpreter into `dir`
/// (with `limit` bytes of data). Returns the number of dispatches.
pub fn record_app(dir: &Path, limit: u64) -> u64 {
    record_app_on(Box::new(VyreReference), dir, limit)
}

/// The test application on `backend`: five dispatches (three Programs of its own, two of
/// vyre's op library that our import takes) recorded into `dir` with `limit` bytes of data.
/// Returns the number of dispatches.
pub fn record_app_on(backend: Box<dyn VyreBackend>, dir: &Path, limit: u64) -> u64 {
    let backend = capture_boxed(backend, dir, CaptureOptions { limit_bytes: limit });
    let cfg = DispatchConfig::default();
    let n = 1000;
    backend
        .dispatch(
            &xor_program(n),
            &[u32_bytes(&words(1, 1000)), u32_bytes(&words(2, 1000))],
            &cfg,
        )
        .unwrap();
    backend
        .dispatch_borrowed(
            &fma_program(300),
            &[&f32_bytes(3, 300), &f32_bytes(4, 300)],
            &cfg,
        )
        .unwrap();
    let mut grid = DispatchConfig::default();
    grid.grid_override = Some([4, 1, 1]);
    backend
        .dispatch(
            &accumulate_program(),
            &[u32_bytes(&words(5, 256)), u32_bytes(&words(6, 256))],
            &grid,
        )
        .unwrap();
    // Two operations of vyre's own library, with their fixture inputs.
    let mut count = 3;
    let ops = vyrescope::vyre::catalog::operations().unwrap();
    for (_, op) in ops.iter().filter(|(s, _)| s.name() == "vyre-libs") {
        if count == 5 {
            break;
        }
        let (Some(p), Some(inputs)) = (op.program(), op.test_inputs.map(|f| f())) else {
            continue;
        };
        let prepared =
            vyrescope::vyre::catalog::prepare(vyrescope::vyre::catalog::Source::VyreLibs, op);
        if prepared.outcome.is_err() {
            continue;
        }
        if backend.dispatch(&p, &inputs[0], &cfg).is_ok() {
            count += 1;
        }
    }
    assert_eq!(count, 5, "two vyre-libs operations dispatched");
    backend.flush_capture();
    count
}

/// A new folder for a capture (`cap` inside a temporary folder).
pub fn tmp_capture() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("cap");
    (t, d)
}

/// `vyrescope-reference`, acquired from vyre's registry as an application would.
pub fn ours() -> std::sync::Arc<dyn VyreBackend> {
    vyrescope::runtime::vyre_device::link();
    vyre_driver::backend::acquire("vyrescope-reference")
        .expect("vyrescope-reference is registered")
        .into()
}

/// Parses one JSON value.
pub fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// Replaces output `output` of record `index` by `edit(bytes)`, as a capture of a wrong
/// result would hold it (a new content file under its own hash).
pub fn edit_output(dir: &Path, index: u64, output: usize, edit: impl FnOnce(&mut Vec<u8>)) {
    edit_blob(dir, index, &format!("/event/outputs/{output}"), edit);
}

/// Replaces the bytes of read `read` of record `index` (a download or a sequence's read
/// range) by `edit(bytes)`, as a capture of a wrong read would hold them.
pub fn edit_read(dir: &Path, index: u64, read: usize, edit: impl FnOnce(&mut Vec<u8>)) {
    edit_blob(dir, index, &format!("/event/reads/{read}/data"), edit);
}

/// Replaces the content file that the buffer reference at JSON `pointer` of record `index`
/// names by `edit(bytes)`, stored under its own hash as the capture writer would.
fn edit_blob(dir: &Path, index: u64, pointer: &str, edit: impl FnOnce(&mut Vec<u8>)) {
    let rec_path = dir.join(format!("records/{index:08}.json"));
    let mut rec = json(&std::fs::read_to_string(&rec_path).unwrap());
    let slot = rec
        .pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer}"));
    let old = slot["hash"].as_str().unwrap().to_string();
    let mut bytes = std::fs::read(dir.join(format!("blobs/{old}.bin"))).unwrap();
    edit(&mut bytes);
    let new = content_hash(&bytes);
    std::fs::write(dir.join(format!("blobs/{new}.bin")), &bytes).unwrap();
    slot["hash"] = serde_json::Value::String(new);
    std::fs::write(&rec_path, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
}
