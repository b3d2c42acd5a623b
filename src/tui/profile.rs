//! The inspector's per-statement profile (`p`): what it profiled, the profiles the worker
//! made (one per kernel: a Program's, or each step of a pipeline), and the heat the code
//! panes' gutters and the Profile tab show of it.
//!
//! The numbers are never computed here: the worker builds them with the functions
//! `vyrescope profile` uses ([`crate::harness::profile_run::estimate_kernels`] offline,
//! the GPU worker's instrumented runs and
//! [`crate::harness::profile_run::instrumented_profiles`] on a GPU). This module only
//! indexes a [`Profile`]'s statements by node so that each pane line finds its statement's
//! share through the panes' own line maps (the IR printer's nodes, the PTX source map, the
//! SASS rows), the ones the synchronised selection uses.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::harness::profile_run::{estimate_kernels, instrumented_profiles, load_kernels};
use crate::ir::Program;
use crate::profile::{Profile, Source};
use crate::util::Problem;

use super::analysis::Document;
use super::app::App;
use super::gpu::Gpu;

/// What a profile is of: the file and the Programs it held when `p` was pressed (a
/// Program's, or a pipeline's steps). A profile whose Programs are not the open ones any
/// more (the file was reloaded with other contents) is stale.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileKey {
    /// The file.
    pub path: PathBuf,
    /// Its Programs, in kernel order.
    pub programs: Arc<Vec<Program>>,
}

impl ProfileKey {
    /// The key of the open document (its file as loaded, not a fused kernel).
    pub fn of(doc: &Document) -> Self {
        let programs = match &doc.pipeline {
            Some(pv) => pv
                .file
                .pipeline
                .steps
                .iter()
                .map(|s| s.program.clone())
                .collect(),
            None => vec![(*doc.program).clone()],
        };
        ProfileKey {
            path: doc.path.clone(),
            programs: Arc::new(programs),
        }
    }
}

/// The last profile the inspector made (or why it could not), and whether the open
/// Program still is what was profiled.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileView {
    /// What was profiled.
    pub key: ProfileKey,
    /// One profile per kernel, or why there is none (message with its `Fix:`).
    pub result: Result<Arc<Vec<Profile>>, Problem>,
    /// The open file is another load with other contents (its heat would be wrong: hidden).
    pub stale: bool,
}

impl ProfileView {
    /// Recomputes [`ProfileView::stale`] against the open document.
    pub fn check(&mut self, doc: Option<&Document>) {
        self.stale = doc.is_none_or(|d| d.path != self.key.path || ProfileKey::of(d) != self.key);
    }
}

/// The profile the panes show now: the open file's, not stale, of the selected step for a
/// pipeline; with the node prefix of the IR pane's ids (`steps[K].` for a pipeline).
pub fn current(app: &App) -> Option<(&Profile, String)> {
    let view = app.jobs.session.profile.as_ref()?;
    let doc = app.programs.doc.as_ref()?;
    if view.stale || doc.path != view.key.path {
        return None;
    }
    let profiles = view.result.as_ref().ok()?;
    let (k, prefix) = match &doc.pipeline {
        Some(pv) => (pv.step, format!("steps[{}].", pv.step)),
        None => (0, String::new()),
    };
    Some((profiles.get(k)?, prefix))
}

/// Own shares by node id as the panes spell them, for the gutters of one frame.
#[derive(Debug, Clone, Default)]
pub struct Heat {
    /// Node id (with the pane's prefix) to its own share (0..=1).
    pub shares: HashMap<String, f64>,
    /// Where the numbers come from.
    pub source: Option<Source>,
}

impl Heat {
    /// The heat of the profile the panes show now (empty without one).
    pub fn of(app: &App) -> Self {
        let Some((p, prefix)) = current(app) else {
            return Heat::default();
        };
        Heat {
            shares: p
                .statements
                .iter()
                .map(|s| (format!("{prefix}{}", s.node), s.self_share))
                .collect(),
            source: Some(p.source),
        }
    }

    /// Whether there is a profile to show.
    pub fn is_empty(&self) -> bool {
        self.source.is_none()
    }

    /// The own share of `node`, when it is in the profile.
    pub fn share(&self, node: Option<&str>) -> Option<f64> {
        self.shares.get(node?).copied()
    }
}

/// Columns of the heat gutter: ` 53.6` (own share in percent).
pub const HEAT_WIDTH: usize = 5;

/// A share as the heat gutter shows it: percent with one decimal, right-aligned.
pub fn heat_text(share: f64) -> String {
    format!("{:>w$.1}", 100.0 * share, w = HEAT_WIDTH)
}

/// The source as titles name it: the estimate loudly (it is no time).
pub fn source_label(source: Source) -> &'static str {
    match source {
        Source::Estimate => "instruction-count ESTIMATE",
        Source::Instrumented => "instrumented (cycles)",
        Source::Pc => "pc samples",
    }
}

/// The top stall reason of the statement `node` (pc source only), for the selected line.
pub fn top_stall(app: &App, node: &str) -> Option<String> {
    let (p, prefix) = current(app)?;
    let own = node.strip_prefix(prefix.as_str())?;
    let (reason, n) = p.statement(own)?.stalls.first()?;
    Some(format!(
        "{} ({n})",
        crate::profile::pc::short_reason(reason)
    ))
}

/// Profiles `key`'s file (the worker's side of `p`): on the GPU through `gpu` (the GPU
/// worker's instrumented runs), else the reference interpreter's instruction-count
/// estimate. A file whose Programs on disk are not the open ones is refused (the profile
/// would not be of what the panes show).
pub fn run(key: &ProfileKey, gpu: Option<&mut dyn Gpu>) -> Result<Vec<Profile>, Problem> {
    let (kernels, mut inputs) = load_kernels(&key.path)?;
    let on_disk: Vec<&Program> = kernels.iter().map(|k| &k.program).collect();
    if on_disk.len() != key.programs.len()
        || on_disk
            .iter()
            .zip(key.programs.iter())
            .any(|(a, b)| *a != b)
    {
        return Err(Problem::new(
            format!(
                "{} on disk is not the Program open in the inspector (it changed since it was opened)",
                key.path.display()
            ),
            "press R to reload it, then p to profile it",
        ));
    }
    match gpu {
        Some(gpu) => {
            let runs = gpu.profile(&key.path)?;
            instrumented_profiles(&kernels, &runs, None)
        }
        None => estimate_kernels(&kernels, &mut inputs, None),
    }
}

/// What the status line says of a finished profile.
pub fn summary(profiles: &[Profile], pipeline_step: Option<usize>) -> String {
    let k = pipeline_step.unwrap_or(0);
    let Some(p) = profiles.get(k) else {
        return "profiled: no kernel".into();
    };
    let hottest = p.statements.first().map_or(String::new(), |s| {
        format!("; hottest {} {:.1}%", s.node, 100.0 * s.self_share)
    });
    let step = pipeline_step.map_or(String::new(), |s| {
        format!(" (step {} of {})", s + 1, profiles.len())
    });
    format!("profiled{step}: {}{hottest}", source_label(p.source))
}

/// What the status bar says while a profile runs.
pub fn job_label(gpu: bool) -> &'static str {
    if gpu {
        "profiling on the GPU"
    } else {
        "profiling: instruction-count ESTIMATE on the interpreter"
    }
}
