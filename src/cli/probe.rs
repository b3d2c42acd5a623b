//! `vyrescope probe [--json]`: the live device's capabilities.

use crate::runtime::probe::probe;
use crate::util::Problem;

/// Probe a CUDA device and print its capabilities.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope probe\n  vyrescope probe --json > fixtures/devices/h200.json"
)]
pub struct Args {
    /// GPU ordinal (`--gpu N`).
    #[command(flatten)]
    pub gpu: super::gpu_arg::GpuArg,
    /// Print the `DeviceCaps` JSON (the device-profile format of `occupancy --device FILE`).
    #[arg(long)]
    pub json: bool,
}

/// Runs `probe`.
pub fn run(a: &Args) -> super::Outcome {
    let gpu = a.gpu.ordinal()?;
    let caps = probe(gpu)?;
    if a.json {
        return match serde_json::to_string_pretty(&caps) {
            Ok(s) => {
                outln!("{s}");
                Ok(0)
            }
            Err(e) => Err(Problem::bug(e)),
        };
    }
    let kib = |b: u32| format!("{} B ({} KiB)", b, b / 1024);
    let rows: Vec<(&str, String)> = vec![
        ("name", caps.name.clone()),
        (
            "compute capability",
            format!("{}.{}", caps.cc_major, caps.cc_minor),
        ),
        ("SMs", caps.sm_count.to_string()),
        ("threads / block", caps.max_threads_per_block.to_string()),
        ("threads / SM", caps.max_threads_per_sm.to_string()),
        ("blocks / SM", caps.max_blocks_per_sm.to_string()),
        ("registers / SM", caps.regs_per_sm.to_string()),
        ("registers / block", caps.regs_per_block.to_string()),
        ("shared / block", kib(caps.smem_per_block)),
        ("shared / block opt-in", kib(caps.smem_per_block_optin)),
        ("shared / SM", kib(caps.smem_per_sm)),
        (
            "shared reserved / block",
            format!("{} B", caps.smem_reserved_per_block),
        ),
        ("warp size", caps.warp_size.to_string()),
        ("max block dims", format!("{:?}", caps.max_block_dim)),
        ("max grid dims", format!("{:?}", caps.max_grid_dim)),
        ("L2", format!("{} MiB", caps.l2_bytes >> 20)),
        ("SM clock", format!("{} MHz", caps.clock_khz / 1000)),
        ("memory clock", format!("{} MHz", caps.mem_clock_khz / 1000)),
        ("memory bus", format!("{} bit", caps.bus_width_bits)),
        ("cooperative launch", caps.cooperative_launch.to_string()),
        (
            "global memory",
            format!(
                "{:.1} GiB",
                caps.total_mem_bytes as f64 / (1u64 << 30) as f64
            ),
        ),
        (
            "driver API",
            format!(
                "{}.{}",
                caps.driver_version / 1000,
                caps.driver_version % 1000 / 10
            ),
        ),
        ("source", caps.source.clone()),
        ("provenance", caps.provenance.clone()),
    ];
    for (k, v) in rows {
        outln!("{k:>24}  {v}");
    }
    Ok(0)
}
