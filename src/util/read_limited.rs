//! The one way vyrescope reads a file named by its user: only a regular file, and never more
//! than a stated limit. The file is opened without blocking (a FIFO whose writer never comes
//! must not hang the reader), its type is checked on the open handle (so a path swapped for a
//! FIFO or device between a check and the open is still caught), and the bytes are read
//! through `take(limit + 1)`, so a file that grows while it is read, or a lying size, can never
//! make the reader allocate more than the limit.

use std::io::Read;
use std::path::Path;

/// What went wrong reading a file; the message names the file and `what` it was meant to be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ReadError {
    /// Why the read failed, in one category callers may branch on.
    pub kind: ReadErrorKind,
    /// What is wrong (names the file).
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

/// The category of a [`ReadError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadErrorKind {
    /// Nothing exists at the path.
    NotFound,
    /// The path names a folder, FIFO, device or socket rather than a regular file.
    NotRegular,
    /// The file holds more bytes than the limit.
    TooLarge,
    /// Any other I/O error (permissions, a read failing half-way).
    Io,
}

/// Describes what kind of non-regular file `ft` is, for messages.
pub fn file_kind(ft: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_char_device() || ft.is_block_device() {
            return "a device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    if ft.is_dir() {
        "a folder"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Reads all of `path` if it is a regular file of at most `limit` bytes; `what` says what the
/// file is for ("Program file", "device profile", ...) in messages.
pub fn read_limited(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, ReadError> {
    let err = |kind, message: String, fix: &str| ReadError {
        kind,
        message,
        fix: fix.to_string(),
    };
    let shown = path.display();
    // A cheap check first, so a FIFO is not even opened on the common path.
    let meta = std::fs::metadata(path).map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ReadErrorKind::NotFound
        } else {
            ReadErrorKind::Io
        };
        err(
            kind,
            format!("cannot read {what} {shown}: {e}"),
            "check the path and that the file is readable",
        )
    })?;
    let not_regular = |ft: std::fs::FileType| {
        err(
            ReadErrorKind::NotRegular,
            format!(
                "{what} {shown} is {}, not a regular file; refusing to read it",
                file_kind(ft)
            ),
            "name a regular file",
        )
    };
    if !meta.file_type().is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO for reading blocks until a writer arrives; O_NONBLOCK makes the open
        // return at once (regular files ignore the flag), and the type check below refuses it.
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = opts.open(path).map_err(|e| {
        err(
            ReadErrorKind::Io,
            format!("cannot open {what} {shown}: {e}"),
            "check the path and that the file is readable",
        )
    })?;
    let meta = file.metadata().map_err(|e| {
        err(
            ReadErrorKind::Io,
            format!("cannot inspect {what} {shown}: {e}"),
            "check the path and that the file is readable",
        )
    })?;
    if !meta.file_type().is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let too_large = |n: String| {
        err(
            ReadErrorKind::TooLarge,
            format!("{what} {shown} has {n} bytes; the limit is {limit}"),
            "use a smaller file",
        )
    };
    if meta.len() > limit {
        return Err(too_large(meta.len().to_string()));
    }
    let mut bytes = Vec::new();
    // The size is known and within the limit; reserve it fallibly (the limit may still be
    // larger than the memory there is).
    let want = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    bytes.try_reserve_exact(want).map_err(|e| {
        err(
            ReadErrorKind::TooLarge,
            format!(
                "cannot allocate {} bytes for {what} {shown}: {e}",
                meta.len()
            ),
            "use a smaller file or free memory",
        )
    })?;
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| {
            err(
                ReadErrorKind::Io,
                format!("cannot read {what} {shown}: {e}"),
                "check that the file is readable",
            )
        })?;
    if bytes.len() as u64 > limit {
        return Err(too_large(format!("more than {limit}")));
    }
    Ok(bytes)
}

impl crate::util::HasFix for ReadError {
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

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("vyrescope-rl-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn reads_within_the_limit_and_refuses_above() {
        let d = scratch("limit");
        let p = d.join("f.bin");
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7919 % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        assert_eq!(read_limited(&p, 1000, "test file").unwrap(), data);
        let e = read_limited(&p, 999, "test file").unwrap_err();
        assert_eq!(e.kind, ReadErrorKind::TooLarge);
        assert!(e.to_string().contains("Fix:"), "{e}");
        let e = read_limited(&d.join("missing"), 10, "test file").unwrap_err();
        assert_eq!(e.kind, ReadErrorKind::NotFound);
        let e = read_limited(&d, 10, "test file").unwrap_err();
        assert_eq!(e.kind, ReadErrorKind::NotRegular);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[cfg(unix)]
    #[test]
    fn refuses_devices() {
        let e = read_limited(Path::new("/dev/zero"), 1 << 20, "test file").unwrap_err();
        assert_eq!(e.kind, ReadErrorKind::NotRegular);
        assert!(e.message.contains("a device"), "{e}");
    }
}
