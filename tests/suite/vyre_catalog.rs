//! vyre's op catalogue (feature `vyre`): every fixture entry of vyre-libs and vyre-primitives
//! is imported, run on the reference interpreter and compared with vyre's expected output;
//! the only entries not imported are the ones docs/vyre.md lists as refused, with the codes it
//! gives. Also: the operators and the validator rule that closed earlier refusals are what
//! those entries use, and the CLI prints the same report.

use std::collections::BTreeMap;

use crate::support;

use vyrescope::finding::Severity;
use vyrescope::harness::vyre_catalog::{run_catalog, CatalogBackend, Status};
use vyrescope::ir::{BinOp, Expr};
use vyrescope::vyre::catalog;

/// `id -> code` of the entries docs/vyre.md lists under "Refused catalogue entries".
pub(crate) fn documented_refusals() -> BTreeMap<String, String> {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/vyre.md"),
    )
    .unwrap();
    let start = doc
        .find("### Refused catalogue entries")
        .expect("docs/vyre.md has a `### Refused catalogue entries` section");
    let section = &doc[start..];
    let end = section[4..].find("\n#").map_or(section.len(), |e| e + 4);
    let mut out = BTreeMap::new();
    for line in section[..end].lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | `id` | `CODE` | why |
        if cells.len() >= 4 && cells[1].starts_with("`vyre-") {
            out.insert(
                cells[1].trim_matches('`').to_string(),
                cells[2].trim_matches('`').to_string(),
            );
        }
    }
    out
}

#[test]
fn every_catalogue_entry_matches_vyres_expected_output_except_the_documented_refusals() {
    let rep = run_catalog(&mut CatalogBackend::Reference, None).unwrap();
    let t = rep.totals;
    // vyre-libs 0.7.2 (default features) and vyre-primitives 0.7.2 (all lego features).
    assert!(t.entries >= 240, "only {} entries: {:?}", t.entries, t);
    let libs = rep
        .entries
        .iter()
        .filter(|e| e.source == catalog::Source::VyreLibs)
        .count();
    assert!(
        libs >= 90 && t.entries - libs >= 140,
        "{libs} vyre-libs entries"
    );
    let refused: BTreeMap<String, String> = rep
        .entries
        .iter()
        .filter(|e| e.status == Status::Refused)
        .map(|e| (e.id.clone(), e.codes.join(",")))
        .collect();
    let documented = documented_refusals();
    assert_eq!(
        refused, documented,
        "refused entries and their codes must be the ones docs/vyre.md lists"
    );
    assert!(refused.len() <= 6, "{refused:?}");
    for e in &rep.entries {
        if e.status == Status::Refused {
            assert!(!e.imported && !e.detail.is_empty(), "{e:?}");
            continue;
        }
        assert!(e.imported, "{e:?}");
        assert_eq!(e.status, Status::Matched, "{}: {}", e.id, e.detail);
        assert!(e.cases >= 1 && e.matched_cases == e.cases, "{e:?}");
        assert!(
            e.max_ulps_seen <= u64::from(e.f32_ulp),
            "{}: {} ulps with a tolerance of {}",
            e.id,
            e.max_ulps_seen,
            e.f32_ulp
        );
    }
    assert_eq!(t.imported + t.refused, t.entries);
    assert_eq!(t.matched, t.imported);
    assert!(rep.passed);
}

/// The entries that saturating operators and the one-workgroup barrier rule brought in: they
/// import with those constructs (so the catalogue test above covers them).
#[test]
fn saturating_operators_and_one_workgroup_barriers_are_what_closed_refusals() {
    let mut saturating = Vec::new();
    let mut one_workgroup = Vec::new();
    for (source, op) in catalog::operations().unwrap() {
        let prepared = catalog::prepare(source, &op);
        let Ok(p) = prepared.outcome else {
            continue;
        };
        let mut sat = false;
        p.program.walk_exprs(&mut |e: &Expr| {
            e.visit(&mut |x| {
                sat |= matches!(
                    x,
                    Expr::Binary(BinOp::AddSat | BinOp::SubSat | BinOp::MulSat, ..)
                );
            });
        });
        if sat {
            saturating.push(prepared.id.clone());
        }
        let d = vyrescope::validate::validate(&p.program);
        assert!(
            d.iter().all(|d| d.severity != Severity::Error),
            "{}",
            prepared.id
        );
        if d.iter().any(|d| d.code == "V064") {
            one_workgroup.push(prepared.id.clone());
        }
    }
    assert!(saturating.len() >= 4, "{saturating:?}");
    assert!(one_workgroup.len() >= 5, "{one_workgroup:?}");
    assert!(
        one_workgroup
            .iter()
            .any(|id| id == "vyre-primitives::fixpoint::persistent_fixpoint"),
        "{one_workgroup:?}"
    );
}

#[test]
fn selftest_vyre_catalog_prints_the_report() {
    let (code, out, err) = support::cli::run(&[
        "selftest",
        "--vyre-catalog",
        "--backend",
        "reference",
        "--only",
        "nn::relu",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["backend"], "reference");
    assert_eq!(v["passed"], true);
    let entries = v["entries"].as_array().unwrap();
    assert!(!entries.is_empty());
    for e in entries {
        assert!(e["id"].as_str().unwrap().contains("nn::relu"), "{e}");
        assert_eq!(e["status"], "matched", "{e}");
        assert_eq!(e["imported"], true);
    }
    assert_eq!(
        v["totals"]["entries"].as_u64().unwrap() as usize,
        entries.len()
    );
    // Text: one line per entry, then the totals and the verdict.
    let (code, out, _) = support::cli::run(&[
        "selftest",
        "--vyre-catalog",
        "--backend",
        "reference",
        "--only",
        "inflate_stored",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("refused (VY001)"), "{out}");
    assert!(out.contains("0 imported, 2 refused"), "{out}");
    assert!(out.contains("selftest --vyre-catalog PASSED"), "{out}");
}
