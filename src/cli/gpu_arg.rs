//! `--gpu N`, the GPU ordinal of every command that uses a live GPU. `--device` names a
//! device profile (occupancy, plan, the inspector); the GPU commands took `--device N` for
//! the ordinal before, which is still accepted for one release with a warning.

use crate::util::Problem;

/// The GPU ordinal option, flattened into each GPU command's arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct GpuArg {
    /// GPU ordinal (CUDA device index, as `nvidia-smi` lists them).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub gpu: u32,
    /// Deprecated spelling of `--gpu N`.
    #[arg(long, hide = true, value_name = "N")]
    pub device: Option<String>,
}

impl GpuArg {
    /// The ordinal to open: `--gpu N`, or a deprecated `--device N` (with a warning on
    /// stderr). `--device NAME` (a profile name) is refused: profiles are for offline
    /// estimates, not for choosing a GPU.
    pub fn ordinal(&self) -> Result<u32, Problem> {
        let Some(d) = &self.device else {
            return Ok(self.gpu);
        };
        match d.parse::<u32>() {
            Ok(n) => {
                errln!("warning: `--device {n}` is deprecated for choosing a GPU; use `--gpu {n}` (`--device` names a device profile)");
                Ok(n)
            }
            Err(_) => Err(Problem::new(
                format!("`--device {d}`: this command runs on a live GPU, chosen by its ordinal"),
                "use `--gpu N` (e.g. `--gpu 0`); device profiles (`--device NAME`) are for `occupancy`, `plan` and the inspector",
            )),
        }
    }

    /// Opens the live GPU this option names (the ordinal as [`GpuArg::ordinal`] reads it).
    pub fn open(&self) -> Result<crate::runtime::Runtime, Problem> {
        Ok(crate::runtime::Runtime::open(self.ordinal()?)?)
    }
}
