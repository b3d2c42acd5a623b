//! The estimator against the driver: every row of `fixtures/devices/h200-occupancy.csv`
//! (blocks per SM from `cuOccupancyMaxActiveBlocksPerMultiprocessor` on an H200, captured by
//! the runtime's selftest for kernels of many register counts) must be reproduced exactly.

use std::path::Path;

use vyrescope::occupancy::{compare_rows, profiles, table};

#[test]
fn estimator_matches_every_h200_driver_row() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let csv = root.join("fixtures/devices/h200-occupancy.csv");
    // The capture is committed: its absence is a failure, never a silent skip.
    assert!(
        csv.exists(),
        "{} is missing: run `vyrescope occupancy-record --out fixtures/devices/h200-occupancy.csv` on an H200 and commit it",
        csv.display()
    );
    let caps = profiles::load(root.join("fixtures/devices/h200.json").to_str().unwrap()).unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows = table::parse_csv(&text, "h200-occupancy.csv").unwrap();
    assert!(rows.len() >= 100, "only {} rows", rows.len());
    let regs: std::collections::BTreeSet<u32> = rows.iter().map(|r| r.regs_per_thread).collect();
    assert!(regs.len() >= 4, "register counts covered: {regs:?}");
    let cmp = compare_rows(&caps, &rows);
    let shown: Vec<String> = cmp
        .mismatches
        .iter()
        .take(20)
        .map(|m| m.to_string())
        .collect();
    assert!(
        cmp.all_agree(),
        "{} of {} rows disagree with the driver, first ones:\n{}",
        cmp.mismatches.len(),
        cmp.rows,
        shown.join("\n")
    );
}
