//! `vyrescope occupancy-record --out FILE` (hidden): JIT kernels of many register counts and
//! static shared sizes and record the driver's blocks per SM as CSV (the committed
//! `fixtures/devices/h200-occupancy.csv` the estimator is tested against).

use std::path::PathBuf;

use crate::harness::occupancy_record::to_csv;
use crate::util::Problem;

/// Record the driver's occupancy answers for many kernels into a CSV table.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output CSV file.
    #[arg(long)]
    pub out: PathBuf,
    /// GPU ordinal (`--gpu N`).
    #[command(flatten)]
    pub gpu: super::gpu_arg::GpuArg,
}

/// Register caps passed to the JIT (`CU_JIT_MAX_REGISTERS`).
const REG_CAPS: [u32; 22] = [
    16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 112, 128, 136, 152, 168, 184, 200, 216, 232, 240, 248,
    255,
];
/// Static shared sizes (bytes).
const STATIC_SMEM: [u32; 3] = [0, 4096, 20000];

/// Runs `occupancy-record`.
pub fn run(a: &Args) -> super::Outcome {
    let mut rt = a.gpu.open()?;
    let rows =
        crate::harness::occupancy_record::record_occupancy(&mut rt, &REG_CAPS, &STATIC_SMEM)?;
    let csv = to_csv(&rows);
    if let Err(e) = crate::util::write_atomic(&a.out, csv.as_bytes()) {
        return Err(Problem::new(
            format!("cannot write {}: {e}", a.out.display()),
            "choose a writable path",
        ));
    }
    let mut regs: Vec<u32> = rows.iter().map(|r| r.regs_per_thread).collect();
    regs.sort_unstable();
    regs.dedup();
    outln!(
        "{} rows, register counts {:?}, written to {}",
        rows.len(),
        regs,
        a.out.display()
    );
    Ok(0)
}
