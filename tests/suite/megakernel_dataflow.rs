//! Dataflow megakernels (`--sync dataflow`): fused persistent groups whose tasks wait only for
//! their producers' completion flags or counters, and whose one-workgroup folds run on the
//! last arriving producer.
//!
//! - every pipeline fixture's plan, fused in both sync forms, runs on the reference
//!   interpreter to the same final buffers (bit for bit) as the steps one by one, from the
//!   fixtures' random inputs;
//! - ptxas accepts every fused kernel in both forms; dataflow kernels poll with
//!   `ld.acquire.gpu` and publish with release semantics, barrier kernels do neither;
//! - the schedule read back from each dataflow kernel is the one the validator accepts, and
//!   every mutation of the emitted waits that breaks a dependence (a wait dropped, a window
//!   narrowed, a count lowered, an arrival dropped) is refused.

use std::path::{Path, PathBuf};

use vyrescope::emit::ptxas::assemble;
use vyrescope::emit::{emit, EmitOptions};
use vyrescope::inputs::pipeline::{prepare_pipeline, PreparedPipeline};
use vyrescope::inputs::{HostBuffer, LaunchShape};
use vyrescope::interp::{self, pipeline::run_pipeline};
use vyrescope::ir::{Access, BlockTasks, Expr, Pipeline, Stmt, StmtKind, SyncOp, WaitOn};
use vyrescope::megakernel::emitted::{check_emitted, sync_ops};
use vyrescope::megakernel::fuse::{FOLD_SPREAD, FOLD_SPREAD_FROM_BLOCKS};
use vyrescope::megakernel::plan::{plan, Decide, Plan, PlanOptions, SyncMode};
use vyrescope::megakernel::{fuse_group, FusedKernel};
use vyrescope::occupancy::profiles;
use vyrescope::validate::pipeline::load_pipeline;

fn pipeline_fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .expect("fixtures/pipelines")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

struct Loaded {
    name: String,
    pipeline: Pipeline,
    prepared: PreparedPipeline,
    shapes: Vec<LaunchShape>,
    plan: Plan,
}

fn load(path: &Path) -> Loaded {
    let p = load_pipeline(path)
        .pipeline
        .expect("valid pipeline fixture");
    let prepared = prepare_pipeline(&p, path.parent().expect("folder")).expect("prepare");
    let shapes: Vec<LaunchShape> = prepared.steps.iter().map(|s| s.shape).collect();
    // These tests study the fused forms: fuse whatever may legally fuse, whatever the cost
    // model would choose.
    let opts = PlanOptions {
        decide: Decide::Fuse,
        ..PlanOptions::new(profiles::load("h200").expect("bundled h200"))
    };
    let plan = plan(&p, &shapes, &opts).expect("plan");
    Loaded {
        name: path.display().to_string(),
        pipeline: p,
        prepared,
        shapes,
        plan,
    }
}

/// Every group fused under `sync`.
fn kernels(l: &Loaded, sync: SyncMode) -> Vec<FusedKernel> {
    l.plan
        .groups
        .iter()
        .map(|g| {
            fuse_group(&l.pipeline, &l.shapes, &g.spec_for(sync))
                .unwrap_or_else(|e| panic!("{} ({}): {e}", l.name, sync.name()))
        })
        .collect()
}

/// Runs the fused kernels on the interpreter over `prepared` (in place).
fn run_fused(l: &Loaded, ks: &[FusedKernel], prepared: &mut PreparedPipeline) {
    for k in ks {
        let mut bufs: Vec<HostBuffer> = k
            .program
            .host_buffers()
            .into_iter()
            .map(|d| {
                let pb = prepared
                    .buffers
                    .iter()
                    .find(|b| b.name == d.name)
                    .expect("pipeline buffer");
                HostBuffer {
                    name: d.name.clone(),
                    elem: d.elem,
                    access: d.access,
                    binding: d.binding.unwrap_or(0),
                    data: pb.data.clone(),
                }
            })
            .collect();
        interp::run(&k.program, &k.shape, &mut bufs)
            .unwrap_or_else(|e| panic!("{}: interpreting {}: {e}", l.name, k.program.name));
        for b in bufs {
            if let Some(pb) = prepared.buffers.iter_mut().find(|x| x.name == b.name) {
                pb.data = b.data;
            }
        }
    }
}

fn steps_of(l: &Loaded, g: usize) -> Vec<(usize, u64)> {
    l.plan.groups[g]
        .steps
        .iter()
        .map(|&k| (k, l.shapes[k].workgroups()))
        .collect()
}

