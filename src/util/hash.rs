//! FNV-1a (64-bit): the stable hash behind cache keys and output checksums. `std`'s hasher is
//! randomly seeded per process, and keys on disk must survive the process and Rust versions.

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// The identity of this build: the version and a hash of its sources (computed by
/// `build.rs`). Cache keys hold it, so that no build ever reads an entry another wrote.
pub fn build_id() -> &'static str {
    concat!(env!("CARGO_PKG_VERSION"), "+", env!("VYRESCOPE_BUILD_HASH"))
}

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// Hash of several parts, each length-prefixed so that ("ab", "c") and ("a", "bc") differ.
pub fn hash_parts(parts: &[&[u8]]) -> u64 {
    let mut buf = Vec::new();
    for p in parts {
        buf.extend_from_slice(&(p.len() as u64).to_le_bytes());
        buf.extend_from_slice(p);
    }
    fnv1a(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn parts_are_length_prefixed() {
        assert_ne!(hash_parts(&[b"ab", b"c"]), hash_parts(&[b"a", b"bc"]));
    }
}
