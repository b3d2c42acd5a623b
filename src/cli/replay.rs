//! `vyrescope replay CAPTURE_DIR [--only N] [--backend reference|cuda|vyre-reference] [--json]
//! [--export DIR]` (feature `vyre`): replays a capture recorded by `vyrescope-capture`
//! (`docs/capture.md`) and compares every output with the captured bytes
//! ([`crate::harness::replay`]); with `--only N --export DIR`, writes dispatch `N` as a
//! standalone Program folder instead ([`crate::vyre::replay::export`]).
//!
//! Exit status: 0 when nothing diverged or failed, 1 on a divergence or a bad capture, 2 on a
//! usage error.

use std::path::PathBuf;

use crate::util::Problem;

/// Replay a capture of a vyre application's dispatches and compare every output.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope replay capture/\n  vyrescope replay capture/ --only 3 --json\n  vyrescope replay capture/ --only 3 --export bug-3/\n\nNeeds a build with `--features vyre`. See docs/capture.md."
)]
pub struct Args {
    /// The capture folder (it holds `manifest.json`).
    pub capture: PathBuf,
    /// Replay only record N.
    #[arg(long, value_name = "N")]
    pub only: Option<u64>,
    /// `reference` (`vyrescope-reference` from vyre's registry; a Program our import refuses
    /// runs on vyre's reference interpreter), `cuda` (`vyrescope-cuda`, same fallback) or
    /// `vyre-reference` (vyre's reference interpreter alone).
    #[arg(long, default_value = "reference")]
    pub backend: String,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// With --only N: write that dispatch as a standalone Program folder (Program JSON,
    /// captured inputs, expected outputs) instead of replaying.
    #[arg(long, value_name = "DIR", requires = "only")]
    pub export: Option<PathBuf>,
}

/// Runs `replay`.
#[cfg(not(feature = "vyre"))]
pub fn run(_a: &Args) -> super::Outcome {
    Err(Problem::usage(
        "replay needs vyre support, and this vyrescope was built without it",
        "build with `cargo build --features vyre`",
    ))
}

/// Runs `replay`.
#[cfg(feature = "vyre")]
pub fn run(a: &Args) -> super::Outcome {
    use super::run::Backend;
    use crate::harness::replay::{replay, replay_table, Replayer};
    use crate::vyre::replay::VyreReference;

    if let Some(out) = &a.export {
        // `requires = "only"` makes clap refuse --export without --only.
        return export(a, a.only.unwrap_or(0), out);
    }
    let theirs = VyreReference;
    // Our two backends are acquired from vyre's registry by id, as a vyre application would.
    let acquire = super::selftest::acquire_vyrescope;
    let ours = match a.backend.as_str() {
        "reference" => Some(acquire(Backend::Reference)?),
        "cuda" => Some(acquire(Backend::Cuda)?),
        "vyre-reference" => None,
        other => {
            return Err(Problem::usage(
                format!("unknown replay backend `{other}`"),
                "use --backend reference, cuda or vyre-reference",
            ))
        }
    };
    // A Program our import refuses replays on vyre's own reference interpreter instead.
    let replayer = match &ours {
        Some(b) => Replayer {
            backend: b.as_ref(),
            fallback: Some(&theirs),
        },
        None => Replayer {
            backend: &theirs,
            fallback: None,
        },
    };
    let report = replay(&a.capture, &replayer, a.only)?;
    if a.json {
        outln!("{}", serde_json::to_string(&report).map_err(Problem::bug)?);
    } else {
        out!("{}", replay_table(&report));
    }
    Ok(if report.passed { 0 } else { 1 })
}

/// `--only N --export DIR`.
#[cfg(feature = "vyre")]
fn export(a: &Args, index: u64, out: &std::path::Path) -> super::Outcome {
    use crate::harness::replay::read_problem;
    use crate::vyre::replay::export::{export_dispatch, CapturedDispatch};
    use vyrescope_capture::format::Event;

    let cap = vyrescope_capture::Capture::open(&a.capture).map_err(|e| read_problem(&e))?;
    let loaded = cap.load(index).map_err(|e| read_problem(&e))?;
    let Event::Dispatch { config, .. } = &loaded.record.event else {
        return Err(Problem::usage(
            format!("record {index} is a resident dispatch; --export takes host-buffer dispatches"),
            "pick a record whose kind is `dispatch`",
        ));
    };
    let config = config.to_config().map_err(|e| {
        Problem::new(
            format!("{}: {e}", cap.record_path(index).display()),
            "record again",
        )
    })?;
    let vp = crate::vyre::replay::decode(&loaded.program_wire).map_err(|e| {
        Problem::new(
            format!("{}: {e}", cap.record_path(index).display()),
            "record again",
        )
    })?;
    let name = crate::vyre::replay::dispatches::name_of(vp.entry_op_id(), index);
    let d = CapturedDispatch {
        program: &vp,
        inputs: &loaded.inputs,
        outputs: &loaded.outputs,
        config: &config,
    };
    let written = export_dispatch(&d, &name, out)?;
    if a.json {
        outln!("{}", serde_json::to_string(&written).map_err(Problem::bug)?);
    } else {
        outln!(
            "wrote {} ({} input file(s), {} expected output(s))",
            written.program.display(),
            written.inputs.len(),
            written.expected.len()
        );
    }
    Ok(0)
}
