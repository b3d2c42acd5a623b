//! `benches/gpu/vyre_dispatch_race.sh` without a GPU: stand-ins for vyrescope and the race
//! binary print seeded reports in the benchmark's JSON; the script's side-by-side table holds
//! both medians, their ratio, the copy limit and each backend's multiple of it, and its exit
//! status says when a run failed or a result was wrong. Needs python3, as the GPU machine.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use vyrescope::inputs::prng::SplitMix64;

/// A report as `selftest --vyre-dispatch --json` writes it, medians from `rng`.
fn report(backend: &str, rng: &mut SplitMix64, bandwidth: bool, wrong_row: Option<usize>) -> Value {
    let rows: Vec<Value> = [("vadd_f32", 1024u64), ("vadd_f32", 1 << 20), ("reduce_sum_u32", 1 << 24)]
        .iter()
        .enumerate()
        .map(|(i, (program, elements))| {
            let median = 10.0 + (rng.next_u64() % 100_000) as f64 / 10.0;
            json!({
                "program": program, "elements": elements, "bytes_moved": 12 * elements,
                "first_ms": 1.0 + (rng.next_u64() % 1000) as f64 / 100.0, "repeats": 10,
                "median_us": median, "min_us": median, "limit_us": bandwidth.then_some(5.0 * (i + 1) as f64),
                "vs_limit": null, "resident_wall_us": 20.0, "resident_device_us": 8.5,
                "split": {"wall_us": median, "before_wait_us": null, "device_us": null, "after_wait_us": null},
                "verified": wrong_row != Some(i),
            })
        })
        .collect();
    json!({
        "backend": backend,
        "h2d_gbps": bandwidth.then_some(51.5), "d2h_gbps": bandwidth.then_some(49.25),
        "passed": wrong_row.is_none(), "rows": rows,
    })
}

/// A stand-in binary that prints `out` (nothing for `null`, as a run that failed) and exits
/// with `code`.
fn stand_in(dir: &Path, name: &str, out: &Value, code: i32) -> String {
    let json = dir.join(format!("{name}.out"));
    let text = match out {
        Value::Null => String::new(),
        v => serde_json::to_string_pretty(v).unwrap(),
    };
    std::fs::write(&json, text).unwrap();
    let bin = dir.join(name);
    crate::support::script::sh_script(
        &bin,
        &format!(
            "cat '{}'\n[ {code} -eq 0 ] || echo '{name}: failed. Fix: x' >&2\nexit {code}",
            json.display()
        ),
    );
    bin.display().to_string()
}

fn race(ours: &Value, theirs: &Value, theirs_code: i32) -> (i32, String, String) {
    let d = tempfile::tempdir().unwrap();
    let a = stand_in(d.path(), "vyrescope", ours, 0);
    let b = stand_in(d.path(), "vyre-driver-race", theirs, theirs_code);
    let out = d.path().join("out");
    let run = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/gpu/vyre_dispatch_race.sh"))
        .args([&a, &b, &out.display().to_string()])
        .output()
        .unwrap();
    let table = std::fs::read_to_string(out.join("race.txt")).unwrap_or_default();
    for kept in ["vyrescope.json", "vyre-driver.json"] {
        assert!(out.join(kept).is_file(), "{kept} not kept");
    }
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    (run.status.code().unwrap_or(-1), table, log)
}

#[test]
fn the_race_table_puts_both_backends_against_the_copy_limit() {
    let mut rng = SplitMix64::new(45);
    let ours = report("vyrescope-cuda", &mut rng, true, None);
    let theirs = report("cuda", &mut rng, false, None);
    let (code, table, log) = race(&ours, &theirs, 0);
    assert_eq!(code, 0, "{log}");
    assert!(
        table.contains("host->device 51.5 GB/s, device->host 49.2 GB/s"),
        "{table}"
    );
    for (i, (a, b)) in ours["rows"]
        .as_array()
        .unwrap()
        .iter()
        .zip(theirs["rows"].as_array().unwrap())
        .enumerate()
    {
        let (ma, mb) = (
            a["median_us"].as_f64().unwrap(),
            b["median_us"].as_f64().unwrap(),
        );
        let limit = 5.0 * (i + 1) as f64;
        let line = table
            .lines()
            .find(|l| {
                l.split_whitespace()
                    .take(2)
                    .eq([a["program"].as_str().unwrap(), &a["elements"].to_string()])
            })
            .unwrap_or_else(|| panic!("row {i} missing:\n{table}"));
        let want: Vec<String> = vec![
            format!("{ma:.1}"),
            format!("{mb:.1}"),
            format!("{:.2}", mb / ma),
            format!("{limit:.2}"),
            format!("{:.2}", ma / limit),
            format!("{:.2}", mb / limit),
        ];
        let cells: Vec<&str> = line.split_whitespace().skip(2).take(6).collect();
        assert_eq!(cells, want, "{line}");
        assert!(line.ends_with("verified verified"), "{line}");
    }
    assert!(table.contains("vyre dispatch race PASSED"), "{table}");
}

#[test]
fn a_wrong_result_or_a_failed_run_fails_the_race() {
    let mut rng = SplitMix64::new(7);
    let ours = report("vyrescope-cuda", &mut rng, true, None);
    let wrong = report("cuda", &mut rng, false, Some(1));
    let (code, table, log) = race(&ours, &wrong, 1);
    assert_eq!(code, 1, "{log}");
    assert!(table.contains("verified WRONG"), "{table}");
    assert!(table.contains("vyre dispatch race FAILED"), "{table}");
    // The race binary without a GPU: its error, no table, exit 1.
    let (code, table, log) = race(&ours, &Value::Null, 2);
    assert_eq!(code, 1, "{log}");
    assert!(!table.contains("PASSED"), "{table}");
    assert!(log.contains("vyre-driver-race: failed. Fix: x"), "{log}");
    assert!(log.contains("vyre-driver.json: no report"), "{log}");
    // Something that is JSON but no report: named, not a traceback.
    let (code, _, log) = race(&ours, &json!(["not", "a", "report"]), 0);
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains("vyre-driver.json: not a dispatch report"),
        "{log}"
    );
    assert!(!log.contains("Traceback"), "{log}");
}
