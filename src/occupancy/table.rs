//! Driver answer tables: rows of (kernel resources, launch) -> blocks per SM as returned by
//! `cuOccupancyMaxActiveBlocksPerMultiprocessor`, their CSV form, and the comparison with the
//! estimator (used by `tests/occupancy_h200_table.rs` and the GPU selftest).

use serde::Serialize;

use super::estimate::{blocks_per_sm, FuncConfig};
use super::{DeviceCaps, KernelResources};

/// The CSV header, in column order.
pub const CSV_HEADER: &str =
    "regs_per_thread,block_size,dynamic_smem_bytes,static_smem_bytes,blocks_per_sm_driver";

/// One driver answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct TableRow {
    /// Registers per thread of the kernel (as the driver reports `CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub regs_per_thread: u32,
    /// Threads per block.
    pub block_size: u32,
    /// Dynamic shared memory per block (bytes); the kernel's max-dynamic attribute was raised
    /// to it where it exceeds the default.
    pub dynamic_smem_bytes: u32,
    /// Static shared memory of the kernel (bytes).
    pub static_smem_bytes: u32,
    /// The driver's blocks per SM.
    pub blocks_per_sm_driver: u32,
}

impl TableRow {
    /// The CSV line (no newline).
    pub fn to_csv(&self) -> String {
        format!(
            "{},{},{},{},{}",
            self.regs_per_thread,
            self.block_size,
            self.dynamic_smem_bytes,
            self.static_smem_bytes,
            self.blocks_per_sm_driver
        )
    }
}

/// A malformed table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TableError {
    /// File name.
    pub origin: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Parses a driver table; blank lines and `#` comments are skipped.
pub fn parse_csv(text: &str, origin: &str) -> Result<Vec<TableRow>, TableError> {
    let err = |line: usize, message: String| TableError {
        origin: origin.to_string(),
        line,
        message,
    };
    let mut rows = Vec::new();
    let mut saw_header = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !saw_header {
            if line != CSV_HEADER {
                return Err(err(i + 1, format!("expected the header, found `{line}`")));
            }
            saw_header = true;
            continue;
        }
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        if cols.len() != 5 {
            return Err(err(i + 1, format!("{} columns, expected 5", cols.len())));
        }
        let mut v = [0u32; 5];
        for (slot, c) in v.iter_mut().zip(&cols) {
            *slot = c
                .parse()
                .map_err(|_| err(i + 1, format!("`{c}` is not an unsigned integer")))?;
        }
        rows.push(TableRow {
            regs_per_thread: v[0],
            block_size: v[1],
            dynamic_smem_bytes: v[2],
            static_smem_bytes: v[3],
            blocks_per_sm_driver: v[4],
        });
    }
    if !saw_header {
        return Err(err(1, "empty table".to_string()));
    }
    Ok(rows)
}

/// A row where the estimator and the driver disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// The driver row.
    pub row: TableRow,
    /// The estimator's blocks per SM.
    pub estimated: u32,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = &self.row;
        write!(
            f,
            "regs {} block {} dynamic {} B static {} B: driver {} blocks/SM, estimator {}",
            r.regs_per_thread,
            r.block_size,
            r.dynamic_smem_bytes,
            r.static_smem_bytes,
            r.blocks_per_sm_driver,
            self.estimated
        )
    }
}

/// Result of comparing a table with the estimator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// Rows compared.
    pub rows: usize,
    /// Rows that disagree.
    pub mismatches: Vec<Mismatch>,
}

impl Comparison {
    /// True when every row agrees.
    pub fn all_agree(&self) -> bool {
        self.mismatches.is_empty()
    }
}

/// The kernel resources a table row describes (kernel max threads left to the model).
pub fn row_resources(r: &TableRow) -> KernelResources {
    KernelResources {
        regs_per_thread: r.regs_per_thread,
        static_smem_bytes: r.static_smem_bytes,
        ..KernelResources::default()
    }
}

/// Compares every row with the estimator on `caps`, under the launch settings the table was
/// captured with (max-dynamic attribute raised as needed, no carveout preference).
pub fn compare_rows(caps: &DeviceCaps, rows: &[TableRow]) -> Comparison {
    let cfg = FuncConfig::default();
    let mismatches = rows
        .iter()
        .filter_map(|r| {
            let est = blocks_per_sm(
                caps,
                &row_resources(r),
                r.block_size,
                r.dynamic_smem_bytes,
                &cfg,
            );
            (est != r.blocks_per_sm_driver).then_some(Mismatch {
                row: *r,
                estimated: est,
            })
        })
        .collect();
    Comparison {
        rows: rows.len(),
        mismatches,
    }
}

impl crate::util::HasFix for TableError {
    fn message(&self) -> String {
        format!("{}:{}: {}", self.origin, self.line, self.message)
    }

    fn fix(&self) -> String {
        format!("the table needs the header `{CSV_HEADER}` and five unsigned integers per row")
    }
}

crate::util::problem::into_problem!(TableError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_round_trips_and_reports_bad_lines() {
        let r = TableRow {
            regs_per_thread: 32,
            block_size: 256,
            dynamic_smem_bytes: 0,
            static_smem_bytes: 0,
            blocks_per_sm_driver: 8,
        };
        let text = format!("# captured\n{CSV_HEADER}\n{}\n\n", r.to_csv());
        assert_eq!(parse_csv(&text, "t.csv").unwrap(), vec![r]);
        let e = parse_csv(&format!("{CSV_HEADER}\n1,2,x,4,5\n"), "t.csv").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("`x`"));
        assert!(parse_csv("a,b\n", "t.csv").is_err());
    }
}
