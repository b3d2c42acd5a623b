//! `vyrescope diff OLD NEW [--level ir|ptx|sass] [--sm N] [--device D] [--json]`

use crate::diff::{self, Comparison, Level, StatementFigures, StatementRow, Totals};
use crate::util::Problem;

/// Compare two lowerings statement by statement.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Each side is a Program file, optionally with variant options after `@`: wg=N (or wg=XxY, wg=X,Y,Z), sm=N, unroll=on|off, version-bounds. Variants of one Program line up by node id; two different files through a diff of their printed IR.\n\nExamples:\n  vyrescope diff fixtures/programs/saxpy_f32.json@wg=64 fixtures/programs/saxpy_f32.json\n  vyrescope diff fixtures/programs/stencil5_f32.json@sm=80 fixtures/programs/stencil5_f32.json --level sass\n  vyrescope diff fixtures/programs/matmul_tiled_f32.json@unroll=off fixtures/programs/matmul_tiled_f32.json --json\n\nSASS figures need ptxas and nvdisasm (scripts/install-ptxas.sh, scripts/install-nvdisasm.sh); without them the IR and PTX figures are shown and the SASS ones are `-` (null in JSON)."
)]
pub struct Args {
    /// The old side: FILE[@OPTION]...
    pub old: String,
    /// The new side: FILE[@OPTION]...
    pub new: String,
    /// Level of the line diff.
    #[arg(long, value_enum, default_value_t = LevelArg::Ptx)]
    pub level: LevelArg,
    /// Target SM of both sides unless a side says `@sm=`.
    #[arg(long, default_value_t = 90)]
    pub sm: u32,
    /// Device profile for the occupancy totals (default h200).
    #[arg(long)]
    pub device: Option<String>,
    /// Print JSON {"old","new","statements":[{"node","old","new"}],"totals","hunks"}.
    #[arg(long)]
    pub json: bool,
    /// Leave out the SASS figures (no ptxas, no nvdisasm): on Programs of thousands of
    /// statements those tools take most of the time.
    #[arg(long)]
    pub no_sass: bool,
}

/// `--level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LevelArg {
    /// The printed IR.
    Ir,
    /// The PTX.
    Ptx,
    /// The SASS.
    Sass,
}

/// Runs `diff`.
pub fn run(a: &Args) -> super::Outcome {
    let (caps, _) = super::occupancy::resolve_device(a.device.as_deref())?;
    let level = match a.level {
        LevelArg::Ir => Level::Ir,
        LevelArg::Ptx => Level::Ptx,
        LevelArg::Sass => Level::Sass,
    };
    for spec in [&a.old, &a.new] {
        let (file, _) = diff::variant::split(spec);
        super::refuse_pipeline(
            std::path::Path::new(file),
            "diff",
            "diff two lowerings of one step's Program (its file in the pipeline's `programs/` folder, e.g. `STEP.json@wg=64 STEP.json`); for the pipeline's fused kernels see `vyrescope emit PIPELINE` and `vyrescope plan PIPELINE`",
        )?;
    }
    let sass = if a.no_sass {
        if level == Level::Sass {
            return Err(Problem::new(
                "diff: --level sass needs the SASS that --no-sass leaves out",
                "drop --no-sass, or diff at --level ptx or --level ir",
            ));
        }
        diff::SassFigures::Skip
    } else {
        diff::SassFigures::IfAvailable
    };
    let c = diff::run(&a.old, &a.new, level, a.sm, sass, &caps)?;
    let results = [results_of(&a.old), results_of(&a.new)];
    let out = if a.json {
        let mut v = match serde_json::to_value(&c) {
            Ok(v) => v,
            Err(e) => return Err(Problem::bug(e)),
        };
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "results".into(),
                serde_json::json!({"old": results[0], "new": results[1]}),
            );
        }
        match serde_json::to_string_pretty(&v) {
            Ok(s) => s + "\n",
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        let mut t = text(&c);
        for (side, label, r) in [("old", &c.old, &results[0]), ("new", &c.new, &results[1])] {
            if let Some(r) = r.as_ref().filter(|r| !r.is_preserved()) {
                t.push_str(&format!(
                    "\nresults: {side} ({label}) {} (against the Program's own workgroup size on the reference interpreter)\n",
                    r.text()
                ));
            }
        }
        t
    };
    super::write_stdout(&crate::util::terminal_safe(&out));
    Ok(0)
}

