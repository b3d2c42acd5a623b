//! Text and JSON rendering of a tuning result.

use super::{TuneResult, TuneStatus};

fn wg_text(w: [u32; 3]) -> String {
    if w[1] == 1 && w[2] == 1 {
        w[0].to_string()
    } else if w[2] == 1 {
        format!("{}x{}", w[0], w[1])
    } else {
        format!("{}x{}x{}", w[0], w[1], w[2])
    }
}

/// A table: one line per candidate (workgroup, median ms, occupancy, speedup, status), then
/// the best candidate and where the numbers came from.
pub fn render_text(r: &TuneResult) -> String {
    let mut s = format!(
        "tune {} on {} (driver {}), {} repetitions per candidate, default workgroup {}{}\n",
        r.program,
        r.device,
        r.driver,
        r.repeat,
        wg_text(r.default_workgroup),
        if r.from_cache { " [from cache]" } else { "" }
    );
    s.push_str(&format!(
        "{:>12}  {:>11}  {:>9}  {:>8}  status\n",
        "workgroup", "median ms", "occupancy", "speedup"
    ));
    let best = r.best().map(|b| b.workgroup);
    for row in &r.rows {
        let ms = row
            .median_ms
            .map_or_else(|| "-".to_string(), |m| format!("{m:.4}"));
        let sp = row
            .speedup_vs_default
            .map_or_else(|| "-".to_string(), |x| format!("{x:.2}x"));
        let status = match &row.status {
            TuneStatus::Ok => "ok".to_string(),
            TuneStatus::Mismatch => "MISMATCH vs reference".to_string(),
            TuneStatus::ChangesResults(why) => format!("not timed: changes results: {why}"),
            TuneStatus::CannotLaunch(why) => {
                format!("cannot launch: {}", why.lines().next().unwrap_or(""))
            }
        };
        let mut marks = String::new();
        if let Some(n) = &row.results_note {
            marks.push_str(&format!(" (results {n})"));
        }
        if Some(row.workgroup) == best {
            marks.push_str(" <- best");
        }
        if row.workgroup == r.default_workgroup {
            marks.push_str(" (default)");
        }
        s.push_str(&format!(
            "{:>12}  {:>11}  {:>8.1}%  {:>8}  {status}{marks}\n",
            wg_text(row.workgroup),
            ms,
            row.occupancy_pct,
            sp
        ));
    }
    match r.best() {
        Some(b) => s.push_str(&format!(
            "best: workgroup {} at {:.4} ms{}\n",
            wg_text(b.workgroup),
            b.median_ms.unwrap_or(0.0),
            b.speedup_vs_default
                .map_or_else(String::new, |x| format!(" ({x:.2}x the default)"))
        )),
        None => s.push_str("best: none (no candidate ran and matched the reference)\n"),
    }
    s
}

/// The result as pretty JSON, with `best` added.
pub fn render_json(r: &TuneResult) -> String {
    let mut v = serde_json::to_value(r).unwrap_or(serde_json::Value::Null);
    if let serde_json::Value::Object(m) = &mut v {
        m.insert(
            "best".into(),
            r.best()
                .map_or(serde_json::Value::Null, |b| serde_json::json!(b.workgroup)),
        );
    }
    serde_json::to_string_pretty(&v).unwrap_or_else(|_| "null".into())
}

#[cfg(test)]
mod tests {
    use super::super::{TuneRow, TuneStatus};
    use super::*;

    #[test]
    fn text_and_json_show_every_row_and_the_best() {
        let mut r = TuneResult {
            program: "vadd".into(),
            device: "NVIDIA H200".into(),
            driver: 13000,
            default_workgroup: [256, 1, 1],
            repeat: 20,
            rows: vec![
                TuneRow {
                    workgroup: [128, 1, 1],
                    median_ms: Some(1.2),
                    occupancy_pct: 100.0,
                    speedup_vs_default: None,
                    status: TuneStatus::Ok,
                    results_note: None,
                },
                TuneRow {
                    workgroup: [256, 1, 1],
                    median_ms: Some(1.0),
                    occupancy_pct: 100.0,
                    speedup_vs_default: None,
                    status: TuneStatus::Ok,
                    results_note: None,
                },
                TuneRow {
                    workgroup: [2048, 1, 1],
                    median_ms: None,
                    occupancy_pct: 0.0,
                    speedup_vs_default: None,
                    status: TuneStatus::CannotLaunch(
                        "2048 threads per block exceed the device limit of 1024\n  Fix: x".into(),
                    ),
                    results_note: None,
                },
            ],
            from_cache: true,
        };
        r.compute_speedups();
        let t = render_text(&r);
        assert!(t.contains("[from cache]"));
        assert!(t.contains("0.83x"), "{t}");
        assert!(t.contains("<- best (default)"), "{t}");
        assert!(t.contains("cannot launch: 2048 threads"), "{t}");
        let j: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
        assert_eq!(j["best"], serde_json::json!([256, 1, 1]));
        assert_eq!(j["rows"][2]["status"]["kind"], "cannot_launch");
        let back: TuneResult = serde_json::from_str(&render_json(&r)).unwrap();
        assert_eq!(back.rows, r.rows);
    }
}
