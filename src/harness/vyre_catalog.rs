//! `vyrescope selftest --vyre-catalog`: vyre's op catalogue (every fixture entry of vyre-libs
//! and vyre-primitives, prepared by [`crate::vyre::catalog`]) run on the reference
//! interpreter or the GPU, each output compared with vyre's `expected_output` by vyre's rule:
//! an f32 operation with a ULP tolerance accepts float elements within it, everything else
//! must match bit for bit (the runtime's parity rules, [`crate::runtime::parity`]; NaNs
//! compare equal whatever their payload, as everywhere in vyrescope).
//!
//! The same catalogue also runs through vyre's backend contract ([`CatalogBackend::Vyre`],
//! `selftest --vyre-backend`): each entry's own vyre Program and fixture inputs go to a
//! `&dyn VyreBackend` acquired from vyre's registry by id, exactly as a vyre application
//! would dispatch them, and the returned outputs are compared by the same rule.

use serde::Serialize;

use crate::inputs::HostBuffer;
use crate::runtime::parity::{self, ParityReport, Tolerance};
use crate::runtime::{DispatchOptions, JitOptions, Runtime};
use crate::util::Problem;
use crate::vyre::catalog::{self, CatalogCase, CatalogOp, Refusal, RegistryPanic, Source};
use vyre_driver::backend::{BackendError, DispatchConfig, VyreBackend};

/// Where the catalogue runs.
pub enum CatalogBackend<'a> {
    /// The reference interpreter.
    Reference,
    /// The live GPU.
    Cuda(&'a mut Runtime),
    /// A vyre backend (acquired from vyre's registry), given vyre's own Programs and
    /// fixture inputs.
    Vyre(&'a dyn VyreBackend),
}

impl CatalogBackend<'_> {
    /// `reference` or `cuda`.
    pub fn name(&self) -> &'static str {
        match self {
            CatalogBackend::Reference => "reference",
            CatalogBackend::Cuda(_) => "cuda",
            CatalogBackend::Vyre(b) => b.id(),
        }
    }
}

/// What happened to one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Imported, and every case gave vyre's expected output.
    Matched,
    /// Imported, and some case gave another output.
    Mismatched,
    /// Imported, and some case failed to run (or to bind).
    Failed,
    /// Not imported (see `codes`).
    Refused,
}

/// One entry's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogRow {
    /// vyre's operation id.
    pub id: String,
    /// `vyre-libs` or `vyre-primitives`.
    pub source: Source,
    /// Imported into a valid Program.
    pub imported: bool,
    /// The outcome.
    pub status: Status,
    /// Refusal codes (import `VY...`, validator `V...`, `VYC..`), empty otherwise.
    pub codes: Vec<String>,
    /// Fixture cases, and how many matched.
    pub cases: usize,
    /// Cases whose outputs all matched.
    pub matched_cases: usize,
    /// vyre's f32 tolerance (ULPs; 0 = bit identity).
    pub f32_ulp: u32,
    /// Largest float distance seen over the cases (ULPs).
    pub max_ulps_seen: u64,
    /// The refusal, failure or first mismatch, in one line (empty when matched).
    pub detail: String,
}

/// Totals over the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Totals {
    /// Entries.
    pub entries: usize,
    /// Imported into valid Programs.
    pub imported: usize,
    /// Refused by the import or the validator.
    pub refused: usize,
    /// Imported and matched in every case.
    pub matched: usize,
    /// Imported and differing in some case.
    pub mismatched: usize,
    /// Imported and failing to run in some case.
    pub failed: usize,
}

/// The whole catalogue run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogReport {
    /// `reference` or `cuda`.
    pub backend: &'static str,
    /// One row per entry, vyre-libs first, each crate by id.
    pub entries: Vec<CatalogRow>,
    /// Totals.
    pub totals: Totals,
    /// True when there were entries and every imported one matched (refusals are listed, not
    /// failures).
    pub passed: bool,
}

