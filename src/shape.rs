//! Launch shapes: the workgroup size and grid of a dispatch, and the one parser of the
//! `X,Y,Z` / `16x16` workgroup and grid syntax that the CLI and the inspector share, with the
//! same limits everywhere.

use std::fmt;
use std::str::FromStr;

/// Most threads in one workgroup (CUDA's block limit on every supported GPU).
pub const MAX_WORKGROUP_THREADS: u64 = 1024;
/// Most threads along each workgroup axis (CUDA: 1024, 1024, 64).
pub const MAX_WORKGROUP_DIMS: [u32; 3] = [1024, 1024, 64];
/// Most workgroups along each grid axis (CUDA: 2^31 - 1, 65535, 65535).
pub const MAX_GRID_DIMS: [u32; 3] = [i32::MAX as u32, 65535, 65535];

/// Most invocations of one dispatch: what the reference interpreter (and a verifying run)
/// can get through; more is refused before anything is allocated.
pub const MAX_INVOCATIONS: u128 = 1 << 40;

/// Workgroup size and grid of one dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LaunchShape {
    /// Threads per workgroup, x/y/z.
    pub workgroup_size: [u32; 3],
    /// Workgroups, x/y/z.
    pub grid: [u32; 3],
}

/// `grid.x = ceil(elements / workgroup_x)`, y = z = 1, refusing a count beyond `u32`; the
/// error is `(message, fix)`. The one rule turning `elements` into a grid: `run`, `plan` and
/// pipeline `check` all ask this.
pub fn grid_for_elements(elements: u64, workgroup_x: u32) -> Result<[u32; 3], (String, String)> {
    let wx = u64::from(workgroup_x.max(1));
    let gx = elements.div_ceil(wx);
    match u32::try_from(gx) {
        Ok(g) => Ok([g, 1, 1]),
        Err(_) => Err((
            format!(
                "{elements} elements need {gx} workgroups of {wx} along x, more than u32 holds"
            ),
            "use fewer elements or a larger workgroup_size.x".into(),
        )),
    }
}

impl LaunchShape {
    /// Threads per workgroup.
    pub fn threads_per_workgroup(&self) -> u64 {
        self.workgroup_size.iter().map(|&x| x as u64).product()
    }

    /// Workgroups in the grid.
    pub fn workgroups(&self) -> u64 {
        self.grid.iter().map(|&x| x as u64).product()
    }

    /// Total invocations (saturating at `u64::MAX`).
    pub fn invocations(&self) -> u64 {
        self.threads_per_workgroup()
            .saturating_mul(self.workgroups())
    }

    /// Checks what a run needs of the shape: every dimension positive, `gid` fits `u32` on
    /// every axis and the invocation count stays within [`MAX_INVOCATIONS`]; the error is
    /// `(message, fix)`. `run`, `plan` and pipeline `check` all ask this.
    pub fn check_dispatch(&self) -> Result<(), (String, String)> {
        for (a, axis) in ["x", "y", "z"].into_iter().enumerate() {
            if self.workgroup_size[a] == 0 || self.grid[a] == 0 {
                return Err((
                    format!(
                        "launch shape has a zero dimension: workgroup_size {:?}, grid {:?}",
                        self.workgroup_size, self.grid
                    ),
                    "every workgroup and grid dimension must be at least 1 (set `run.elements` > 0 or pass --grid X,Y,Z)".into(),
                ));
            }
            let along = u64::from(self.workgroup_size[a]) * u64::from(self.grid[a]);
            if along > 1 << 32 {
                return Err((
                    format!(
                        "grid.{axis} * workgroup_size.{axis} = {along} invocations along {axis}; global ids are u32"
                    ),
                    "use at most 2^32 invocations per axis (spread the work over y and z)".into(),
                ));
            }
        }
        let total: u128 = self
            .workgroup_size
            .iter()
            .chain(&self.grid)
            .map(|&x| u128::from(x))
            .product();
        if total > MAX_INVOCATIONS {
            return Err((
                format!(
                    "the dispatch has {total} invocations (workgroup_size {:?} x grid {:?}), more than the limit 2^40",
                    self.workgroup_size, self.grid
                ),
                "use a smaller grid or fewer elements".into(),
            ));
        }
        Ok(())
    }

    /// Checks the shape against CUDA's limits ([`MAX_WORKGROUP_DIMS`],
    /// [`MAX_WORKGROUP_THREADS`], [`MAX_GRID_DIMS`]); the error is `(message, fix)`. Analyses
    /// call this first, so their cost is bounded by the largest valid workgroup.
    pub fn check_limits(&self) -> Result<(), (String, String)> {
        let axes = ["x", "y", "z"];
        for a in 0..3 {
            let (w, g) = (self.workgroup_size[a], self.grid[a]);
            if w == 0 || w > MAX_WORKGROUP_DIMS[a] {
                return Err((
                    format!(
                        "workgroup size {} = {w} is outside CUDA's range 1..={}",
                        axes[a], MAX_WORKGROUP_DIMS[a]
                    ),
                    format!(
                        "use 1 to {} threads along {}",
                        MAX_WORKGROUP_DIMS[a], axes[a]
                    ),
                ));
            }
            if g == 0 || g > MAX_GRID_DIMS[a] {
                return Err((
                    format!(
                        "grid {} = {g} is outside CUDA's range 1..={}",
                        axes[a], MAX_GRID_DIMS[a]
                    ),
                    format!(
                        "use 1 to {} workgroups along {} (spread the work over other axes)",
                        MAX_GRID_DIMS[a], axes[a]
                    ),
                ));
            }
        }
        let t = self.threads_per_workgroup();
        if t > MAX_WORKGROUP_THREADS {
            return Err((
                format!("{t} threads per workgroup, above CUDA's limit of {MAX_WORKGROUP_THREADS}"),
                format!("use at most {MAX_WORKGROUP_THREADS} threads, e.g. 256,1,1 or 32x32"),
            ));
        }
        Ok(())
    }
}