#[test]
fn every_fixture_runs_like_its_steps_in_both_sync_forms() {
    let mut dataflow_groups = 0;
    let mut folds = 0;
    let mut flag_waits = 0;
    for path in pipeline_fixtures() {
        let l = load(&path);
        let mut expected = l.prepared.clone();
        run_pipeline(&l.pipeline, &mut expected, &interp::Options::default())
            .unwrap_or_else(|e| panic!("{}: reference: {e}", l.name));
        assert!(
            expected
                .buffers
                .iter()
                .zip(&l.prepared.buffers)
                .any(|(a, b)| !a.transient && a.data != b.data),
            "{}: the pipeline changes nothing",
            l.name
        );
        for sync in [SyncMode::Barrier, SyncMode::Dataflow] {
            let ks = kernels(&l, sync);
            if sync == SyncMode::Dataflow {
                for (g, k) in ks.iter().enumerate() {
                    if !l.plan.groups[g].runs_dataflow() {
                        continue;
                    }
                    dataflow_groups += 1;
                    for op in sync_ops(k) {
                        match op {
                            SyncOp::Arrive { .. } => folds += 1,
                            SyncOp::Wait {
                                on: WaitOn::Window { .. },
                                ..
                            } => flag_waits += 1,
                            _ => {}
                        }
                    }
                }
            }
            let mut got = l.prepared.clone();
            run_fused(&l, &ks, &mut got);
            for (a, b) in got.buffers.iter().zip(&expected.buffers) {
                if a.transient {
                    continue;
                }
                assert!(
                    a.data == b.data,
                    "{} ({}): buffer `{}` differs from the steps run one by one",
                    l.name,
                    sync.name(),
                    a.name
                );
            }
        }
    }
    // The fixtures exercise every form: counters/flags, windows and last-arriver folds.
    assert!(dataflow_groups >= 4, "{dataflow_groups} dataflow groups");
    assert!(folds >= 3, "{folds} last-arriver folds");
    assert!(flag_waits >= 3, "{flag_waits} window waits");
}

#[test]
fn ptxas_accepts_every_fused_kernel_in_both_sync_forms() {
    // Without ptxas (outside CI) only the PTX text is checked.
    let ptxas = crate::support::tools::ptxas("assembling the fused kernels");
    let mut one_counter_folds = 0;
    for path in pipeline_fixtures() {
        let l = load(&path);
        for sync in [SyncMode::Barrier, SyncMode::Dataflow] {
            for (g, k) in kernels(&l, sync).iter().enumerate() {
                let what = format!("{} group {g} ({})", l.name, sync.name());
                let e = emit(&k.program, &EmitOptions::for_program(&k.program))
                    .unwrap_or_else(|e| panic!("{what}: emit: {e}"));
                let dataflow = sync == SyncMode::Dataflow && l.plan.groups[g].runs_dataflow();
                let waits = sync_ops(k)
                    .iter()
                    .filter(|o| matches!(o, SyncOp::Wait { .. }))
                    .count();
                if dataflow {
                    // Each wait polls with acquire; each task publishes with release (or a
                    // block publishes its tasks with one fence before relaxed stores).
                    assert!(
                        e.ptx.matches("ld.acquire.gpu.global.u32").count() >= waits,
                        "{what}"
                    );
                    assert!(
                        e.ptx.contains("st.release.gpu")
                            || e.ptx.contains("atom.release.gpu")
                            || e.ptx.contains("atom.acq_rel.gpu")
                            || e.ptx.contains("fence.acq_rel.gpu"),
                        "{what}: no publishing store"
                    );
                    let batched = sync_ops(k)
                        .iter()
                        .filter(|o| matches!(o, SyncOp::Signal { tasks: Some(_), .. }))
                        .count();
                    if batched > 0 {
                        let fences = e.ptx.matches("fence.acq_rel.gpu;").count();
                        assert!(
                            fences >= batched,
                            "{what}: {fences} fences, {batched} batched"
                        );
                        for line in e.ptx.lines().filter(|l| l.contains("st.relaxed.gpu")) {
                            assert!(line.trim_start().starts_with('@'), "{what}: {line}");
                        }
                    }
                    assert!(e.abi.grid_sync, "{what}: a dataflow kernel is cooperative");
                    let top = sync_ops(k).iter().map(|o| o.top_word()).max().unwrap_or(0);
                    assert!(e.abi.scratch.words > top, "{what}: scratch too small");
                    // Nothing clears the scratch between launches: flags compare with the
                    // launch's epoch (a parameter), counters flip, and a word is either.
                    let ops = sync_ops(k);
                    let flagged = ops.iter().any(|o| o.words().0.is_some());
                    assert_eq!(e.abi.scratch.epoch, flagged, "{what}: epoch parameter");
                    assert_eq!(
                        e.ptx.contains(".param .u32 param_sync_epoch"),
                        flagged,
                        "{what}"
                    );
                    if let Some(first) = e.abi.scratch.flags_start {
                        assert!(
                            e.abi.scratch.counters_end <= first,
                            "{what}: a counter among flags"
                        );
                    }
                    assert!(
                        !e.ptx.contains("red.release"),
                        "{what}: a counter add without its old value"
                    );
                    for op in &ops {
                        if let SyncOp::Arrive { spread, total, .. } = op {
                            // The fixtures' grids (1024-1056 blocks) arrive on one counter.
                            assert!(*spread == 0, "{what}: {}", op.describe());
                            assert!(*total < FOLD_SPREAD_FROM_BLOCKS, "{what}");
                            one_counter_folds += 1;
                        }
                    }
                    assert!(
                        !k.program.body.iter().any(|s| matches!(
                            s.kind,
                            StmtKind::Barrier(vyrescope::ir::BarrierScope::Grid)
                        )),
                        "{what}: a grid barrier left in a dataflow kernel"
                    );
                } else {
                    assert_eq!(waits, 0, "{what}");
                    assert!(!e.ptx.contains("bar.red.or.pred"), "{what}");
                }
                if let Some(ptxas) = &ptxas {
                    assemble(ptxas, &e.ptx, 90, false)
                        .unwrap_or_else(|err| panic!("{what}: ptxas: {err}"));
                }
            }
        }
    }
    // softmax, reduce_normalize_2p20 and the histograms fold over 1024-1056 blocks.
    assert!(
        one_counter_folds >= 3,
        "{one_counter_folds} last-arriver folds"
    );
}

