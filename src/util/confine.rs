//! The one rule for a file named inside an input file (a Program's `file` inputs, a
//! pipeline's step files): it resolves against the naming file's folder and may not leave the
//! allowed folder, whether by an absolute path, `..` or a symbolic link; kernel and device
//! views (`/proc`, `/sys`, `/dev`) and non-regular files are refused always.

use std::path::{Path, PathBuf};

/// Why a named file was refused; the message names it, the fix says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfineError {
    /// What is wrong (names the file).
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

/// Folders whose files are never input data, whatever the allowed folder: kernel and device
/// views that change under the reader or never end.
const SYSTEM_PREFIXES: [&str; 3] = ["/proc", "/sys", "/dev"];

/// The one check for a file named inside a Program or pipeline file: `rel` is resolved
/// against `base` (the Program's folder), every symbolic link is followed, and the result must
/// lie inside `root` (the Program's folder unless the user passed `--root DIR`), must not be
/// under `/proc`, `/sys` or `/dev`, and must be a regular file (no FIFO, device or folder).
/// Returns the canonical path to read; `what` names the input in messages.
pub fn confine(base: &Path, root: &Path, rel: &str, what: &str) -> Result<PathBuf, ConfineError> {
    let widen = "keep data files inside the Program's folder (a relative path without `..` out of it and without symbolic links out of it), or allow a wider folder with --root DIR";
    if rel.is_empty() {
        return Err(ConfineError {
            message: format!("{what}: the file path is empty"),
            fix: "name a raw little-endian file relative to the Program's folder".into(),
        });
    }
    // The parent of a bare file name (`prog.json`) is the empty path: the current folder.
    let here = |p: &Path| {
        if p.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            p.to_path_buf()
        }
    };
    let (base, root) = (here(base), here(root));
    let joined = base.join(rel);
    let canon_root = root.canonicalize().map_err(|e| ConfineError {
        message: format!("{what}: cannot resolve the folder {}: {e}", root.display()),
        fix: "check that the Program's folder (or --root DIR) exists".into(),
    })?;
    let canon = joined.canonicalize().map_err(|e| ConfineError {
        message: format!("{what}: cannot read {}: {e}", joined.display()),
        fix: "the path is relative to the Program file's folder; check that the file exists".into(),
    })?;
    if SYSTEM_PREFIXES.iter().any(|p| canon.starts_with(p)) {
        return Err(ConfineError {
            message: format!(
                "{what}: {rel} resolves to {}, a system file (under /proc, /sys or /dev); refusing to read it",
                canon.display()
            ),
            fix: "copy the data into a regular file inside the Program's folder".into(),
        });
    }
    if !canon.starts_with(&canon_root) {
        return Err(ConfineError {
            message: format!(
                "{what}: {rel} resolves to {}, outside the allowed folder {}",
                canon.display(),
                canon_root.display()
            ),
            fix: widen.into(),
        });
    }
    let meta = std::fs::metadata(&canon).map_err(|e| ConfineError {
        message: format!("{what}: cannot read {}: {e}", canon.display()),
        fix: "check that the file exists and is readable".into(),
    })?;
    if !meta.is_file() {
        return Err(ConfineError {
            message: format!(
                "{what}: {} is {}, not a regular file; refusing to read it",
                canon.display(),
                super::read_limited::file_kind(meta.file_type())
            ),
            fix: "name a regular file of raw little-endian elements".into(),
        });
    }
    Ok(canon)
}

impl crate::util::HasFix for ConfineError {
    fn message(&self) -> String {
        self.message.clone()
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn stays_inside_the_root() {
        let d = std::env::temp_dir().join(format!("vyrescope-confine-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let inner = d.join("in");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(inner.join("a.bin"), [7u8; 12]).unwrap();
        std::fs::write(d.join("out.bin"), [9u8; 4]).unwrap();
        std::os::unix::fs::symlink(d.join("out.bin"), inner.join("l.bin")).unwrap();
        let ok = confine(&inner, &inner, "a.bin", "t").unwrap();
        assert_eq!(std::fs::read(ok).unwrap(), [7u8; 12]);
        for bad in ["../out.bin", "l.bin", "/etc/hostname", "", "/dev/null", "."] {
            let e = confine(&inner, &inner, bad, "t").unwrap_err();
            assert!(e.to_string().contains("Fix:"), "{bad}: {e}");
        }
        assert!(confine(&inner, &d, "../out.bin", "t").is_ok());
        assert!(confine(&inner, Path::new("/"), "/dev/null", "t").is_err());
        let _ = std::fs::remove_dir_all(&d);
    }
}