/// For a side with `wg=` other than its Program's own size: do its outputs stay the same
/// (`harness::preserve`)? `None` for a side at its own size (nothing to compare).
fn results_of(spec: &str) -> Option<crate::harness::preserve::Preservation> {
    let v = diff::variant::Variant::parse(spec).ok()?;
    let wg = v.workgroup?;
    let program = crate::validate::load(&v.file).program?;
    (wg != program.workgroup_size).then(|| {
        let inputs = crate::harness::preserve::Inputs::of_file(&v.file, None);
        crate::harness::preserve::preserves(&program, &inputs, wg)
    })
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".to_string(), |v| v.to_string())
}

/// `old -> new (+d)` for two counts; `=` when equal.
fn change(o: Option<u32>, n: Option<u32>) -> String {
    match (o, n) {
        (Some(o), Some(n)) if o == n => format!("{o} ="),
        (None, None) => "-".to_string(),
        (Some(o), Some(n)) => format!("{o} -> {n} ({:+})", i64::from(n) - i64::from(o)),
        (o, n) => format!("{} -> {}", opt(o), opt(n)),
    }
}

fn side_label(t: &Totals) -> String {
    let note = crate::emit::ptxas::arch_note(t.sm).map_or(String::new(), |n| format!(" ({n})"));
    format!(
        "sm_{}{note}, workgroup {}x{}x{}",
        t.sm, t.workgroup[0], t.workgroup[1], t.workgroup[2]
    )
}

/// The text report: sides, per-statement table, totals, then the line diff.
pub fn text(c: &Comparison) -> String {
    let (to, tn) = (&c.totals.old, &c.totals.new);
    let mut s = format!(
        "old: {} ({})\nnew: {} ({})\nstatements aligned by {}\n\n",
        c.old,
        side_label(to),
        c.new,
        side_label(tn),
        c.aligned_by.replace('_', " ")
    );
    let label = |r: &StatementRow| match (&r.old, &r.new) {
        (Some(o), Some(n)) if o.node != n.node => format!("{} -> {}", o.node, n.node),
        (None, Some(_)) => format!("+ {}", r.node),
        (Some(_), None) => format!("- {}", r.node),
        _ => r.node.clone(),
    };
    // The first column is as wide as its widest label, renamed pairs ("a -> b") included.
    let w = c
        .statements
        .iter()
        .map(|r| label(r).chars().count())
        .max()
        .unwrap_or(0)
        .max("statement".len());
    s.push_str(&format!(
        "{:<w$}  {:<16}  {:<16}  {:<16}  {}\n",
        "statement", "ptx", "sass", "sass memory", "live peak"
    ));
    let field = |f: &Option<StatementFigures>, get: &dyn Fn(&StatementFigures) -> Option<u32>| {
        f.as_ref().and_then(get)
    };
    for r in &c.statements {
        let name = label(r);
        s.push_str(&format!(
            "{name:<w$}  {:<16}  {:<16}  {:<16}  {}\n",
            change(
                field(&r.old, &|f| Some(f.ptx)),
                field(&r.new, &|f| Some(f.ptx))
            ),
            change(field(&r.old, &|f| f.sass), field(&r.new, &|f| f.sass)),
            change(
                field(&r.old, &|f| f.mix.map(|m| m.memory)),
                field(&r.new, &|f| f.mix.map(|m| m.memory))
            ),
            change(
                field(&r.old, &|f| f.peak_live),
                field(&r.new, &|f| f.peak_live)
            ),
        ));
    }
    let pct = |t: &Totals| t.occupancy_pct.map(|p| format!("{p:.0}%"));
    s.push_str(&format!(
        "\ntotals: registers {}, spill bytes {}, shared bytes {}, ptx instructions {}, sass instructions {}, live peak {}, occupancy on {} {} -> {}\n",
        change(to.registers, tn.registers),
        change(to.spill_bytes, tn.spill_bytes),
        change(to.shared_bytes, tn.shared_bytes),
        change(Some(to.ptx_instructions), Some(tn.ptx_instructions)),
        change(to.sass_instructions, tn.sass_instructions),
        change(to.peak_live, tn.peak_live),
        c.device,
        opt(pct(to)),
        opt(pct(tn)),
    ));
    if to.estimated || tn.estimated {
        s.push_str(
            "  (registers, shared bytes and occupancy estimated from the PTX: ptxas or nvdisasm not found; scripts/install-ptxas.sh and scripts/install-nvdisasm.sh give exact figures)\n",
        );
    }
    let level = match c.level {
        Level::Ir => "IR",
        Level::Ptx => "PTX",
        Level::Sass => "SASS",
    };
    if c.hunks.is_empty() {
        s.push_str(&format!("\n{level}: no difference\n"));
    } else {
        s.push_str(&format!(
            "\n--- {} ({level})\n+++ {} ({level})\n",
            c.old, c.new
        ));
        s.push_str(&diff::hunks::text(&c.hunks));
    }
    s
}
