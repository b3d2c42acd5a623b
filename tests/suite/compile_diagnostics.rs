//! Compile diagnostics end to end: a real ptxas rejects a broken instruction of an emitted
//! kernel, and the error lands on the IR statement that produced that instruction.

use vyrescope::diagnostics::compile::{compile_diagnostics, parse_log};
use vyrescope::diagnostics::Severity;
use vyrescope::emit::{emit, ptxas, EmitOptions};
use vyrescope::ir::load_program;

#[test]
fn ptxas_error_maps_to_the_ir_statement() {
    let Some(bin) = crate::support::tools::ptxas("the ptxas round trip") else {
        return;
    };
    let root = env!("CARGO_MANIFEST_DIR");
    let p = load_program(std::path::Path::new(&format!(
        "{root}/fixtures/programs/vadd_f32.json"
    )))
    .unwrap();
    let k = emit(&p, &EmitOptions::for_program(&p)).unwrap();
    // The add of `c[i] = a[i] + b[i]` (body[1].then[0]) gets a 64-bit operand.
    let entry = k
        .source_map
        .entries
        .iter()
        .find(|e| e.node == "body[1].then[0]")
        .unwrap();
    let mut lines: Vec<String> = k.ptx.lines().map(str::to_string).collect();
    let [lo, hi] = entry.lines[0];
    let target = (lo..=hi)
        .find(|&l| lines[l as usize - 1].contains("add.rn.f32"))
        .expect("the add is in the statement's lines");
    let line = &mut lines[target as usize - 1];
    let last = line.rfind('%').unwrap();
    line.replace_range(last.., "%rd1;");
    let broken = lines.join("\n") + "\n";
    let log = match ptxas::assemble(&bin, &broken, 90, false) {
        Err(ptxas::PtxasError::Rejected { log, .. }) => log,
        other => panic!("ptxas accepted the broken PTX: {other:?}"),
    };
    assert!(
        parse_log(&log).iter().any(|m| m.line == Some(target)),
        "{log}"
    );
    let d = compile_diagnostics(&log, &k.source_map, Some(&broken));
    let err = d
        .iter()
        .find(|d| d.code == "C001")
        .unwrap_or_else(|| panic!("{d:#?}\n{log}"));
    assert_eq!(err.severity, Severity::Error);
    assert_eq!(err.node.as_deref(), Some("body[1].then[0]"));
    assert!(
        err.message.contains(&format!("PTX line {target}")),
        "{}",
        err.message
    );
    assert!(err.message.contains("%rd1"), "{}", err.message);
    assert!(
        d.iter().any(|d| d.code == "C003"),
        "ptxas ends with a fatal line: {log}"
    );
}
