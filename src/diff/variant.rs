//! A side of a comparison: `FILE[@OPTION]...`, where each option changes one lowering choice:
//! `wg=64` (or `wg=16x16`, `wg=64,1,1`), `sm=80`, `unroll=off` / `unroll=on`,
//! `version-bounds`.

use std::path::PathBuf;

/// A Program file and the lowering options that differ from the defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The spec as given.
    pub label: String,
    /// The Program file.
    pub file: PathBuf,
    /// `wg=`: workgroup size.
    pub workgroup: Option<[u32; 3]>,
    /// `sm=`: target SM.
    pub sm: Option<u32>,
    /// `unroll=on|off`.
    pub unroll: Option<bool>,
    /// `version-bounds`.
    pub version_bounds: bool,
}

/// A malformed spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct VariantError {
    /// The spec.
    pub spec: String,
    /// What is wrong.
    pub message: String,
    /// How to write it.
    pub fix: String,
}

const SPEC_HELP: &str = "write FILE[@OPTION]..., OPTION one of wg=N (or wg=XxY, wg=X,Y,Z), sm=70|75|80|86|89|90, unroll=on|off, version-bounds; e.g. fixtures/programs/saxpy_f32.json@wg=64@sm=80";

/// Splits a spec into its file and its options: the options start at an `@` after the
/// last `/` (folders with `@` in their names still work): the first whose text before it
/// names an existing file, so a file named `a@b.json` is usable (`a@b.json@wg=64`), else the
/// first.
pub fn split(spec: &str) -> (&str, Vec<&str>) {
    let base = spec.rfind('/').map_or(0, |i| i + 1);
    let ats: Vec<usize> = spec[base..]
        .match_indices('@')
        .map(|(i, _)| base + i)
        .collect();
    if ats.is_empty() || std::path::Path::new(spec).is_file() {
        return (spec, Vec::new());
    }
    let at = ats
        .iter()
        .copied()
        .find(|&i| std::path::Path::new(&spec[..i]).is_file())
        .unwrap_or(ats[0]);
    let (file, opts) = spec.split_at(at);
    (file, opts[1..].split('@').collect())
}

impl Variant {
    /// Parses `FILE[@OPTION]...`.
    pub fn parse(spec: &str) -> Result<Variant, VariantError> {
        let bad = |message: String| VariantError {
            spec: spec.to_string(),
            message,
            fix: SPEC_HELP.to_string(),
        };
        let (file, opts) = split(spec);
        if file.is_empty() {
            return Err(bad("no Program file before `@`".into()));
        }
        let mut v = Variant {
            label: spec.to_string(),
            file: PathBuf::from(file),
            workgroup: None,
            sm: None,
            unroll: None,
            version_bounds: false,
        };
        let mut given = std::collections::HashSet::new();
        for o in opts {
            let (key, value) = match o.split_once('=') {
                Some((k, val)) => (k, Some(val)),
                None => (o, None),
            };
            let name = if key == "workgroup" { "wg" } else { key };
            if !given.insert(name) {
                return Err(bad(format!(
                    "option `{name}` is given twice (only one value can hold)"
                )));
            }
            match (key, value) {
                ("wg" | "workgroup", Some(val)) => {
                    v.workgroup = Some(crate::shape::parse_workgroup(val).map_err(|e| bad(e.message))?);
                }
                ("sm", Some(val)) => {
                    let sm: u32 = val
                        .parse()
                        .map_err(|_| bad(format!("sm `{val}` is not a number")))?;
                    if ![70, 75, 80, 86, 89, 90].contains(&sm) {
                        return Err(bad(format!("sm_{sm} is not a supported target")));
                    }
                    v.sm = Some(sm);
                }
                ("unroll", Some("on")) => v.unroll = Some(true),
                ("unroll", Some("off")) => v.unroll = Some(false),
                ("version-bounds", None) => v.version_bounds = true,
                ("vyre", None) => {
                    return Err(VariantError {
                        spec: spec.to_string(),
                        message: "vyre's own lowering is not compared statement by statement (its PTX has no source map)".into(),
                        fix: "use `vyrescope emit --compare-vyre FILE` (feature `vyre`) for ours against vyre's".into(),
                    })
                }
                _ => return Err(bad(format!("unknown option `{o}`"))),
            }
        }
        Ok(v)
    }
}

impl crate::util::HasFix for VariantError {
    fn message(&self) -> String {
        format!("{}: {}", self.spec, self.message)
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

crate::util::problem::into_problem!(VariantError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_after_the_file() {
        let v = Variant::parse("fixtures/programs/saxpy_f32.json@wg=64@sm=80@unroll=off").unwrap();
        assert_eq!(v.file, PathBuf::from("fixtures/programs/saxpy_f32.json"));
        assert_eq!(v.workgroup, Some([64, 1, 1]));
        assert_eq!(v.sm, Some(80));
        assert_eq!(v.unroll, Some(false));
        assert!(!v.version_bounds);
        let v = Variant::parse("a@b/k.json@version-bounds@wg=16x16").unwrap();
        assert_eq!(v.file, PathBuf::from("a@b/k.json"));
        assert!(v.version_bounds);
        assert_eq!(v.workgroup, Some([16, 16, 1]));
        assert_eq!(Variant::parse("k.json").unwrap().workgroup, None);
    }

    #[test]
    fn a_file_with_at_in_its_name_is_usable() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("a@b.json");
        std::fs::write(&f, "{}").unwrap();
        let spec = f.display().to_string();
        assert_eq!(Variant::parse(&spec).unwrap().file, f);
        let v = Variant::parse(&format!("{spec}@wg=64")).unwrap();
        assert_eq!((v.file, v.workgroup), (f, Some([64, 1, 1])));
    }

    #[test]
    fn bad_options_say_how_to_write_them() {
        for spec in [
            "k.json@wg=0",
            "k.json@wg=99999999999",
            "k.json@sm=90@sm=80",
            "k.json@sm=91",
            "k.json@unroll=maybe",
            "k.json@fast",
            "@wg=64",
        ] {
            let e = Variant::parse(spec).unwrap_err().to_string();
            assert!(e.starts_with(spec), "{e}");
            assert!(e.contains("\n  Fix: "), "{e}");
            assert_eq!(e.matches("Fix:").count(), 1, "{e}");
        }
        let e = Variant::parse("k.json@wg=99999999999")
            .unwrap_err()
            .to_string();
        assert!(e.contains("above CUDA's limit"), "{e}");
        let e = Variant::parse("k.json@sm=90@sm=80")
            .unwrap_err()
            .to_string();
        assert!(e.contains("given twice"), "{e}");
        assert!(Variant::parse("k.json@vyre")
            .unwrap_err()
            .to_string()
            .contains("--compare-vyre"));
    }
}
