//! A vyre application running on vyrescope: it acquires `vyrescope-cuda` from vyre's backend
//! registry by id (falling back to `vyrescope-reference` where there is no GPU), runs a few
//! vyre-libs operations and a resident two-step sequence through vyre's `VyreBackend`
//! trait, and checks every result against values computed here on the host.
//!
//! ```sh
//! cargo run --release --features vyre --example vyre_app
//! ```
//!
//! Nothing below names a vyrescope type except the one call that links its registrations.

use vyre_driver::backend::{
    acquire, DispatchConfig, ResidentDispatchStep, ResidentReadRange, VyreBackend,
};
use vyre_libs::math::linalg::matmul;
use vyre_libs::math::scan::scan_prefix_sum;
use vyre_libs::nn::activation::residual_add;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A small deterministic generator (SplitMix64), so every run checks the same random data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0)
            .collect()
    }
    fn u32s(&mut self, n: usize, below: u32) -> Vec<u32> {
        (0..n)
            .map(|_| (self.next() % u64::from(below)) as u32)
            .collect()
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn check(name: &str, got: &[u8], want: &[u8], elements: usize) -> Res<()> {
    if got != want {
        let first = got
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        return Err(format!(
            "{name}: result differs from the host's (first differing byte {first}, {} bytes vs {})",
            got.len(),
            want.len()
        )
        .into());
    }
    println!("  {name:<34} {elements:>8} elements  verified");
    Ok(())
}

fn main() -> Res<()> {
    // The one line that keeps vyrescope's registrations in this binary.
    vyrescope::runtime::vyre_device::link();
    let backend: Box<dyn VyreBackend> = match acquire("vyrescope-cuda") {
        Ok(b) => b,
        Err(e) => {
            println!("vyrescope-cuda is not available here ({e})");
            println!("falling back to vyrescope-reference (the CPU interpreter)\n");
            acquire("vyrescope-reference")?
        }
    };
    let profile = backend.device_profile();
    println!(
        "backend {} {} (max workgroup {:?}, subgroup {}, timing {:?})",
        backend.id(),
        backend.version(),
        backend.max_workgroup_size(),
        profile.subgroup_size,
        profile.timing_quality
    );
    let cfg = DispatchConfig::default();
    let mut rng = Rng(45);

    // 1. residual_add (f32): out = residual + branch.
    let n = 1 << 16;
    let (r, b) = (rng.f32s(n), rng.f32s(n));
    let out = backend.dispatch(
        &residual_add("residual", "branch", "out", n as u32),
        &[f32_bytes(&r), f32_bytes(&b)],
        &cfg,
    )?;
    let want: Vec<f32> = r.iter().zip(&b).map(|(x, y)| x + y).collect();
    check("vyre-libs::nn::residual_add", &out[0], &f32_bytes(&want), n)?;

    // 2. scan_prefix_sum (u32, inclusive, wrapping), one workgroup of 1000.
    let n = 1000;
    let x = rng.u32s(n, 1 << 20);
    let out = backend.dispatch(
        &scan_prefix_sum("input", "output", n as u32),
        &[u32_bytes(&x)],
        &cfg,
    )?;
    let want: Vec<u32> = x
        .iter()
        .scan(0u32, |s, &v| {
            *s = s.wrapping_add(v);
            Some(*s)
        })
        .collect();
    check(
        "vyre-libs::math::scan_prefix_sum",
        &out[0],
        &u32_bytes(&want),
        n,
    )?;

    // 3. matmul (u32, wrapping): 48x40 times 40x56, timed.
    let (m, k, nn) = (48usize, 40usize, 56usize);
    let (a, bm) = (rng.u32s(m * k, 1000), rng.u32s(k * nn, 1000));
    let inputs = [u32_bytes(&a), u32_bytes(&bm)];
    let borrowed: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let timed = backend.dispatch_borrowed_timed(
        &matmul("a", "b", "out", m as u32, k as u32, nn as u32),
        &borrowed,
        &cfg,
    )?;
    let mut want = vec![0u32; m * nn];
    for i in 0..m {
        for j in 0..nn {
            want[i * nn + j] = (0..k).fold(0u32, |s, t| {
                s.wrapping_add(a[i * k + t].wrapping_mul(bm[t * nn + j]))
            });
        }
    }
    check(
        "vyre-libs::math::matmul",
        &timed.outputs[0],
        &u32_bytes(&want),
        m * nn,
    )?;
    println!(
        "    (wall {:.1} us, device {})",
        timed.wall_ns as f64 / 1e3,
        timed
            .device_ns
            .map_or("not measured".to_string(), |d| format!(
                "{:.1} us",
                d as f64 / 1e3
            ))
    );

    // 4. A resident sequence: t = a + b, then out = t + c, read back once at the end.
    let n = 1 << 18;
    let (va, vb, vc) = (rng.f32s(n), rng.f32s(n), rng.f32s(n));
    let ra = backend.allocate_resident(n * 4)?;
    let rb = backend.allocate_resident(n * 4)?;
    let rc = backend.allocate_resident(n * 4)?;
    let rt = backend.allocate_resident(n * 4)?;
    let ro = backend.allocate_resident(n * 4)?;
    backend.upload_resident_many(&[
        (&ra, &f32_bytes(&va)),
        (&rb, &f32_bytes(&vb)),
        (&rc, &f32_bytes(&vc)),
    ])?;
    let add = residual_add("residual", "branch", "out", n as u32);
    let first = [ra.clone(), rb.clone(), rt.clone()];
    let second = [rt.clone(), rc.clone(), ro.clone()];
    let steps = [
        ResidentDispatchStep {
            program: &add,
            resources: &first,
            grid_override: None,
            workgroup_override: None,
        },
        ResidentDispatchStep {
            program: &add,
            resources: &second,
            grid_override: None,
            workgroup_override: None,
        },
    ];
    let read = [ResidentReadRange {
        resource: &ro,
        byte_offset: 0,
        byte_len: n * 4,
    }];
    let mut got = Vec::new();
    backend.dispatch_resident_sequence_read_ranges_into(&steps, &read, &mut [&mut got])?;
    let want: Vec<f32> = (0..n).map(|i| (va[i] + vb[i]) + vc[i]).collect();
    check("resident sequence (a + b) + c", &got, &f32_bytes(&want), n)?;
    for r in [ra, rb, rc, rt, ro] {
        backend.free_resident(r)?;
    }

    if let Some(c) = backend.pipeline_cache_snapshot() {
        println!("kernel cache: {} hits, {} misses", c.hits, c.misses);
    }
    println!("all results verified on {}", backend.id());
    Ok(())
}