/// Runs every catalogue entry whose id contains `filter` (all when `None`) on `backend`.
pub fn run_catalog(
    backend: &mut CatalogBackend<'_>,
    filter: Option<&str>,
) -> Result<CatalogReport, RegistryPanic> {
    let ops = catalog::operations()?;
    let mut entries = Vec::new();
    for (source, op) in &ops {
        if filter.is_some_and(|f| !op.id.contains(f)) {
            continue;
        }
        let prepared = catalog::prepare(*source, op);
        entries.push(run_entry(backend, &prepared));
    }
    let mut t = Totals {
        entries: entries.len(),
        ..Totals::default()
    };
    for r in &entries {
        t.imported += usize::from(r.imported);
        match r.status {
            Status::Matched => t.matched += 1,
            Status::Mismatched => t.mismatched += 1,
            Status::Failed => t.failed += 1,
            Status::Refused => t.refused += 1,
        }
    }
    Ok(CatalogReport {
        backend: backend.name(),
        passed: t.entries > 0 && t.mismatched == 0 && t.failed == 0,
        entries,
        totals: t,
    })
}

fn run_entry(backend: &mut CatalogBackend<'_>, op: &CatalogOp) -> CatalogRow {
    let mut row = CatalogRow {
        id: op.id.clone(),
        source: op.source,
        imported: false,
        status: Status::Refused,
        codes: Vec::new(),
        cases: 0,
        matched_cases: 0,
        f32_ulp: op.f32_ulp,
        max_ulps_seen: 0,
        detail: String::new(),
    };
    let prepared = match &op.outcome {
        Ok(p) => p,
        Err(r) => {
            row.codes = r.codes.clone();
            row.detail = r.message.clone();
            if let (CatalogBackend::Vyre(be), Some(f)) = (&*backend, &op.fixture) {
                // The backend must refuse it too, with its own message.
                match f
                    .inputs
                    .first()
                    .map(|i| be.dispatch(&f.program, i, &DispatchConfig::default()))
                {
                    Some(Err(e)) => {
                        // The backend's own message names the same construct.
                        row.detail = format!(
                            "backend error {}: {}",
                            e.code().stable_id(),
                            first_line(&e.to_string())
                        );
                    }
                    Some(Ok(_)) => {
                        row.status = Status::Failed;
                        row.detail = format!(
                            "the import refuses it ({}) but the backend ran it",
                            r.codes.join(",")
                        );
                    }
                    None => {}
                }
            }
            return row;
        }
    };
    row.imported = true;
    row.cases = prepared.cases.len();
    let tol = (op.f32_ulp > 0).then_some(Tolerance {
        max_ulps: u64::from(op.f32_ulp),
        abs: 0.0,
    });
    let mut status = Status::Matched;
    for (k, case) in prepared.cases.iter().enumerate() {
        let result = case
            .as_ref()
            .map_err(|r| CaseError::Refused(r.clone()))
            .and_then(|c| run_case(backend, op, k, &prepared.program, c).map(|out| (c, out)));
        match result {
            Ok((c, out)) => {
                let rep = compare_outputs(c, &out, tol);
                row.max_ulps_seen = row.max_ulps_seen.max(rep.max_ulps_seen);
                if rep.passed {
                    row.matched_cases += 1;
                } else {
                    if status == Status::Matched {
                        status = Status::Mismatched;
                        row.detail = format!(
                            "case {k}: {} of {} elements differ{}",
                            rep.mismatches,
                            rep.compared,
                            rep.first_text()
                        );
                    }
                }
            }
            Err(e) => {
                if status != Status::Failed {
                    row.detail =
                        format!("case {k}: {}", crate::util::terminal_safe(&e.to_string()));
                }
                status = Status::Failed;
            }
        }
    }
    row.status = status;
    row
}

fn first_line(s: &str) -> String {
    crate::util::terminal_safe(s.lines().next().unwrap_or_default()).into_owned()
}

/// Why one fixture case did not run (the row's detail).
#[derive(Debug, thiserror::Error)]
enum CaseError {
    /// The case was refused while it was prepared (its codes and reason).
    #[error("[{}] {}", .0.codes.join(","), .0.message)]
    Refused(Refusal),
    /// Our interpreter or runtime failed on the converted Program.
    #[error("{0}")]
    Ours(Box<Problem>),
    /// vyre's fixture lacks this case's inputs.
    #[error("vyre's fixture has no inputs for this case")]
    NoInputs,
    /// vyre's Program for the operation could not be built.
    #[error("vyre's Program could not be built")]
    NoProgram,
    /// The vyre backend refused or failed the dispatch.
    #[error("backend error {}: {}", .0.code().stable_id(), .0)]
    Backend(Box<BackendError>),
}

