//! [`NodeId`]: a statement's identity, its JSON path in the file (`body[1].then[0]`).
//! Every diagnostic, source-map entry, error and inspector panel speaks in these.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

/// Separates an instrumented statement's id from the purpose of an added statement.
const INSTRUMENTATION_MARK: char = '~';

/// A statement's node id: its JSON path in the file (`body[1].then[0]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct NodeId(String);

impl NodeId {
    /// A node id from its path text.
    pub fn new(path: impl Into<String>) -> Self {
        NodeId(path.into())
    }

    /// The path text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id of a statement that instrumentation inserted next to statement `self` for
    /// `purpose` (`body[1]~profile.start`). File paths never hold `~`, so these ids cannot
    /// collide with a statement of the file.
    pub fn instrumentation(&self, purpose: &str) -> NodeId {
        NodeId(format!("{}{INSTRUMENTATION_MARK}{purpose}", self.0))
    }

    /// True for ids that [`NodeId::instrumentation`] made: statements the profiler added,
    /// which the interpreter's clock does not count.
    pub fn is_instrumentation(&self) -> bool {
        self.0.contains(INSTRUMENTATION_MARK)
    }

    /// The id of the file's statement an instrumentation id belongs to (itself otherwise).
    pub fn instrumented_owner(&self) -> &str {
        self.0
            .split_once(INSTRUMENTATION_MARK)
            .map_or(self.0.as_str(), |(owner, _)| owner)
    }

    /// The id of child `index` in the list field `field` (`body[1]` -> `body[1].then[0]`).
    pub fn child(&self, field: &str, index: usize) -> NodeId {
        NodeId(format!("{}.{field}[{index}]", self.0))
    }
}

impl Deref for NodeId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for NodeId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for NodeId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for NodeId {
    fn from(s: String) -> Self {
        NodeId(s)
    }
}

impl From<&str> for NodeId {
    fn from(s: &str) -> Self {
        NodeId(s.to_string())
    }
}

impl From<&String> for NodeId {
    fn from(s: &String) -> Self {
        NodeId(s.clone())
    }
}

impl From<NodeId> for String {
    fn from(n: NodeId) -> String {
        n.0
    }
}

impl PartialEq<str> for NodeId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for NodeId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for NodeId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}
