//! Workgroup-size dependence (issue 36): the `L013` diagnostic against what the reference
//! interpreter says on every fixture, and every workgroup-size suggestion keeping results.

use std::path::Path;

use vyrescope::diagnostics::wg_dependence::dependence;
use vyrescope::harness::preserve::{step_preserves, Preservation};
use vyrescope::inputs::{self, LaunchShape};

use crate::support::cli;
use crate::support::fixtures::fixtures;

/// Sizes to try instead of `own`, of the same dimensionality.
fn other_sizes(own: [u32; 3]) -> Vec<[u32; 3]> {
    let c: Vec<[u32; 3]> = if own[1] == 1 && own[2] == 1 {
        vec![[32, 1, 1], [64, 1, 1], [128, 1, 1], [512, 1, 1]]
    } else if own[2] == 1 {
        vec![[8, 8, 1], [32, 8, 1], [32, 4, 1]]
    } else {
        vec![[4, 4, 4], [8, 8, 1], [2, 4, 8]]
    };
    c.into_iter().filter(|w| *w != own).collect()
}

/// The same threads along each axis at `wg` as `own` covers: what `run.elements` would give,
/// so that a fixture whose `run` section fixes the grid is judged on its body alone.
fn covering(own: &LaunchShape, wg: [u32; 3]) -> LaunchShape {
    let mut grid = [1u32; 3];
    for i in 0..3 {
        let t = u64::from(own.grid[i]) * u64::from(own.workgroup_size[i]);
        grid[i] = t.div_ceil(u64::from(wg[i])) as u32;
    }
    LaunchShape {
        workgroup_size: wg,
        grid,
    }
}

/// `L013` fires on a fixture exactly when the reference interpreter finds a size, over the
/// same threads and inputs, whose outputs differ from the own size's: reduce_sum_f32 and the
/// other size-bound fixtures get it, every size-independent fixture does not (no false alarm).
#[test]
fn l013_matches_the_reference_on_every_fixture() {
    let mut flagged = Vec::new();
    for (path, program) in fixtures() {
        let name = program.name.clone();
        let prepared = inputs::prepare(&program, path.parent().unwrap(), None, None)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut differs = None;
        let mut checked = 0;
        for wg in other_sizes(program.workgroup_size) {
            let at = covering(&prepared.shape, wg);
            match step_preserves(&program, &prepared.buffers, &prepared.shape, &at) {
                Preservation::Preserved => checked += 1,
                Preservation::Changed { first, .. } => {
                    differs = Some(format!("{wg:?}: {first}"));
                    break;
                }
                Preservation::NotChecked { why } => panic!("{name} at {wg:?}: {why}"),
            }
        }
        let diag = dependence(&program);
        match (&diag, &differs) {
            (Some(_), Some(_)) => flagged.push(name.clone()),
            (None, None) => assert!(checked >= 2, "{name}: only {checked} sizes compared"),
            (Some(d), None) => panic!("{name}: false alarm: {d}"),
            (None, Some(why)) => panic!("{name}: size-dependent ({why}) but no L013"),
        }
    }
    assert!(
        flagged.contains(&"reduce_sum_f32".to_string()),
        "{flagged:?}"
    );
    // Most fixtures are size-independent: the rule is not simply always on.
    assert!(flagged.len() * 2 < fixtures().len(), "{flagged:?}");
}

#[test]
fn reduce_sum_gets_l013_naming_its_nodes() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/reduce_sum_f32.json");
    let p = vyrescope::ir::load_program(&path).unwrap();
    let d = dependence(&p).expect("reduce_sum_f32 is written for 256 threads");
    assert_eq!(d.code, "L013");
    assert_eq!(d.node.as_deref(), Some("body[2]"));
    for node in ["body[2]", "body[4].body[1]", "body[5].then[0]"] {
        assert!(d.message.contains(node), "{node}: {}", d.message);
    }
    assert!(
        d.message.contains("`tile` has 256 elements"),
        "{}",
        d.message
    );
    assert!(d.message.contains("literal 128"), "{}", d.message);
}

/// `check --workgroup` at a size that changes reduce_sum's results is not "ok" any more; at
/// a size that keeps saxpy's it is.
#[test]
fn check_at_another_size_compares_results() {
    let (code, out, _) = cli::output(cli::in_root().args([
        "check",
        "fixtures/programs/reduce_sum_f32.json",
        "--workgroup",
        "64,1,1",
    ]));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("INVALID"), "{out}");
    assert!(out.contains("error[L014]"), "{out}");
    assert!(out.contains("changes results: partial["), "{out}");
    assert!(out.contains("warning[L013]"), "{out}");
    let (code, out, _) = cli::output(cli::in_root().args([
        "check",
        "fixtures/programs/saxpy_f32.json",
        "--workgroup",
        "64,1,1",
    ]));
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("L014") && !out.contains("L013"), "{out}");
    // A fixed run grid is named as the reason.
    let (_, out, _) = cli::output(cli::in_root().args([
        "check",
        "fixtures/programs/stencil5_f32.json",
        "--workgroup",
        "32,8,1",
    ]));
    assert!(out.contains("fixes the grid at 32x32x1"), "{out}");
}

