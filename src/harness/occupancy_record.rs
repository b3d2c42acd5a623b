//! Occupancy record: kernels of many register counts and static shared sizes, asked of the
//! driver (`cuOccupancyMaxActiveBlocksPerMultiprocessor`) at every block size and several
//! dynamic shared sizes; the table the estimator is tested against in CI.

use std::fmt::Write as _;

use serde::Serialize;

use crate::runtime::jit::JitOptions;
use crate::runtime::{Result, Runtime};

/// CSV header of the occupancy record.
pub const CSV_HEADER: &str =
    "regs_per_thread,block_size,dynamic_smem_bytes,static_smem_bytes,blocks_per_sm_driver";

/// One driver answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OccupancyRow {
    /// Registers per thread the driver reports for the kernel.
    pub regs_per_thread: u32,
    /// Threads per block.
    pub block_size: u32,
    /// Dynamic shared memory per block (bytes).
    pub dynamic_smem_bytes: u32,
    /// Static shared memory per block (bytes).
    pub static_smem_bytes: u32,
    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor`.
    pub blocks_per_sm_driver: u32,
}

/// Values kept live at once by the occupancy-record kernel: enough that any register cap up to 255
/// is reached.
const LIVE_VALUES: usize = 160;

/// PTX of a kernel that keeps [`LIVE_VALUES`] loaded values live until a final mixing
/// pass, plus a used static shared array of `static_smem` bytes (0 = none).
pub fn register_hungry_ptx(name: &str, static_smem: u32) -> String {
    let n = LIVE_VALUES;
    let mut p = String::new();
    let _ = writeln!(p, ".version 7.8\n.target sm_70\n.address_size 64\n");
    let _ = writeln!(p, ".visible .entry {name}(.param .u64 buf)\n{{");
    let _ = writeln!(
        p,
        "    .reg .b32 %v<{}>;\n    .reg .b32 %t<4>;\n    .reg .b64 %rd<4>;",
        n + 1
    );
    if static_smem > 0 {
        let _ = writeln!(p, "    .shared .align 16 .b8 tile[{static_smem}];");
    }
    let _ = writeln!(
        p,
        "    ld.param.u64 %rd1, [buf];\n    cvta.to.global.u64 %rd1, %rd1;"
    );
    let _ = writeln!(
        p,
        "    mov.u32 %t1, %tid.x;\n    mul.wide.u32 %rd2, %t1, 4;\n    add.u64 %rd3, %rd1, %rd2;"
    );
    // Volatile loads keep their order, and every value is needed by the mixing pass below.
    for i in 0..n {
        let _ = writeln!(p, "    ld.volatile.global.u32 %v{i}, [%rd3+{}];", i * 4);
    }
    for i in 0..n {
        let a = (i * 7 + 3) % n;
        let b = (i * 13 + 5) % n;
        let _ = writeln!(p, "    mad.lo.u32 %v{i}, %v{a}, %v{b}, %v{i};");
    }
    let _ = writeln!(p, "    mov.u32 %t2, 0;");
    for i in 0..n {
        let _ = writeln!(p, "    xor.b32 %t2, %t2, %v{i};");
    }
    if static_smem > 0 {
        // Use the shared array so it is not removed: store, barrier, load back.
        // Index the largest power-of-two word count that fits the array.
        let words = (static_smem / 4).max(1);
        let mask = (1u32 << (31 - words.leading_zeros())) - 1;
        let _ = writeln!(p, "    and.b32 %t3, %t1, {mask};");
        let _ = writeln!(
            p,
            "    shl.b32 %t3, %t3, 2;\n    mov.u32 %t0, tile;\n    add.u32 %t3, %t3, %t0;"
        );
        let _ = writeln!(p, "    st.volatile.shared.u32 [%t3], %t2;\n    bar.sync 0;\n    ld.volatile.shared.u32 %t2, [%t3];");
    }
    let _ = writeln!(p, "    st.global.u32 [%rd3], %t2;\n    ret;\n}}");
    p
}

/// Captures the occupancy table: register caps `caps_regs`, static shared sizes
/// `static_sizes`; every multiple-of-32 block size the kernel allows; dynamic shared
/// sizes from 0 to what fits next to the static part.
pub fn record_occupancy(
    rt: &mut Runtime,
    caps_regs: &[u32],
    static_sizes: &[u32],
) -> Result<Vec<OccupancyRow>> {
    let optin = rt.caps().smem_per_block_optin;
    let mut rows = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for &st in static_sizes {
        let ptx = register_hungry_ptx("vs_regs", st);
        for &cap in caps_regs {
            let opts = JitOptions {
                max_registers: cap,
                ..JitOptions::default()
            };
            let (h, info) = rt.load_kernel(&ptx, "vs_regs", &opts)?;
            let r = info.resources.clone();
            if !seen.insert((r.regs_per_thread, r.static_smem_bytes)) {
                continue;
            }
            let room = optin.saturating_sub(r.static_smem_bytes);
            let dyn_sizes = dynamic_sizes(room);
            let mut block = 32;
            while block <= r.max_threads_per_block {
                for &d in &dyn_sizes {
                    let n = rt.driver_occupancy(&h, block, d)?;
                    rows.push(OccupancyRow {
                        regs_per_thread: r.regs_per_thread,
                        block_size: block,
                        dynamic_smem_bytes: d,
                        static_smem_bytes: r.static_smem_bytes,
                        blocks_per_sm_driver: n,
                    });
                }
                block += 32;
            }
        }
    }
    Ok(rows)
}

/// Dynamic shared sizes to test next to `room` free bytes: zero, small, around the 48 KiB
/// default limit, and up to the opt-in maximum (at least six distinct sizes).
pub fn dynamic_sizes(room: u32) -> Vec<u32> {
    let mut v: Vec<u32> = [
        0,
        1024,
        3000,
        16384,
        40000,
        49152,
        65536,
        100_000,
        160_000,
        room / 2,
        room,
    ]
    .into_iter()
    .filter(|&d| d <= room)
    .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The rows as CSV with [`CSV_HEADER`].
pub fn to_csv(rows: &[OccupancyRow]) -> String {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{}",
            r.regs_per_thread,
            r.block_size,
            r.dynamic_smem_bytes,
            r.static_smem_bytes,
            r.blocks_per_sm_driver
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_kernel_is_well_formed() {
        let p = register_hungry_ptx("vs_regs", 4096);
        assert!(p.contains(".shared .align 16 .b8 tile[4096];"));
        assert_eq!(p.matches("ld.volatile.global.u32").count(), LIVE_VALUES);
        // Every register used is declared.
        assert!(p.contains(&format!(".reg .b32 %v<{}>;", LIVE_VALUES + 1)));
        assert!(!register_hungry_ptx("k", 0).contains(".shared"));
    }

    #[test]
    fn dynamic_sizes_are_many_and_fit() {
        let v = dynamic_sizes(232_448 - 4096);
        assert!(v.len() >= 6);
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(v.last().copied(), Some(232_448 - 4096));
        assert_eq!(dynamic_sizes(0), vec![0]);
    }

    #[test]
    fn csv_has_header_and_rows() {
        let rows = [OccupancyRow {
            regs_per_thread: 32,
            block_size: 256,
            dynamic_smem_bytes: 0,
            static_smem_bytes: 0,
            blocks_per_sm_driver: 8,
        }];
        assert_eq!(to_csv(&rows), format!("{CSV_HEADER}\n32,256,0,0,8\n"));
    }
}
