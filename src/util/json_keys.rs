//! The one duplicate-key check for every JSON file vyrescope reads (Programs, pipelines,
//! device profiles, the inspector config).
//!
//! JSON leaves repeated keys undefined and `serde_json` keeps the last one silently, so
//! `"body": []` followed by the real body would pass. Each reader first streams the text
//! through [`find_duplicate_key`], a visitor that remembers the keys of every object and
//! stops at the first repeat, before its own typed parse.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// A key that appears twice in one JSON object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    /// The repeated key.
    pub key: String,
    /// JSON path of the repeated member (`buffers[1].name`; the key alone at the top level).
    pub path: String,
    /// 1-based line of the second occurrence's end.
    pub line: usize,
    /// 1-based column of the second occurrence's end.
    pub column: usize,
}

impl DuplicateKey {
    /// The message every reader shows (without the place, which each reader formats).
    pub fn message(&self) -> String {
        format!("duplicate key `{}`", self.key)
    }

    /// The fix hint every reader shows.
    pub fn fix(&self) -> String {
        format!(
            "keep one `{}` in this object: JSON readers disagree on which repeat wins",
            self.key
        )
    }
}

/// The first repeated key of any object in `text`, or `None` when there is none. Text that
/// is not valid JSON yields `None`: the reader's own parse then reports the syntax error
/// with its usual message.
pub fn find_duplicate_key(text: &str) -> Option<DuplicateKey> {
    let found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = Node {
        at: At::Root,
        found: &found,
    };
    if let Err(e) = seed.deserialize(&mut de) {
        if let Some(mut d) = found.into_inner() {
            d.line = e.line();
            d.column = e.column().max(1);
            return Some(d);
        }
    }
    None
}

/// One JSON value at `at`; records the first duplicate in `found`.
struct Node<'a> {
    at: At<'a>,
    found: &'a RefCell<Option<DuplicateKey>>,
}

/// Where a value sits, as links to its parent: the path text is built only for a duplicate,
/// so a long array costs no string per element.
#[derive(Clone, Copy)]
enum At<'a> {
    /// The document.
    Root,
    /// Member `key` of the object at the parent.
    Key(&'a At<'a>, &'a str),
    /// Element `index` of the array at the parent.
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    /// `buffers[1].name`; a top-level key alone; empty for the document.
    fn path(&self) -> String {
        match self {
            At::Root => String::new(),
            At::Key(At::Root, key) => key.to_string(),
            At::Key(parent, key) => format!("{}.{key}", parent.path()),
            At::Index(parent, i) => format!("{}[{i}]", parent.path()),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(Node {
                at: At::Index(&self.at, i),
                found: self.found,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let at = At::Key(&self.at, &key);
            if seen.contains(&key) {
                *self.found.borrow_mut() = Some(DuplicateKey {
                    path: at.path(),
                    key,
                    line: 0,
                    column: 0,
                });
                return Err(de::Error::custom("duplicate key"));
            }
            map.next_value_seed(Node {
                at,
                found: self.found,
            })?;
            seen.insert(key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_repeat_with_its_path_and_place() {
        let text = "{\"a\": 1,\n \"b\": [{\"x\": 1}, {\"y\": 2, \"y\": 3}],\n \"a\": 2}";
        let d = find_duplicate_key(text).expect("duplicate");
        assert_eq!(d.key, "y");
        assert_eq!(d.path, "b[1].y");
        assert_eq!(d.line, 2);
        assert!(d.column > 10, "column {}", d.column);
    }

    #[test]
    fn top_level_repeat_names_the_key() {
        let d = find_duplicate_key("{\"body\": [], \"format\": 1, \"body\": [1]}").unwrap();
        assert_eq!((d.key.as_str(), d.path.as_str()), ("body", "body"));
    }

    #[test]
    fn same_key_in_sibling_objects_and_invalid_json_pass() {
        assert_eq!(
            find_duplicate_key("[{\"a\": 1}, {\"a\": 2}, {\"b\": {\"a\": 3}}]"),
            None
        );
        assert_eq!(find_duplicate_key("{\"a\": 1, \"b\""), None);
        assert_eq!(find_duplicate_key(""), None);
    }
}