/// Runs case `k` of `op`; vyre's outputs in order (each cut to its byte range).
fn run_case(
    backend: &mut CatalogBackend<'_>,
    op: &CatalogOp,
    k: usize,
    program: &crate::ir::Program,
    case: &CatalogCase,
) -> Result<Vec<Vec<u8>>, CaseError> {
    let mut bufs = case.buffers.clone();
    match backend {
        CatalogBackend::Reference => {
            let opts = crate::interp::Options {
                parallel: false,
                ..crate::interp::Options::default()
            };
            crate::interp::run_with(program, &case.shape, &mut bufs, &opts)
                .map_err(|e| CaseError::Ours(Box::new(Problem::from(e))))?;
        }
        CatalogBackend::Cuda(rt) => {
            let c = rt
                .compile_program(program, case.shape.workgroup_size, &JitOptions::default())
                .map_err(|e| CaseError::Ours(Box::new(Problem::from(e))))?;
            let opts = DispatchOptions {
                timeout: Some(std::time::Duration::from_secs(10)),
                device_timing: false,
                ..DispatchOptions::default()
            };
            rt.dispatch_by_name(&c.handle, &c.emitted.abi, &case.shape, &mut bufs, &opts)
                .map_err(|e| CaseError::Ours(Box::new(Problem::from(e))))?;
        }
        CatalogBackend::Vyre(be) => {
            let Some(inputs) = op.fixture.as_ref().and_then(|f| f.inputs.get(k)) else {
                return Err(CaseError::NoInputs);
            };
            let Some(f) = &op.fixture else {
                return Err(CaseError::NoProgram);
            };
            return be
                .dispatch(&f.program, inputs, &DispatchConfig::default())
                .map_err(|e| CaseError::Backend(Box::new(e)));
        }
    }
    Ok(case
        .expected
        .iter()
        .map(|e| {
            let data = bufs.get(e.buffer).map_or(&[][..], |b| &b.data[..]);
            match &e.range {
                Some(r) if r.start <= r.end && r.end <= data.len() => data[r.clone()].to_vec(),
                _ => data.to_vec(),
            }
        })
        .collect())
}

/// Our outputs (vyre's order, each already cut to its range) against vyre's expected bytes,
/// by vyre's rule (see the module docs).
fn compare_outputs(case: &CatalogCase, out: &[Vec<u8>], tol: Option<Tolerance>) -> ParityReport {
    let mut got = Vec::new();
    let mut want = Vec::new();
    for (j, e) in case.expected.iter().enumerate() {
        let Some(b) = case.buffers.get(e.buffer) else {
            continue;
        };
        let data = out.get(j).cloned().unwrap_or_default();
        let size = b.elem.size_bytes();
        // Compare whole elements; a byte length that differs is a mismatch of its own.
        let pad = |mut v: Vec<u8>| {
            v.resize(v.len().div_ceil(size) * size, 0);
            v
        };
        let lengths_differ = data.len() != e.bytes.len();
        let mut g = HostBuffer {
            data: pad(data),
            access: crate::ir::Access::ReadWrite,
            ..b.clone()
        };
        let w = HostBuffer {
            data: pad(e.bytes.clone()),
            access: crate::ir::Access::ReadWrite,
            ..b.clone()
        };
        if lengths_differ && g.data.len() == w.data.len() {
            // Same element count after padding: make the difference visible.
            g.data.push(0);
            g.data.resize(g.data.len().div_ceil(size) * size, 0);
        }
        got.push(g);
        want.push(w);
    }
    parity::compare(&got, &want, tol)
}

/// The report as a table: one line per entry, then the totals.
pub fn catalog_table(r: &CatalogReport) -> String {
    let mut s = String::new();
    for e in &r.entries {
        let what = match e.status {
            Status::Matched => format!("matched ({}/{} cases)", e.matched_cases, e.cases),
            Status::Mismatched => format!("MISMATCH ({}/{} cases)", e.matched_cases, e.cases),
            Status::Failed => "FAILED".into(),
            Status::Refused => format!("refused ({})", e.codes.join(",")),
        };
        s.push_str(&format!(
            "  {:<9} {:<15} {:<60} {}\n",
            if e.imported { "imported" } else { "-" },
            e.source.name(),
            e.id,
            what
        ));
        if !e.detail.is_empty() && e.status != Status::Matched {
            s.push_str(&format!(
                "            {}\n",
                crate::util::terminal_safe(&e.detail)
            ));
        }
    }
    let t = &r.totals;
    s.push_str(&format!(
        "\n{} entries: {} imported, {} refused; {} matched, {} mismatched, {} failed\n",
        t.entries, t.imported, t.refused, t.matched, t.mismatched, t.failed
    ));
    s
}