/// Fixed waits (a count, a fixed range of flags) in loops, with whether each is inside one.
fn fixed_waits(list: &[Stmt], in_loop: bool, out: &mut Vec<bool>) {
    for s in list {
        match &s.kind {
            StmtKind::Sync(SyncOp::Wait {
                on: WaitOn::Count { .. } | WaitOn::Range { .. },
                ..
            }) => out.push(in_loop),
            StmtKind::If {
                then, otherwise, ..
            } => {
                fixed_waits(then, in_loop, out);
                fixed_waits(otherwise, in_loop, out);
            }
            StmtKind::Block(b) => fixed_waits(b, in_loop, out),
            StmtKind::Loop { body, .. } => fixed_waits(body, true, out),
            _ => {}
        }
    }
}

/// A wait that is the same for every task of a step (a count, a fixed range of flags) is
/// polled once per block. Where the block runs several tasks of the step, fusion puts the
/// wait before the task loop (reduce_normalize_2p20's normalise step and hist_equalize's
/// map step used to poll the broadcast flag four times per block, an L2 round trip each);
/// where a fixed wait stays in an unrolled loop (a masked smaller step), its copies skip on
/// one shared "seen it" predicate.
#[test]
fn a_fixed_wait_is_polled_once_per_block() {
    let mut hoisted = Vec::new();
    for path in pipeline_fixtures() {
        let l = load(&path);
        for k in kernels(&l, SyncMode::Dataflow) {
            let fixed: std::collections::HashSet<String> = sync_ops(&k)
                .iter()
                .filter_map(|op| match op {
                    SyncOp::Wait {
                        on: on @ (WaitOn::Count { .. } | WaitOn::Range { .. }),
                        workgroup,
                        ..
                    } => Some(format!("{on:?} {workgroup}")),
                    _ => None,
                })
                .collect();
            if fixed.is_empty() {
                continue;
            }
            let e = emit(&k.program, &EmitOptions::for_program(&k.program)).unwrap();
            let skips: Vec<&str> = e
                .ptx
                .lines()
                .filter(|line| line.contains("_df_passed") && line.contains(" bra "))
                .filter_map(|line| line.split_whitespace().next())
                .collect();
            let distinct: std::collections::HashSet<&str> = skips.iter().copied().collect();
            assert!(
                distinct.len() <= fixed.len(),
                "{}: {} skip predicates for {} fixed waits ({} copies)",
                l.name,
                distinct.len(),
                fixed.len(),
                skips.len()
            );
            let mut where_ = Vec::new();
            fixed_waits(&k.program.body, false, &mut where_);
            if where_.iter().all(|in_loop| !in_loop) {
                hoisted.push(k.program.name.clone());
            }
        }
    }
    for multi_task in [
        "reduce_normalize_2p20_fused_0_2",
        "hist_equalize_fused_0_2",
        "hist_equalize_shared_fused_0_2",
    ] {
        assert!(
            hoisted.iter().any(|n| n == multi_task),
            "{multi_task}: a fixed wait is still inside the task loop ({hoisted:?})"
        );
    }
}

