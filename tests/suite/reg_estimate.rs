//! The offline register estimate (`emit::reg_estimate`, used by `occupancy` and the inspector
//! when ptxas is missing) against ptxas itself on every fixture at sm_90: within a stated
//! margin, and with a mean error the docs quote. Skips without ptxas (fails in CI, like the
//! other ptxas checks).

use crate::support::fixtures::fixtures;

use vyrescope::emit::ptxas::offline_resources;
use vyrescope::emit::reg_estimate::{estimate_registers, max_live, static_shared_bytes};
use vyrescope::emit::{emit, EmitOptions};

/// Largest difference accepted between the estimate and ptxas, registers.
const MARGIN: i64 = 16;
/// Fixtures the estimate is known to over-count by more than [`MARGIN`], with the bound that
/// still holds for them: `saturating_int` keeps the clamp temporaries of a dozen independent
/// 64-bit saturating operations live at once in PTX, which ptxas reschedules (estimate 51,
/// ptxas 32 with the pinned ptxas 13). A gap past the bound, or an under-estimate, still fails.
const KNOWN_OVER: &[(&str, i64)] = &[("saturating_int", 24)];

#[test]
fn estimate_tracks_ptxas_on_every_fixture() {
    if crate::support::tools::ptxas("the register-estimate comparison").is_none() {
        return;
    }
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for (path, p) in fixtures() {
        let opts = EmitOptions {
            sm: 90,
            workgroup_size: p.workgroup_size,
            lineinfo: false,
            unroll: true,
            grid_barrier: Default::default(),
            version_bounds: false,
        };
        let k = emit(&p, &opts).unwrap();
        let exact = offline_resources(&k.ptx, 90).unwrap();
        let live = max_live(&k.ptx);
        let est = estimate_registers(&k.ptx);
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        // Static shared memory is read from the PTX exactly.
        if static_shared_bytes(&k.ptx) != exact.shared_bytes {
            failures.push(format!(
                "{name}: shared {} vs ptxas {}",
                static_shared_bytes(&k.ptx),
                exact.shared_bytes
            ));
        }
        let diff = i64::from(est) - i64::from(exact.registers);
        let known = KNOWN_OVER.iter().find(|(n, _)| *n == name);
        let bad = match known {
            Some((_, bound)) => !(0..=*bound).contains(&diff),
            None => diff.abs() > MARGIN,
        };
        if bad {
            failures.push(format!(
                "{name}: estimate {est} vs ptxas {}",
                exact.registers
            ));
        }
        rows.push((name, live, est, exact.registers, diff));
    }
    let mean_abs = rows.iter().map(|r| r.4.abs() as f64).sum::<f64>() / rows.len() as f64;
    println!("| fixture | max live | estimate | ptxas | difference |");
    println!("|---|---|---|---|---|");
    for (n, live, est, exact, diff) in &rows {
        println!("| {n} | {live} | {est} | {exact} | {diff:+} |");
    }
    println!(
        "mean absolute difference: {mean_abs:.1} registers over {} fixtures",
        rows.len()
    );
    assert!(rows.len() >= 15);
    assert!(mean_abs <= 8.0, "mean absolute difference {mean_abs:.1}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