/// A workgroup size parsed from `X`, `X,Y`, `X,Y,Z` or `16x16` (commas, `x` or spaces between),
/// every axis positive and within CUDA's block limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Workgroup(pub [u32; 3]);

/// A grid (workgroup counts) parsed like [`Workgroup`], within CUDA's grid limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grid(pub [u32; 3]);

/// A size (workgroup, grid, screen) that cannot be parsed or used: the message names the
/// text given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ShapeError {
    /// What is wrong.
    pub message: String,
    /// How to write it.
    pub fix: String,
}

impl ShapeError {
    /// What is wrong and how to write it.
    pub fn new(message: impl Into<String>, fix: impl Into<String>) -> Self {
        ShapeError {
            message: message.into(),
            fix: fix.into(),
        }
    }
}

impl crate::util::HasFix for ShapeError {
    fn message(&self) -> String {
        self.message.clone()
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

crate::util::problem::into_problem!(ShapeError);

/// Splits `s` into one to three positive integers, each at most `max[axis]`.
fn parse_dims(s: &str, what: &str, max: [u32; 3]) -> Result<[u32; 3], ShapeError> {
    let parts: Vec<&str> = s
        .split(|c: char| c == ',' || c == 'x' || c == 'X' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(ShapeError::new(
            format!("{what} `{s}`: expected X, X,Y or X,Y,Z"),
            "write one to three positive integers, e.g. 256,1,1 or 16x16",
        ));
    }
    let mut dims = [1u32; 3];
    for (axis, p) in parts.iter().enumerate() {
        let v = match p.parse::<u64>() {
            Ok(v) if v > 0 => v,
            // Digits that do not fit: say it is too large, not that it is not a number.
            Err(_)
                if p.chars().all(|c| c.is_ascii_digit())
                    && !p.trim_start_matches('0').is_empty() =>
            {
                u64::MAX
            }
            _ => {
                return Err(ShapeError::new(
                    format!("{what} `{s}`: `{p}` is not a positive integer"),
                    "every axis is at least 1, e.g. 256,1,1",
                ))
            }
        };
        if v > u64::from(max[axis]) {
            let name = ["x", "y", "z"][axis];
            return Err(ShapeError::new(
                format!(
                    "{what} `{s}`: {name} = {p} is above CUDA's limit of {} along {name}",
                    max[axis]
                ),
                format!(
                    "use at most {} along {name} (spread the work over other axes)",
                    max[axis]
                ),
            ));
        }
        dims[axis] = v as u32;
    }
    Ok(dims)
}

impl FromStr for Workgroup {
    type Err = ShapeError;

    fn from_str(s: &str) -> Result<Self, ShapeError> {
        let d = parse_dims(s, "workgroup", MAX_WORKGROUP_DIMS)?;
        let threads: u64 = d.iter().map(|&v| v as u64).product();
        if threads > MAX_WORKGROUP_THREADS {
            return Err(ShapeError::new(format!("workgroup `{s}`: {threads} threads, above CUDA's limit of {MAX_WORKGROUP_THREADS} per workgroup"), format!("use at most {MAX_WORKGROUP_THREADS} threads, e.g. 256,1,1 or 32x32")));
        }
        Ok(Workgroup(d))
    }
}

impl FromStr for Grid {
    type Err = ShapeError;

    fn from_str(s: &str) -> Result<Self, ShapeError> {
        parse_dims(s, "grid", MAX_GRID_DIMS).map(Grid)
    }
}

impl fmt::Display for Workgroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{},{}", self.0[0], self.0[1], self.0[2])
    }
}

/// [`Workgroup`]'s parser as a plain function (for clap's `value_parser` and the inspector's
/// prompt).
pub fn parse_workgroup(s: &str) -> Result<[u32; 3], ShapeError> {
    s.parse::<Workgroup>().map(|w| w.0)
}

/// [`Grid`]'s parser as a plain function.
pub fn parse_grid(s: &str) -> Result<[u32; 3], ShapeError> {
    s.parse::<Grid>().map(|g| g.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses_to_the_same_shape() {
        for s in ["16x16", "16,16", "16,16,1", "16 16 1", " 16, 16 "] {
            assert_eq!(parse_workgroup(s), Ok([16, 16, 1]), "{s}");
        }
        assert_eq!(parse_workgroup("256"), Ok([256, 1, 1]));
        assert_eq!(parse_grid("8, 2"), Ok([8, 2, 1]));
    }

    #[test]
    fn limits_are_the_same_for_every_caller() {
        for bad in [
            "0,1,1", "2048,1,1", "1,1,65", "64x32", "1,2,3,4", "a", "", "-1",
        ] {
            assert!(parse_workgroup(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_workgroup("1024"), Ok([1024, 1, 1]));
        assert_eq!(parse_workgroup("1,1,64"), Ok([1, 1, 64]));
        assert!(parse_grid("0").is_err());
        assert!(parse_grid("1,65536").is_err());
        assert_eq!(parse_grid("2147483647"), Ok([i32::MAX as u32, 1, 1]));
    }
}