/// A persistent grid of [`FOLD_SPREAD_FROM_BLOCKS`] blocks or more arrives at a last-arriver
/// fold through [`FOLD_SPREAD`] sub-counters; the fixtures' own grids arrive on one counter.
/// Forced to 2112 blocks (what 128-thread workgroups give on an H200), softmax and reduce +
/// normalise spread every fold, pass the schedule check `fuse_group` runs, assemble, and give
/// the steps' results on the interpreter.
#[test]
fn large_grids_spread_their_fold_arrivals() {
    let ptxas = crate::support::tools::ptxas("assembling the spread folds");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines");
    for name in ["softmax.json", "reduce_normalize_2p20.json"] {
        let l = load(&dir.join(name));
        let mut expected = l.prepared.clone();
        run_pipeline(&l.pipeline, &mut expected, &interp::Options::default()).unwrap();
        let g = l
            .plan
            .groups
            .iter()
            .position(|g| g.runs_dataflow())
            .expect("a dataflow group");
        let mut ks = kernels(&l, SyncMode::Dataflow);
        let folds = |k: &FusedKernel| -> Vec<(u32, u32)> {
            sync_ops(k)
                .iter()
                .filter_map(|op| match op {
                    SyncOp::Arrive { spread, total, .. } => Some((*spread, *total)),
                    _ => None,
                })
                .collect()
        };
        let planned = folds(&ks[g]);
        assert!(!planned.is_empty(), "{name}: no fold");
        assert!(planned.iter().all(|&(s, _)| s == 0), "{name}: {planned:?}");
        let mut spec = l.plan.groups[g].spec_for(SyncMode::Dataflow);
        spec.persistent_blocks = Some(2112);
        ks[g] = fuse_group(&l.pipeline, &l.shapes, &spec)
            .unwrap_or_else(|e| panic!("{name} on 2112 blocks: {e}"));
        let spread = folds(&ks[g]);
        assert!(
            spread.len() == planned.len()
                && spread.iter().all(|&(s, t)| s == FOLD_SPREAD && t == 2112),
            "{name}: {spread:?}"
        );
        let e = emit(&ks[g].program, &EmitOptions::for_program(&ks[g].program)).unwrap();
        // One acquire-release add per sub-counter arrival and one on the top counter.
        assert!(
            e.ptx.matches("atom.acq_rel.gpu").count() >= 2 * spread.len(),
            "{name}"
        );
        if let Some(ptxas) = &ptxas {
            assemble(ptxas, &e.ptx, 90, false).unwrap_or_else(|err| panic!("{name}: {err}"));
        }
        let mut got = l.prepared.clone();
        run_fused(&l, &ks, &mut got);
        for (a, b) in got.buffers.iter().zip(&expected.buffers) {
            assert!(
                a.transient || a.data == b.data,
                "{name}: `{}` differs",
                a.name
            );
        }
    }
}

/// A named rewrite of one dataflow statement (`None`: delete it).
type Mutation<'a> = (&'a str, &'a dyn Fn(&SyncOp) -> Option<SyncOp>);

/// Applies `f` to the `n`-th dataflow statement of `list` (pre-order); `f` returns `None` to
/// delete it. Returns false when there is no `n`-th one.
fn mutate_nth(list: &mut Vec<Stmt>, n: &mut usize, f: &dyn Fn(&SyncOp) -> Option<SyncOp>) -> bool {
    let mut i = 0;
    while i < list.len() {
        if let StmtKind::Sync(op) = &list[i].kind {
            if *n == 0 {
                match f(op) {
                    Some(new) => list[i].kind = StmtKind::Sync(new),
                    None => {
                        list.remove(i);
                    }
                }
                return true;
            }
            *n -= 1;
        }
        let done = match &mut list[i].kind {
            StmtKind::If {
                then, otherwise, ..
            } => mutate_nth(then, n, f) || mutate_nth(otherwise, n, f),
            StmtKind::Loop { body, .. } | StmtKind::Block(body) => mutate_nth(body, n, f),
            _ => false,
        };
        if done {
            return true;
        }
        i += 1;
    }
    false
}

