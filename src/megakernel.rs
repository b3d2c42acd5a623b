//! Megakernel plans: dependence typing between the steps of a pipeline, the planner that groups
//! steps into fused kernels separated by the weakest sufficient barriers, and fused emission.
//!
//! The meaning of a pipeline is always "every step as its own dispatch, in order"; every plan
//! must compute exactly that. Anything the analysis cannot prove is a grid dependence, so a
//! plan is never unsound.
//!
//! [`deps`] types every pair of steps ([`DepKind`], with a reason); [`plan`] groups, orders
//! and separates them into a [`plan::Plan`] (`vyrescope plan --json`) whose groups give the
//! [`FusedGroupSpec`]s fused emission works from; [`cache`] keeps plans on disk.
//!
//! Contract with fused emission (`fuse`; the plan is only sound under it): a group's steps run
//! in increasing order in one kernel, each step over its virtual workgroups with the same
//! virtual-workgroup-to-block assignment for equal grids, so virtual workgroup `g` of two
//! steps of one grid runs on the same block and invocation `(g, lid)` on the same thread.
//! Hence `none`/`invocation` separations need nothing (program order), `workgroup` a
//! `barrier(workgroup)` between steps of equal grids, `grid` a grid barrier.

use serde::{Deserialize, Serialize};

pub mod fuse;
pub mod gate;
pub mod launch;
pub mod mixed;
pub mod timeline;

pub use fuse::{fuse_group, ForwardReport, FuseError, FusedKernel};

/// How strongly step B depends on an earlier step A (the weakest sufficient separation).
/// Ordered from weakest to strongest, so the separation a wave needs is the maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DepKind {
    /// No shared buffer with a write: nothing needed.
    None,
    /// Every index B uses is the one the same invocation used in A: program order suffices.
    Invocation,
    /// Every access stays within the workgroup's own index range: `barrier(workgroup)`.
    Workgroup,
    /// Anything else, including everything unproven: a grid barrier.
    Grid,
}

impl DepKind {
    /// The name used in `plan --json` and in messages.
    pub fn name(self) -> &'static str {
        match self {
            DepKind::None => "none",
            DepKind::Invocation => "invocation",
            DepKind::Workgroup => "workgroup",
            DepKind::Grid => "grid",
        }
    }
}

/// What a fused kernel puts between two consecutive steps of a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Separation {
    /// Index (into `Pipeline::steps`) of the step after which the separation sits.
    pub after_step: usize,
    /// The barrier: `None`/`Invocation` mean no barrier at all.
    pub kind: DepKind,
    /// Why (the dependence that forces it, or "no dependence").
    pub reason: String,
}

/// One group of a plan as fused emission needs it: its steps in execution order and the
/// separation after each step but the last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FusedGroupSpec {
    /// Step indices in execution order.
    pub steps: Vec<usize>,
    /// `separations[i]` sits between `steps[i]` and `steps[i + 1]`.
    pub separations: Vec<Separation>,
    /// Blocks of the persistent grid when the group has grid barriers (co-resident blocks);
    /// `None` for a group that runs as one ordinary launch.
    pub persistent_blocks: Option<u32>,
    /// `Some` for a dataflow schedule (`--sync dataflow`): every cross-workgroup dependence
    /// of the group with its producer set. `grid` separations then become waits on
    /// completion flags and counters (see `fuse`); `None`: grid barriers.
    #[serde(default)]
    pub dataflow: Option<Vec<tiles::TileDep>>,
    /// Dependences with no wait of their own, implied by the waits of `dataflow` through
    /// chains of waits (see `dataflow`): fusion emits no wait for them, and the schedule
    /// check proves them all the same.
    #[serde(default)]
    pub implied: Vec<tiles::TileDep>,
    /// Keep every load in its task: no loads issued ahead of a dataflow wait (`fuse`'s
    /// prefetch). The runtime sets it when the prefetching kernel would keep fewer blocks
    /// resident than the kernel without (its registers).
    #[serde(default)]
    pub no_prefetch: bool,
    /// `Some` for the recomputed form (`halo`): the steps run as one launch of one block per
    /// tile, each block computing its tile for every step from the tile and a halo in shared
    /// memory; `separations`, `persistent_blocks` and `dataflow` do not apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halo: Option<halo::HaloSpec>,
}

#[cfg(feature = "vyre")]
pub mod against_vyre;
pub mod cache;
pub mod cache_check;
pub mod compiled;
pub mod cost;
pub mod dataflow;
pub mod decision;
pub mod deps;
pub mod emitted;
pub mod halo;
pub mod plan;
pub mod tiles;
pub mod validate;

#[cfg(test)]
pub(crate) mod test_support;

#[cfg(test)]
mod validated_once_tests;
