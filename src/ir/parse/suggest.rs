//! The valid alternatives of a misspelt name (expression or statement kind, type, access,
//! operator), closest first, for parse errors' `Fix:` lines.

use crate::ir::ast::{Access, AtomicOp, BinOp, ReduceOp, UnOp};
use crate::ir::types::{ElemType, ScalarType};

/// Expression kinds that are not operators or typed literals.
const OTHER_EXPR_KINDS: [&str; 16] = [
    "gid",
    "lid",
    "wgid",
    "nwg",
    "lane",
    "subgroup_size",
    "load",
    "len",
    "select",
    "fma",
    "cast",
    "bitcast",
    "atomic",
    "shuffle",
    "subgroup_reduce",
    "ballot",
];

/// Every statement kind, in the format's order.
pub(crate) const STMT_KIND_NAMES: [&str; 8] = [
    "let", "assign", "store", "if", "loop", "barrier", "return", "block",
];

/// Every first key an expression object may have: typed literals, operators and the rest.
pub(crate) fn expr_kinds() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = ScalarType::ALL
        .iter()
        .filter(|t| **t != ScalarType::Bool)
        .map(|t| t.name())
        .collect();
    v.extend(BinOp::ALL.iter().map(|o| o.name()));
    v.extend(UnOp::ALL.iter().map(|o| o.name()));
    v.extend(OTHER_EXPR_KINDS);
    v
}

/// Value type names (`cast`, typed literals).
pub(crate) fn value_types() -> Vec<&'static str> {
    ScalarType::ALL.iter().map(|t| t.name()).collect()
}

/// Buffer element type names.
pub(crate) fn elem_types() -> Vec<&'static str> {
    ElemType::ALL.iter().map(|t| t.name()).collect()
}

/// Buffer access names.
pub(crate) fn accesses() -> Vec<&'static str> {
    [
        Access::Read,
        Access::ReadWrite,
        Access::Write,
        Access::Uniform,
        Access::Workgroup,
    ]
    .iter()
    .map(|a| a.name())
    .collect()
}

/// Atomic operation names.
pub(crate) fn atomic_ops() -> Vec<&'static str> {
    AtomicOp::ALL.iter().map(|o| o.name()).collect()
}

/// Subgroup reduction names.
pub(crate) fn reduce_ops() -> Vec<&'static str> {
    ReduceOp::ALL.iter().map(|o| o.name()).collect()
}

/// `names` ordered by edit distance to `given` (case-insensitive optimal string alignment;
/// a name that starts with `given` counts as close); ties go to the higher Jaro-Winkler
/// similarity (`laod` is nearer `load` than `land`), then to `names`' order.
pub(crate) fn closest_first(given: &str, names: &[&'static str]) -> Vec<&'static str> {
    let g = given.to_ascii_lowercase();
    let mut scored: Vec<(usize, std::cmp::Reverse<u32>, usize, &'static str)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            // Twice the edit distance, so that a name extending the given prefix (`sqr` ->
            // `sqrt`) ranks between exact matches and one-letter typos.
            let mut d = 2 * strsim::osa_distance(&g, n);
            if !g.is_empty() && n.starts_with(&g) {
                d = d.min(1);
            }
            let similar = (strsim::jaro_winkler(&g, n) * 1e6) as u32;
            (d, std::cmp::Reverse(similar), i, *n)
        })
        .collect();
    scored.sort();
    let mut seen = std::collections::HashSet::new();
    scored
        .into_iter()
        .map(|s| s.3)
        .filter(|n| seen.insert(*n))
        .collect()
}

/// The fix line for an unknown name: "did you mean `X`? " when one name is close, then every
/// valid name, closest first, after `what` ("an expression kind is one of").
pub(crate) fn fix_for(given: &str, names: &[&'static str], what: &str) -> String {
    let sorted = closest_first(given, names);
    let g = given.to_ascii_lowercase();
    let close = sorted
        .first()
        .filter(|n| strsim::osa_distance(&g, n) <= 2.max(given.len() / 3))
        .map(|n| format!("did you mean `{n}`? "))
        .unwrap_or_default();
    format!("{close}{what} (closest first): {}", sorted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_name_comes_first() {
        let kinds = expr_kinds();
        assert_eq!(closest_first("laod", &kinds)[0], "load");
        assert_eq!(closest_first("sqr", &kinds)[0], "sqrt");
        assert_eq!(closest_first("SELECT", &kinds)[0], "select");
        assert_eq!(closest_first("stor", &STMT_KIND_NAMES)[0], "store");
        assert_eq!(closest_first("lets", &STMT_KIND_NAMES)[0], "let");
        assert_eq!(closest_first("f23", &elem_types())[0], "f32");
        assert_eq!(closest_first("readwrite", &accesses())[0], "read_write");
        assert_eq!(closest_first("exchnage", &atomic_ops())[0], "exchange");
    }

    #[test]
    fn every_name_is_listed_once() {
        let kinds = expr_kinds();
        let sorted = closest_first("zzz", &kinds);
        let mut a = sorted.clone();
        a.sort();
        a.dedup();
        assert_eq!(a.len(), sorted.len());
        assert_eq!(sorted.len(), kinds.len());
    }

    #[test]
    fn fix_says_did_you_mean_only_when_close() {
        let f = fix_for("laod", &expr_kinds(), "an expression kind is one of");
        assert!(f.starts_with("did you mean `load`? "), "{f}");
        let f = fix_for(
            "quaternion_product",
            &expr_kinds(),
            "an expression kind is one of",
        );
        assert!(!f.contains("did you mean"), "{f}");
        assert!(f.contains("subgroup_reduce") && f.contains("add"), "{f}");
    }
}
