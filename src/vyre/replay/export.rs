//! `vyrescope replay DIR --only N --export OUT`: one captured dispatch as a standalone
//! vyrescope Program folder that opens with nothing else (attach it to a bug report):
//!
//! ```text
//! OUT/<name>.json          the Program (format 1), converted by our import, with a `run`
//!                          section: the captured launch and every host buffer from a file
//! OUT/inputs/<buffer>.bin  the captured contents of each input (outputs start zeroed)
//! OUT/expected/<buffer>.bin the captured outputs, for comparison (`cmp`, a hex diff)
//! ```

use std::path::{Path, PathBuf};

use vyre_driver::backend::DispatchConfig;
use vyre_foundation::ir::Program as VyreProgram;

use crate::ir::{InputSource, InputSpec, Program, RunSpec};
use crate::util::Problem;
use crate::vyre::binding::{bind_borrowed, BindingError, Bound, LaunchChoice};
use crate::vyre::catalog::import_for_reference;

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Exported {
    /// The Program file.
    pub program: PathBuf,
    /// The input files.
    pub inputs: Vec<PathBuf>,
    /// The expected-output files.
    pub expected: Vec<PathBuf>,
}

/// One captured dispatch, as [`export_dispatch`] takes it.
pub struct CapturedDispatch<'a> {
    /// vyre's Program.
    pub program: &'a VyreProgram,
    /// Its inputs in vyre's order.
    pub inputs: &'a [Vec<u8>],
    /// The captured outputs in vyre's order.
    pub outputs: &'a [Vec<u8>],
    /// The captured configuration.
    pub config: &'a DispatchConfig,
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), Problem> {
    crate::util::write_atomic(path, bytes).map_err(|e| {
        Problem::new(
            format!("cannot write {}: {e}", path.display()),
            "choose a folder you can write to",
        )
    })
}

/// Why a captured dispatch does not become one of our Programs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DispatchRefusal {
    /// Our import refuses vyre's Program: its codes (`VY...`, `V...`) and first reason.
    Import {
        /// Stable codes.
        codes: Vec<String>,
        /// The first reason, in one line.
        message: String,
    },
    /// The captured inputs do not bind to the Program (a damaged capture).
    Inputs(BindingError),
}

impl crate::util::HasFix for DispatchRefusal {
    fn message(&self) -> String {
        match self {
            Self::Import { codes, message } => format!(
                "the dispatch's Program cannot become a vyrescope Program ({}): {message}",
                codes.join(",")
            ),
            Self::Inputs(m) => format!("the captured inputs do not fit the Program: {m}"),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::Import { .. } => "attach the capture's record with its programs/ and blobs/ files instead (vyre's wire format); `r` in the inspector and `vyrescope replay` run it on vyre's reference interpreter".into(),
            Self::Inputs(_) => "the capture is damaged; record again".into(),
        }
    }
}

crate::util::problem::into_problem!(DispatchRefusal);

/// `d` as our Program named `name` (the import, the captured workgroup override, and a
/// `run` section with the launch's grid and no inputs yet) and its inputs bound without a
/// copy ([`Bound::sources`] names the captured input behind each buffer; a buffer without
/// one holds its contents: zeros for an output, a padded copy of an input of a partial last
/// element).
pub fn dispatch_program(
    d: &CapturedDispatch<'_>,
    name: &str,
) -> Result<(Program, Bound), DispatchRefusal> {
    let name = crate::vyre::import::identifier(name);
    let (vp, mut ours) =
        import_for_reference(d.program, &name).map_err(|r| DispatchRefusal::Import {
            codes: r.codes,
            message: r.message,
        })?;
    let inputs: Vec<&[u8]> = d.inputs.iter().map(Vec::as_slice).collect();
    let bound = bind_borrowed(&vp, &ours, &inputs, LaunchChoice::default())
        .map_err(DispatchRefusal::Inputs)?;
    let grid = d
        .config
        .dispatch_grid
        .or(d.config.grid_override)
        .unwrap_or(bound.shape.grid);
    if let Some(wg) = d.config.workgroup_override {
        ours.workgroup_size = wg.map(|x| x.max(1));
    }
    ours.run = Some(RunSpec {
        grid: Some(grid),
        elements: None,
        inputs: Vec::new(),
    });
    Ok((ours, bound))
}

/// Writes `d` into `out` (created; it must not hold files yet) as a Program named `name`.
pub fn export_dispatch(
    d: &CapturedDispatch<'_>,
    name: &str,
    out: &Path,
) -> Result<Exported, Problem> {
    let (mut ours, bound) = dispatch_program(d, name)?;
    let name = crate::vyre::import::identifier(name);
    if out.exists()
        && std::fs::read_dir(out)
            .map(|mut r| r.next().is_some())
            .unwrap_or(true)
    {
        return Err(Problem::usage(
            format!("{} exists and is not empty", out.display()),
            "give --export a new or empty folder",
        ));
    }
    for sub in ["inputs", "expected"] {
        std::fs::create_dir_all(out.join(sub)).map_err(|e| {
            Problem::new(
                format!("cannot create {}: {e}", out.join(sub).display()),
                "choose a folder you can write to",
            )
        })?;
    }
    let mut written = Exported {
        program: out.join(format!("{name}.json")),
        inputs: Vec::new(),
        expected: Vec::new(),
    };
    let mut run = ours.run.take().unwrap_or_default();
    for (b, source) in bound.buffers.iter().zip(&bound.sources) {
        let file = format!("inputs/{}.bin", b.name);
        // A buffer bound to a captured input holds no copy: its bytes are that input's.
        let data = source.and_then(|k| d.inputs.get(k)).unwrap_or(&b.data);
        write(&out.join(&file), data)?;
        written.inputs.push(out.join(&file));
        run.inputs.push((
            b.name.clone(),
            InputSpec {
                len: None,
                source: InputSource::File(file),
            },
        ));
    }
    ours.run = Some(run);
    for (slot, bytes) in bound.outputs.iter().zip(d.outputs) {
        let path = out.join(format!("expected/{}.bin", bound.buffers[slot.buffer].name));
        write(&path, bytes)?;
        written.expected.push(path);
    }
    let json = crate::ir::program_to_json(&ours).map_err(Problem::bug)?;
    write(&written.program, format!("{json}\n").as_bytes())?;
    Ok(written)
}
