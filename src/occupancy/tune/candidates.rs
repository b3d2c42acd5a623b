//! `--candidates` parsing: `32..1024` (every multiple of 32 in the range, inclusive),
//! `64,128,256`, or a mix (`32..128,512`); `x` sizes, or `16x16` for 2-D workgroups. A size
//! above what a CUDA workgroup (block) may have, 1024 threads and 1024 x 1024 x 64, is refused
//! here, as `0` is: it could never launch, and a range like `32..100000` would otherwise sweep
//! thousands of sizes.

use crate::shape::{MAX_WORKGROUP_DIMS, MAX_WORKGROUP_THREADS};

/// A malformed candidate list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct CandidateError {
    /// The argument.
    pub text: String,
    /// What is wrong.
    pub reason: String,
}

/// Parses a candidate list into workgroup sizes (deduplicated, in first-seen order). Sizes
/// above the CUDA workgroup limits are refused; sizes within them that a device still cannot
/// launch (registers, shared memory) are kept, and the tuner says why.
pub fn parse_candidates(text: &str) -> Result<Vec<[u32; 3]>, CandidateError> {
    let err = |reason: String| CandidateError {
        text: text.to_string(),
        reason,
    };
    let num = |s: &str| -> Result<u32, CandidateError> {
        s.trim()
            .parse::<u32>()
            .map_err(|_| err(format!("`{}` is not a positive integer", s.trim())))
            .and_then(|v| {
                if v == 0 {
                    Err(err("a workgroup size of 0".into()))
                } else {
                    Ok(v)
                }
            })
    };
    let too_big = |w: [u32; 3], part: &str| -> Result<(), CandidateError> {
        let threads = w.iter().map(|&d| u64::from(d)).product::<u64>();
        let axis = (0..3).find(|&a| w[a] > MAX_WORKGROUP_DIMS[a]);
        if threads > MAX_WORKGROUP_THREADS {
            return Err(err(format!(
                "`{part}` reaches {threads} threads per workgroup, above the {MAX_WORKGROUP_THREADS} a CUDA workgroup (block) may have"
            )));
        }
        if let Some(a) = axis {
            return Err(err(format!(
                "`{part}` has {} threads along {}, above the {} a CUDA workgroup may have there",
                w[a],
                ["x", "y", "z"][a],
                MAX_WORKGROUP_DIMS[a]
            )));
        }
        Ok(())
    };
    let mut out: Vec<[u32; 3]> = Vec::new();
    let mut push = |w: [u32; 3]| {
        if !out.contains(&w) {
            out.push(w);
        }
    };
    if text.trim().is_empty() {
        return Err(err("empty list".into()));
    }
    for part in text.split(',') {
        let part = part.trim();
        if let Some((a, b)) = part.split_once("..") {
            let (lo, hi) = (num(a)?, num(b.trim_start_matches('='))?);
            if lo > hi {
                return Err(err(format!("range `{part}` is empty")));
            }
            let first = lo.div_ceil(32) * 32;
            if first > hi {
                return Err(err(format!("range `{part}` holds no multiple of 32")));
            }
            too_big([hi, 1, 1], part)?;
            let mut x = first;
            while x <= hi {
                push([x, 1, 1]);
                x += 32;
            }
        } else if part.contains('x') {
            let dims: Vec<&str> = part.split('x').collect();
            if dims.len() > 3 {
                return Err(err(format!("`{part}` has more than 3 dimensions")));
            }
            let mut w = [1u32; 3];
            for (slot, d) in w.iter_mut().zip(&dims) {
                *slot = num(d)?;
            }
            too_big(w, part)?;
            push(w);
        } else {
            let w = [num(part)?, 1, 1];
            too_big(w, part)?;
            push(w);
        }
    }
    Ok(out)
}

impl crate::util::HasFix for CandidateError {
    fn message(&self) -> String {
        format!("bad --candidates `{}`: {}", self.text, self.reason)
    }

    fn fix(&self) -> String {
        format!(
            "write sizes of 1 to {MAX_WORKGROUP_THREADS} threads: a range of multiples of 32 like `32..1024`, a list like `64,128,256`, or 2-D sizes like `16x16`"
        )
    }
}

crate::util::problem::into_problem!(CandidateError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_lists_and_2d() {
        let r = parse_candidates("32..1024").unwrap();
        assert_eq!(r.len(), 32);
        assert_eq!((r[0][0], r[31][0]), (32, 1024));
        assert_eq!(
            parse_candidates("64, 128,256,128").unwrap(),
            vec![[64, 1, 1], [128, 1, 1], [256, 1, 1]]
        );
        assert_eq!(parse_candidates("16x16").unwrap(), vec![[16, 16, 1]]);
        assert_eq!(
            parse_candidates("40..100,7").unwrap(),
            vec![[64, 1, 1], [96, 1, 1], [7, 1, 1]]
        );
        for bad in ["", "0", "a", "100..50", "33..63", "1x2x3x4"] {
            let e = parse_candidates(bad).unwrap_err().to_string();
            assert!(e.contains("Fix:"), "{bad}: {e}");
        }
    }

    #[test]
    fn sizes_above_the_workgroup_limit_are_refused_when_parsed() {
        let start = std::time::Instant::now();
        for (bad, says) in [
            ("32..100000", "100000 threads"),
            ("1..4294967295", "4294967295 threads"),
            ("64,1056", "1056 threads"),
            ("64x32", "2048 threads"),
            ("1x1x128", "128 threads along z"),
            ("1x2048", "2048 threads"),
        ] {
            let e = parse_candidates(bad).expect_err(bad).to_string();
            assert!(e.contains(says) && e.contains("1024"), "{bad}: {e}");
            assert!(e.contains("Fix:") && e.contains("32..1024"), "{bad}: {e}");
        }
        // Refused at once, not after expanding a range of 134 million sizes.
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(parse_candidates("1000..1024").unwrap(), vec![[1024, 1, 1]]);
        assert_eq!(parse_candidates("32x32,1x1x64").unwrap().len(), 2);
    }
}