#[test]
fn the_emitted_schedule_is_validated_and_broken_emissions_are_refused() {
    let mut refused = 0;
    for path in pipeline_fixtures() {
        let l = load(&path);
        for (g, k) in kernels(&l, SyncMode::Dataflow).iter().enumerate() {
            let group = &l.plan.groups[g];
            if !group.runs_dataflow() {
                continue;
            }
            let what = format!("{} group {g}", l.name);
            let spec = group.spec_for(SyncMode::Dataflow);
            let deps = spec.dataflow.clone().expect("dataflow deps");
            let steps = steps_of(&l, g);
            let s = check_emitted(k, &steps, &deps).unwrap_or_else(|e| panic!("{what}: {e}"));
            // The schedule is the one emitted: one wait per emitted wait statement, one fold
            // per arrival, the kernel's grid as blocks.
            let ops = sync_ops(k);
            let waits = ops
                .iter()
                .filter(|o| matches!(o, SyncOp::Wait { .. }))
                .count();
            let arrivals = ops
                .iter()
                .filter(|o| matches!(o, SyncOp::Arrive { .. }))
                .count();
            assert_eq!(s.waits.len(), waits, "{what}");
            assert_eq!(s.folds.len(), arrivals, "{what}");
            assert_eq!(s.blocks.len() as u32, k.shape.grid[0], "{what}");
            // Mutations of every dataflow statement.
            let mutations: [Mutation; 8] = [
                ("dropped", &|op| match op {
                    SyncOp::Wait { .. } | SyncOp::Arrive { .. } => None,
                    other => Some(other.clone()),
                }),
                ("narrowed", &|op| match op {
                    SyncOp::Wait {
                        consumer,
                        producer,
                        on:
                            WaitOn::Window {
                                flags,
                                producers,
                                lo,
                                hi,
                            },
                        workgroup,
                        span,
                    } if lo < hi => Some(SyncOp::Wait {
                        consumer: *consumer,
                        producer: *producer,
                        on: WaitOn::Window {
                            flags: *flags,
                            producers: *producers,
                            lo: *lo + 1,
                            hi: *hi,
                        },
                        workgroup: workgroup.clone(),
                        span: *span,
                    }),
                    other => Some(other.clone()),
                }),
                ("count lowered", &|op| match op {
                    SyncOp::Wait {
                        consumer,
                        producer,
                        on: WaitOn::Count { counter, total },
                        workgroup,
                        span,
                    } => Some(SyncOp::Wait {
                        consumer: *consumer,
                        producer: *producer,
                        on: WaitOn::Count {
                            counter: *counter,
                            total: total.saturating_sub(1),
                        },
                        workgroup: workgroup.clone(),
                        span: *span,
                    }),
                    other => Some(other.clone()),
                }),
                ("arrival miscounted", &|op| match op {
                    SyncOp::Arrive {
                        step,
                        fold,
                        counter,
                        total,
                        last,
                        spread,
                    } => Some(SyncOp::Arrive {
                        step: *step,
                        fold: *fold,
                        counter: *counter,
                        total: total + 1,
                        last: last.clone(),
                        spread: *spread,
                    }),
                    other => Some(other.clone()),
                }),
                // A block publishing its tasks' flags names one task too few, or the wrong
                // ones (another grid's assignment).
                ("block's tasks miscounted", &|op| match op {
                    SyncOp::Signal { tasks: Some(t), .. } => {
                        let mut m = op.clone();
                        if let SyncOp::Signal { tasks, .. } = &mut m {
                            *tasks = Some(BlockTasks {
                                count: t.count - 1,
                                ..*t
                            });
                        }
                        Some(m)
                    }
                    other => Some(other.clone()),
                }),
                // A packed step's trip waits for fewer of its sub-tasks than it runs.
                ("span narrowed", &|op| match op {
                    SyncOp::Wait { span, .. } if *span > 1 => {
                        let mut m = op.clone();
                        if let SyncOp::Wait { span, .. } = &mut m {
                            *span -= 1;
                        }
                        Some(m)
                    }
                    other => Some(other.clone()),
                }),
                // A block publishes the flags of a packed step as if it ran fewer sub-tasks.
                ("block's tasks unpacked", &|op| match op {
                    SyncOp::Signal { tasks: Some(t), .. } if t.pack > 1 => {
                        let mut m = op.clone();
                        if let SyncOp::Signal { tasks, .. } = &mut m {
                            *tasks = Some(BlockTasks { pack: 1, ..*t });
                        }
                        Some(m)
                    }
                    other => Some(other.clone()),
                }),
                ("block's tasks strided wrong", &|op| match op {
                    SyncOp::Signal { tasks: Some(t), .. } => {
                        let mut m = op.clone();
                        if let SyncOp::Signal { tasks, .. } = &mut m {
                            *tasks = Some(BlockTasks {
                                stride: t.stride + 1,
                                ..*t
                            });
                        }
                        Some(m)
                    }
                    other => Some(other.clone()),
                }),
            ];
            for (n, before) in ops.iter().enumerate() {
                for (name, f) in &mutations {
                    let Some(after) = (match f(before) {
                        None => Some(None),
                        Some(x) if &x != *before => Some(Some(x)),
                        Some(_) => None,
                    }) else {
                        continue;
                    };
                    let mut m = k.clone();
                    let mut i = n;
                    assert!(mutate_nth(&mut m.program.body, &mut i, f), "{what}");
                    let r = check_emitted(&m, &steps, &deps);
                    assert!(
                        r.is_err(),
                        "{what}: statement {n} ({}) {name} ({after:?}) was accepted",
                        before.describe()
                    );
                    refused += 1;
                }
            }
        }
    }
    assert!(refused >= 10, "only {refused} mutations tried");
}

