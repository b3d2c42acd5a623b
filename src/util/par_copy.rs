//! The one large-buffer copy: split over all cores when the buffer is big enough to pay
//! for it (host staging of dispatch buffers, vyre inputs bound to host buffers).

use rayon::prelude::*;

/// Pieces of this many bytes go to the thread pool; anything smaller is copied in place.
const PIECE: usize = 1 << 20;

/// Copies `src` into `dst` (same length) on all cores when it is large enough to pay for
/// the split.
pub fn par_copy(dst: &mut [u8], src: &[u8]) {
    if src.len() <= PIECE {
        dst.copy_from_slice(src);
    } else {
        dst.par_chunks_mut(PIECE)
            .zip(src.par_chunks(PIECE))
            .for_each(|(d, s)| d.copy_from_slice(s));
    }
}

/// `src` as a new vector, copied by [`par_copy`].
pub fn par_to_vec(src: &[u8]) -> Vec<u8> {
    if src.len() <= PIECE {
        return src.to_vec();
    }
    let mut v = vec![0u8; src.len()];
    par_copy(&mut v, src);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_byte_small_and_large() {
        let src: Vec<u8> = (0..(3 << 20) + 17).map(|i| (i * 31 % 251) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        par_copy(&mut dst, &src);
        assert_eq!(dst, src);
        assert_eq!(par_to_vec(&src), src);
        assert_eq!(par_to_vec(&src[..100]), src[..100].to_vec());
    }
}
