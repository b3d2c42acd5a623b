//! `--candidates` parsing: `32..1024` (every multiple of 32 in the range, inclusive),
//! `64,128,256`, or a mix (`32..128,512`); `x` sizes, or `16x16` for 2-D workgroups.

/// A malformed candidate list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct CandidateError {
    /// The argument.
    pub text: String,
    /// What is wrong.
    pub reason: String,
}

/// Parses a candidate list into workgroup sizes (deduplicated, in first-seen order); sizes
/// above `max_threads` threads are kept (the tuner reports why they cannot launch).
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
            push(w);
        } else {
            push([num(part)?, 1, 1]);
        }
    }
    Ok(out)
}

impl crate::util::HasFix for CandidateError {
    fn message(&self) -> String {
        format!("bad --candidates `{}`: {}", self.text, self.reason)
    }

    fn fix(&self) -> String {
        "write a range of multiples of 32 like `32..1024`, a list like `64,128,256`, or 2-D sizes like `16x16`".to_string()
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
}