/// `stencil_mixed_sizes`: in dataflow form the two 64-thread stencils pack four workgroups
/// into each 256-thread block, so the grid is one block per four of their workgroups, and
/// the second waits once per trip, for the union of its four sub-tasks' windows.
#[test]
fn packed_dataflow_steps_wait_once_per_trip_for_all_their_sub_tasks() {
    let l = load(
        &pipeline_fixtures()
            .into_iter()
            .find(|p| p.ends_with("stencil_mixed_sizes.json"))
            .expect("fixture"),
    );
    let group = &l.plan.groups[0];
    assert!(group.runs_dataflow());
    assert_eq!(
        group
            .step_layouts
            .iter()
            .map(|x| x.packed())
            .collect::<Vec<_>>(),
        vec![None, Some(4), Some(4)]
    );
    // 313 workgroups of 64 threads, four to a block: 79 blocks, as many as the scale's.
    assert_eq!(group.dataflow.blocks, 79);
    let k = &kernels(&l, SyncMode::Dataflow)[0];
    assert_eq!(k.shape.grid[0], 79);
    let spans: Vec<u32> = sync_ops(k)
        .iter()
        .filter_map(|o| match o {
            SyncOp::Wait { consumer, span, .. } => Some((*consumer, *span)),
            _ => None,
        })
        .filter(|&(c, _)| c == 2)
        .map(|(_, s)| s)
        .collect();
    assert!(
        !spans.is_empty() && spans.iter().all(|&s| s == 4),
        "{spans:?}"
    );
    let packs: Vec<u32> = sync_ops(k)
        .iter()
        .filter_map(|o| match o {
            SyncOp::Signal { tasks: Some(t), .. } => Some(t.pack),
            _ => None,
        })
        .collect();
    assert!(packs.contains(&4), "{packs:?}");
}

#[test]
fn a_dataflow_plan_the_validator_refuses_never_fuses() {
    // Claim a producer set too small for the real dependence: fusion must refuse the kernel
    // with a Fix, never hand back something to launch.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/stencil_halo4.json");
    let l = load(&path);
    let g = &l.plan.groups[0];
    assert!(g.runs_dataflow());
    let mut spec = g.spec_for(SyncMode::Dataflow);
    let deps = spec.dataflow.as_mut().expect("deps");
    // Keep the required sets, but emit from narrower ones: emission uses `dataflow` for both,
    // so widen what is required instead and check that the emitted windows do not cover it.
    let required: Vec<_> = deps
        .iter()
        .cloned()
        .map(|mut d| {
            d.producers = vyrescope::megakernel::tiles::ProducerSet::Window { lo: -2, hi: 2 };
            d
        })
        .collect();
    let k = fuse_group(&l.pipeline, &l.shapes, &spec).expect("fuse");
    let steps = steps_of(&l, 0);
    let e = check_emitted(&k, &steps, &required).expect_err("narrow waits accepted");
    assert!(e.to_string().contains("Fix:"), "{e}");
    assert!(e.message.contains("no wait covers it"), "{e}");
}

