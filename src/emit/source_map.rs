//! The IR <-> PTX source map: built from the owner recorded with every body line, and its
//! JSON form (`vyrescope emit --map`).

use serde_json::{json, Value};

use super::{EmittedKernel, MapEntry, SourceMap};

/// Builds the map from `(1-based line, owner name)` pairs given in line order.
pub fn build<'a>(lines: impl IntoIterator<Item = (u32, &'a str)>) -> SourceMap {
    let mut entries: Vec<MapEntry> = Vec::new();
    let mut index = std::collections::HashMap::<&str, usize>::new();
    for (line, owner) in lines {
        let i = *index.entry(owner).or_insert_with(|| {
            entries.push(MapEntry {
                node: owner.to_string(),
                lines: Vec::new(),
            });
            entries.len() - 1
        });
        let ranges = &mut entries[i].lines;
        match ranges.last_mut() {
            Some(r) if r[1] + 1 == line => r[1] = line,
            _ => ranges.push([line, line]),
        }
    }
    SourceMap { entries }
}

impl SourceMap {
    /// The node owning PTX line `line` (1-based), if any.
    pub fn node_at(&self, line: u32) -> Option<&str> {
        self.entries
            .iter()
            .find(|e| e.lines.iter().any(|r| r[0] <= line && line <= r[1]))
            .map(|e| e.node.as_str())
    }

    /// The owner of every PTX line up to the last one mapped (index 0 is line 1): for
    /// callers that ask about many lines, one pass instead of a search per line.
    pub fn owners(&self) -> Vec<Option<&str>> {
        let last = self
            .entries
            .iter()
            .flat_map(|e| e.lines.iter().map(|r| r[1]))
            .max()
            .unwrap_or(0);
        let mut out = vec![None; last as usize];
        // In entry order, the first owner of a line wins, as in `node_at`.
        for e in self.entries.iter().rev() {
            for r in &e.lines {
                for l in r[0].max(1)..=r[1] {
                    out[l as usize - 1] = Some(e.node.as_str());
                }
            }
        }
        out
    }

    /// The line ranges of every node, by node: for callers that ask about many nodes.
    pub fn by_node(&self) -> std::collections::HashMap<&str, &[[u32; 2]]> {
        let mut m = std::collections::HashMap::new();
        for e in &self.entries {
            m.entry(e.node.as_str()).or_insert(e.lines.as_slice());
        }
        m
    }

    /// The line ranges of `node` (empty when it produced no lines).
    pub fn lines_of(&self, node: &str) -> &[[u32; 2]] {
        self.entries
            .iter()
            .find(|e| e.node == node)
            .map(|e| e.lines.as_slice())
            .unwrap_or(&[])
    }
}

/// `{"kernel", "ptx", "map": [{"node", "lines": [[a, b], ..]}], "stats", "abi"}`.
pub fn to_json(k: &EmittedKernel) -> Value {
    json!({
        "kernel": k.kernel_name,
        "ptx": k.ptx,
        "map": k.source_map.entries,
        "stats": k.stats,
        "abi": k.abi,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_lines_merge_into_ranges_in_first_line_order() {
        let m = build([
            (3, "prologue"),
            (4, "prologue"),
            (5, "body[0]"),
            (6, "body[1]"),
            (7, "body[0]"),
            (8, "body[0]"),
        ]);
        assert_eq!(m.entries.len(), 3);
        assert_eq!(m.entries[0].node, "prologue");
        assert_eq!(m.entries[0].lines, vec![[3, 4]]);
        assert_eq!(m.lines_of("body[0]"), &[[5, 5], [7, 8]]);
        assert_eq!(m.node_at(6), Some("body[1]"));
        assert_eq!(m.node_at(99), None);
    }
}
