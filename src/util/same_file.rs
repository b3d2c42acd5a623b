//! The one check that an output path is not an input: writing a command's result over the
//! file it read (`emit x.json -o x.json`) would silently destroy the input.

use std::path::Path;

use super::Problem;

/// True when `a` and `b` name one existing file (the same device and inode on Unix, else the
/// same canonical path), whatever the spelling (`./x`, a link, `../dir/x`).
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// A [`Problem`] when `output` is one of `inputs`; `flag` names the option that gave the
/// output (`-o`, `--snapshot`).
pub fn refuse_overwrite<'a>(
    output: &Path,
    inputs: impl IntoIterator<Item = &'a Path>,
    flag: &str,
) -> Result<(), Problem> {
    match inputs.into_iter().find(|i| same_file(output, i)) {
        Some(input) => Err(Problem::new(
            format!(
                "{flag} {} is the input file {}: writing the result would replace what it was made from",
                output.display(),
                input.display()
            ),
            "write to another path",
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_file_sees_through_spellings_and_links() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a.json");
        let b = t.path().join("b.json");
        std::fs::write(&a, "1").unwrap();
        std::fs::write(&b, "1").unwrap();
        assert!(same_file(&a, &t.path().join(".").join("a.json")));
        assert!(!same_file(&a, &b));
        assert!(!same_file(&a, &t.path().join("missing")));
        #[cfg(unix)]
        {
            let l = t.path().join("link.json");
            std::os::unix::fs::symlink(&a, &l).unwrap();
            assert!(same_file(&a, &l));
        }
        let e = refuse_overwrite(&a, [b.as_path(), a.as_path()], "-o")
            .unwrap_err()
            .to_string();
        assert!(e.contains("Fix: ") && e.contains("a.json"), "{e}");
        assert!(refuse_overwrite(&b, [a.as_path()], "-o").is_ok());
    }
}