#[test]
fn instrumented_dataflow_kernels_built_for_their_grid_fit_it() {
    // A timeline run holds an instrumented cooperative kernel to `.minnctapersm` blocks per
    // SM when recording costs it residency (on an H200, hist_equalize and
    // reduce_normalize_2p20 went from 8 to 6 blocks per SM at 36-38 registers).
    let Some(ptxas) = crate::support::tools::ptxas("assembling instrumented fused kernels") else {
        return;
    };
    let caps = profiles::load("h200").expect("bundled h200");
    let mut checked = 0;
    for path in pipeline_fixtures() {
        let l = load(&path);
        for (g, k) in kernels(&l, SyncMode::Dataflow).iter().enumerate() {
            if !l.plan.groups[g].runs_dataflow() {
                continue;
            }
            let what = format!("{} group {g}", l.name);
            let spec = vyrescope::megakernel::timeline::fused_spec(k);
            let opts = EmitOptions {
                workgroup_size: k.shape.workgroup_size,
                ..EmitOptions::for_program(&k.program)
            };
            let t = vyrescope::emit::emit_timeline(&k.program, &opts, &spec)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let per_sm = u64::from(k.shape.grid[0]).div_ceil(u64::from(caps.sm_count)) as u32;
            let ptx = vyrescope::emit::with_min_blocks_per_sm(&t.ptx, per_sm);
            assert!(ptx.contains(&format!(".minnctapersm {per_sm}")), "{what}");
            let log = assemble(&ptxas, &ptx, 90, false).unwrap_or_else(|e| panic!("{what}: {e}"));
            let regs = vyrescope::emit::ptxas::parse_verbose(&log)
                .unwrap_or_else(|e| panic!("{what}: {e}"))
                .registers;
            let threads: u32 = k.shape.workgroup_size.iter().product();
            // Registers are given out per warp in steps of 8 per thread.
            let per_warp = regs.div_ceil(8) * 8 * 32;
            let fits = caps.regs_per_sm / (per_warp * threads.div_ceil(32));
            assert!(
                fits >= per_sm,
                "{what}: {regs} registers give {fits} blocks per SM, the grid needs {per_sm}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 4, "{checked} dataflow kernels checked");
}

/// The prefetch lets (`fN_preJ_T`) of every fused kernel, with whether each sits inside a
/// loop, in statement order.
fn prefetch_lets(list: &[Stmt], in_loop: bool, out: &mut Vec<(String, Expr, bool)>) {
    for s in list {
        match &s.kind {
            StmtKind::Let { name, value } => {
                let rest = name.split_once("_pre");
                let is_pre = rest.is_some_and(|(head, tail)| {
                    head.strip_prefix('f')
                        .is_some_and(|k| k.chars().all(|c| c.is_ascii_digit()))
                        && tail.split('_').all(|p| p.parse::<u32>().is_ok())
                });
                if is_pre {
                    out.push((name.clone(), value.clone(), in_loop));
                }
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                prefetch_lets(then, in_loop, out);
                prefetch_lets(otherwise, in_loop, out);
            }
            StmtKind::Block(b) => prefetch_lets(b, in_loop, out),
            StmtKind::Loop { body, .. } => prefetch_lets(body, true, out),
            _ => {}
        }
    }
}

/// Loads that cannot depend on the group's writes are issued ahead of a dataflow step's
/// waits: only buffers the fused kernel declares `read` (no step of the group writes them),
/// never inside the task loop, for each of the block's tasks (hist_equalize_shared's map step loads `x` for its four tasks before waiting for
/// the cdf, never `cdf` itself). The interpreter runs of every fixture
/// (`every_fixture_runs_like_its_steps_in_both_sync_forms`) check that the results do not
/// change.
#[test]
fn prefetched_loads_read_only_buffers_ahead_of_the_tasks() {
    let mut with = Vec::new();
    for path in pipeline_fixtures() {
        let l = load(&path);
        for sync in [SyncMode::Dataflow, SyncMode::Barrier] {
            for k in kernels(&l, sync) {
                let mut lets = Vec::new();
                prefetch_lets(&k.program.body, false, &mut lets);
                for (name, value, in_loop) in &lets {
                    assert!(!in_loop, "{}: {name} is inside a loop", k.program.name);
                    value.visit(&mut |e| {
                        if let Expr::Load { buffer, .. } = e {
                            let decl = k.program.buffer(buffer).expect("declared");
                            assert_eq!(
                                decl.access,
                                Access::Read,
                                "{}: {name} prefetches `{buffer}`, which the group writes",
                                k.program.name
                            );
                        }
                    });
                }
                if !lets.is_empty() {
                    with.push((k.program.name.clone(), sync, lets));
                }
            }
        }
    }
    let find = |kernel: &str, sync: SyncMode| {
        with.iter()
            .find(|(n, s, _)| n == kernel && *s == sync)
            .map(|(_, _, lets)| lets.clone())
            .unwrap_or_else(|| panic!("{kernel} ({}) prefetches nothing", sync.name()))
    };
    let map = find("hist_equalize_shared_fused_0_2", SyncMode::Dataflow);
    let names: Vec<&str> = map.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["f2_pre0_0", "f2_pre0_1", "f2_pre0_2", "f2_pre0_3"]);
    // The normalise step waits for the total and runs four tasks per block: their x ahead.
    let normalise = find("reduce_normalize_2p20_fused_0_2", SyncMode::Dataflow);
    let names: Vec<&str> = normalise.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["f2_pre0_0", "f2_pre0_1", "f2_pre0_2", "f2_pre0_3"]);
    // Only ahead of a wait: grid-barrier kernels have none.
    assert!(with.iter().all(|(_, s, _)| *s == SyncMode::Dataflow));
    // `no_prefetch` (what the runtime picks when the loads would cost residency) keeps
    // every load in its task, and the fixed wait in the task loop.
    let path = pipeline_fixtures()
        .into_iter()
        .find(|p| p.ends_with("hist_equalize_shared.json"))
        .expect("fixture");
    let l = load(&path);
    let mut spec = l.plan.groups[0].spec_for(SyncMode::Dataflow);
    spec.no_prefetch = true;
    let k = fuse_group(&l.pipeline, &l.shapes, &spec).expect("fuses");
    let mut lets = Vec::new();
    prefetch_lets(&k.program.body, false, &mut lets);
    assert!(lets.is_empty(), "{lets:?}");
    let mut waits = Vec::new();
    fixed_waits(&k.program.body, false, &mut waits);
    assert!(waits.iter().all(|&in_loop| in_loop), "{waits:?}");
}

/// hist_equalize_shared's map step runs four tasks per block after the cdf's broadcast: its
/// block loads the tasks' `x` first, waits once, then looks the four `cdf` entries up
/// together (`f2_post*`, after the wait: the cdf step wrote them), and the task loop only
/// stores. A load the wait guards never moves above it.
#[test]
fn loads_that_need_a_fixed_wait_follow_it_for_every_task() {
    let path = pipeline_fixtures()
        .into_iter()
        .find(|p| p.ends_with("hist_equalize_shared.json"))
        .expect("fixture");
    let l = load(&path);
    let k = kernels(&l, SyncMode::Dataflow).remove(0);
    let step = k
        .program
        .body
        .iter()
        .find_map(|s| match &s.kind {
            StmtKind::Block(b)
                if b.iter().any(
                    |s| matches!(&s.kind, StmtKind::Let { name, .. } if name.starts_with("f2_")),
                ) =>
            {
                Some(b)
            }
            _ => None,
        })
        .expect("step 2's block");
    let pos = |what: &dyn Fn(&Stmt) -> bool| step.iter().position(what);
    let is_let = |s: &Stmt, prefix: &str| matches!(&s.kind, StmtKind::Let { name, .. } if name.starts_with(prefix));
    let wait = pos(&|s| {
        let mut w = Vec::new();
        fixed_waits(std::slice::from_ref(s), false, &mut w);
        !w.is_empty()
    })
    .expect("the broadcast wait in the step's block");
    let last_pre = step.iter().rposition(|s| is_let(s, "f2_pre")).expect("pre");
    let first_post = pos(&|s| is_let(s, "f2_post")).expect("post");
    let task_loop = pos(&|s| matches!(s.kind, StmtKind::Loop { .. })).expect("loop");
    assert!(last_pre < wait && wait < first_post && first_post < task_loop);
    for s in &step[first_post..task_loop] {
        if let StmtKind::Let { value, .. } = &s.kind {
            let mut bufs = Vec::new();
            value.visit(&mut |e| {
                if let Expr::Load { buffer, .. } = e {
                    bufs.push(buffer.clone());
                }
            });
            assert_eq!(bufs, ["cdf"], "{value:?}");
        }
    }
    let mut inside = Vec::new();
    fixed_waits(&step[task_loop..], false, &mut inside);
    assert!(inside.is_empty(), "the task loop still waits");
}

/// Transitive reduction on stencil_pingpong (4 steps a -> b -> a -> b -> a, each a clamped
/// 3-point stencil): step 3 depends on step 0 (it overwrites `a`, which step 0 read) and on
/// step 2, but its wait on step 2 implies the one on step 0 (step 2 waited for step 1, which
/// waited for step 0). Before the reduction the plan has 4 waits, after it 3; the fused
/// kernel emits only those, and its schedule check proves all 4 dependences.
#[test]
fn stencil_pingpong_drops_the_waits_that_others_imply() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/stencil_pingpong.json");
    let l = load(&path);
    let g = &l.plan.groups[0];
    let waits: Vec<(usize, usize)> = g
        .dataflow
        .boundaries
        .iter()
        .flat_map(|b| b.waits.iter().map(|t| (t.from, t.to)))
        .collect();
    let implied: Vec<(usize, usize)> = g
        .dataflow
        .boundaries
        .iter()
        .flat_map(|b| b.implied.iter().map(|t| (t.from, t.to)))
        .collect();
    assert_eq!(waits.len() + implied.len(), 4, "{waits:?} {implied:?}");
    assert_eq!(waits, vec![(0, 1), (1, 2), (2, 3)]);
    assert_eq!(implied, vec![(0, 3)]);
    let spec = g.spec_for(SyncMode::Dataflow);
    assert_eq!(spec.implied.len(), 1);
    let k = fuse_group(&l.pipeline, &l.shapes, &spec).expect("fuses");
    // Only the kept waits are emitted: each a window plus the boundary workgroup 0.
    let emitted = sync_ops(&k)
        .iter()
        .filter(|op| matches!(op, SyncOp::Wait { .. }))
        .count();
    assert_eq!(emitted, 6, "3 waits, each a window and a boundary flag");
    // Without the kept wait of step 3 on step 2, the schedule no longer proves 0 -> 3.
    let steps = steps_of(&l, 0);
    let required: Vec<_> = spec
        .dataflow
        .clone()
        .unwrap_or_default()
        .into_iter()
        .chain(spec.implied.clone())
        .collect();
    let mut s = check_emitted(&k, &steps, &required).expect("valid");
    s.waits.retain(|w| !(w.consumer == 3 && w.producer == 2));
    let e = vyrescope::megakernel::validate::validate(&s, &required).expect_err("refused");
    assert!(e.message.contains("no wait covers"), "{e}");
}