/// The occupancy suggestion never names a size that changes the results: reduce_sum_f32
/// used to be told 128.
#[test]
fn occupancy_suggests_only_result_preserving_sizes() {
    let (code, out, err) = cli::output(cli::in_root().args([
        "occupancy",
        "fixtures/programs/reduce_sum_f32.json",
        "--json",
    ]));
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let sg = &v["suggestion"];
    assert_eq!(sg["block_size"], 256, "{sg}");
    let refused = sg["refused"].as_array().unwrap();
    assert!(!refused.is_empty(), "{sg}");
    for r in refused {
        assert!(
            r["why"]
                .as_str()
                .unwrap()
                .starts_with("changes results: partial["),
            "{r}"
        );
    }
    assert!(v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["code"] == "L013"));
    // Text form: the suggestion and the refused sizes with their first difference.
    let (_, out, _) =
        cli::output(cli::in_root().args(["occupancy", "fixtures/programs/reduce_sum_f32.json"]));
    assert!(out.contains("suggested: 256"), "{out}");
    assert!(
        out.contains("not suggested: 128 (changes results: partial["),
        "{out}"
    );
    // A size-independent Program keeps the usual pick.
    let (_, out, _) =
        cli::output(cli::in_root().args(["occupancy", "fixtures/programs/vadd_f32.json"]));
    assert!(out.contains("suggested: 128"), "{out}");
    assert!(!out.contains("not suggested"), "{out}");
}

/// `diff @wg=` says when a side computes something else.
#[test]
fn diff_at_another_size_says_it_changes_results() {
    let (code, out, err) = cli::output(cli::in_root().args([
        "diff",
        "fixtures/programs/reduce_sum_f32.json@wg=128",
        "fixtures/programs/reduce_sum_f32.json",
    ]));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "results: old (fixtures/programs/reduce_sum_f32.json@wg=128) changes results: partial["
        ),
        "{out}"
    );
    let (_, out, _) = cli::output(cli::in_root().args([
        "diff",
        "fixtures/programs/saxpy_f32.json@wg=64",
        "fixtures/programs/saxpy_f32.json",
        "--json",
    ]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["results"]["old"]["kind"], "preserved", "{}", v["results"]);
    assert!(v["results"]["new"].is_null());
}

/// The inspector: the Occupancy tab suggests only sizes that keep the results, `[` to a
/// size that changes them is marked at once (status bar, `L014` in Diagnostics), and `t`
/// without a GPU runs the offline sweep, refusing the same sizes.
#[test]
fn inspector_marks_result_changing_sizes() {
    use crate::tui_helpers as helpers;
    use vyrescope::tui::action::Command;
    let (mut a, _hl) = helpers::app(&[helpers::fixture("reduce_sum_f32.json")], 120, 40);
    let occ = a
        .code
        .emission
        .as_ref()
        .and_then(|e| e.occupancy.as_ref().ok())
        .expect("an occupancy view")
        .clone();
    let head = occ.headroom.join("\n");
    assert!(head.contains("suggested block 256"), "{head}");
    assert!(
        head.contains("not suggested: 128 (changes results: partial["),
        "{head}"
    );
    let diags =
        |a: &vyrescope::tui::app::App| a.code.emission.as_ref().unwrap().diagnostics.clone();
    assert!(diags(&a).iter().any(|d| d.code == "L013"));
    assert!(!diags(&a).iter().any(|d| d.code == "L014"));
    helpers::press(&mut a, &[Command::WgHalve]);
    assert_eq!(a.workgroup(), [128, 1, 1]);
    let d = diags(&a);
    let l014 = d.iter().find(|d| d.code == "L014").expect("L014 at 128");
    assert!(
        l014.message.contains("changes results: partial["),
        "{}",
        l014.message
    );
    let msg = a.screen.message.clone().map(|m| m.1).unwrap_or_default();
    assert!(msg.contains("changes results"), "{msg}");
    // Back to the own size: nothing to say.
    helpers::press(&mut a, &[Command::WgDouble]);
    assert!(!diags(&a).iter().any(|d| d.code == "L014"));
    // `t` without a GPU: the offline sweep; the best is a size that keeps the results.
    helpers::press(&mut a, &[Command::Tune]);
    let rows = a.jobs.session.tune.clone().expect("a sweep").expect("rows");
    let best: Vec<_> = rows.iter().filter(|r| r.note == "best").collect();
    assert_eq!(best.len(), 1, "{rows:?}");
    assert_eq!(best[0].workgroup, [256, 1, 1]);
    let r128 = rows.iter().find(|r| r.workgroup == [128, 1, 1]).unwrap();
    assert!(
        r128.note.starts_with("changes results: partial["),
        "{}",
        r128.note
    );
    assert!(
        rows.iter().all(|r| r.median_ms.is_none()),
        "nothing is timed"
    );
}
