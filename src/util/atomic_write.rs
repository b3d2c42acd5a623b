//! The one way vyrescope writes a file: atomically. The bytes go to a new sibling temp file
//! (an unpredictable name created exclusively by `tempfile`, so an existing file or link of
//! that name is never followed), which is flushed and synced and then renamed over the
//! target, so a reader never sees half a file and a crash never leaves a good file truncated. A target that exists but is not a regular
//! file (a symbolic link, a device, a FIFO, a folder) is refused, never replaced.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically (see the module docs). On error the target is
/// untouched and no temp file is left behind.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_file() {
            let kind = if meta.file_type().is_symlink() {
                "a symbolic link"
            } else if meta.is_dir() {
                "a folder"
            } else {
                "not a regular file"
            };
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!(
                    "{} is {kind}; refusing to replace it (write to a regular file path instead)",
                    path.display()
                ),
            ));
        }
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // `tempfile` picks an unpredictable name and creates it with O_EXCL (mode 0600), so a
    // planted file or link of that name is never followed; dropping it on an error removes it.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // A replaced file keeps its mode; a new one gets 0644 (data the user made), never the
        // 0600 of the temp file nor the mode of some input it was derived from.
        let mode = std::fs::metadata(path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644);
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // Make the rename itself durable where the platform allows syncing a folder.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("vyrescope-aw-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn replaces_a_file_and_leaves_no_temp() {
        let d = scratch("replace");
        let p = d.join("out.json");
        std::fs::write(&p, "old").unwrap();
        write_atomic(&p, b"new contents").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new contents");
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[cfg(unix)]
    #[test]
    fn refuses_links_and_folders() {
        let d = scratch("refuse");
        let target = d.join("target.txt");
        std::fs::write(&target, "keep").unwrap();
        let link = d.join("link.txt");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(write_atomic(&link, b"x").is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(write_atomic(&d, b"x").is_err());
        let _ = std::fs::remove_dir_all(&d);
    }
}
