//! Compile diagnostics: ptxas and driver JIT logs parsed into messages, each PTX line mapped
//! through the emitter's [`SourceMap`] to the IR statement that produced it.
//!
//! Log lines look like (ptxas command line, and the driver's JIT error log):
//! ```text
//! ptxas /tmp/k.ptx, line 42; error   : Arguments mismatch for instruction 'mov'
//! ptxas application ptx input, line 42; error   : Unknown symbol 'x'
//! ptxas error   : Entry function 'k' uses too much shared data (0xc004 bytes, 0xc000 max)
//! ptxas warning : Registers are spilled to local memory in function 'k', 8 bytes spill stores, 8 bytes spill loads
//! ptxas fatal   : Ptx assembly aborted due to errors
//! ```
//! Codes: `C001` error, `C002` warning, `C003` fatal, `C004` other log lines of a failed JIT.

use super::{Diagnostic, Severity};
use crate::emit::ptxas::OfflineResources;
use crate::emit::SourceMap;
use crate::occupancy::KernelResources;

/// The occupancy inputs in a `ptxas -v` report, for when no live driver can be asked.
/// Local memory per thread is the larger of the stack frame and the spill stores (spills
/// live in local memory, usually inside the frame); the per-block thread limit is unknown
/// offline (0: no limit beyond the device's).
pub fn resources_from_ptxas(o: &OfflineResources) -> KernelResources {
    KernelResources {
        regs_per_thread: o.registers,
        static_smem_bytes: o.shared_bytes,
        local_bytes: o.stack_frame.max(o.spill_stores),
        const_bytes: o.constant_bytes,
        max_threads_per_block: 0,
    }
}

/// One parsed log message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogMessage {
    /// `error`, `warning` or `fatal` (fatal is an error that stops assembly).
    pub kind: LogKind,
    /// The input file as the log names it (`/tmp/k.ptx`, `application ptx input`).
    pub file: Option<String>,
    /// 1-based PTX line.
    pub line: Option<u32>,
    /// The message text.
    pub message: String,
}

/// Kind of a log message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// `error`
    Error,
    /// `warning`
    Warning,
    /// `fatal`
    Fatal,
    /// `info` (resource usage, not a diagnostic)
    Info,
}

/// Parses every `ptxas ...` message of a log; other lines are returned as `None` entries in
/// [`parse_log_lines`] and skipped here.
pub fn parse_log(log: &str) -> Vec<LogMessage> {
    parse_log_lines(log).into_iter().flatten().collect()
}

/// Parses each line of a log: `Some` for a ptxas message, `None` for anything else.
pub fn parse_log_lines(log: &str) -> Vec<Option<LogMessage>> {
    log.lines().map(parse_line).collect()
}

fn parse_line(raw: &str) -> Option<LogMessage> {
    let line = raw.trim();
    let rest = line.strip_prefix("ptxas")?.trim_start();
    // Find the severity keyword followed by optional spaces and a colon.
    let mut best: Option<(usize, LogKind, usize)> = None;
    for (word, kind) in [
        ("error", LogKind::Error),
        ("warning", LogKind::Warning),
        ("fatal", LogKind::Fatal),
        ("info", LogKind::Info),
    ] {
        let mut from = 0;
        while let Some(pos) = rest[from..].find(word) {
            let at = from + pos;
            let after = &rest[at + word.len()..];
            let trimmed = after.trim_start();
            let at_word_start = at == 0
                || rest[..at]
                    .chars()
                    .last()
                    .is_some_and(|c| c == ' ' || c == ';' || c == ',');
            if at_word_start && trimmed.starts_with(':') {
                let msg_start = at + word.len() + (after.len() - trimmed.len()) + 1;
                if best.is_none_or(|(b, _, _)| at < b) {
                    best = Some((at, kind, msg_start));
                }
                break;
            }
            from = at + word.len();
        }
    }
    let (at, kind, msg_start) = best?;
    let head = rest[..at].trim().trim_end_matches(';').trim();
    let message = rest[msg_start..].trim().to_string();
    let (file, line_no) = split_location(head);
    // Some drivers put the location after the severity: "error   : ... line 12; ...".
    let line_no = line_no.or_else(|| find_line(&message));
    Some(LogMessage {
        kind,
        file,
        line: line_no,
        message,
    })
}

/// `"/tmp/k.ptx, line 42"` -> (file, line).
fn split_location(head: &str) -> (Option<String>, Option<u32>) {
    if head.is_empty() {
        return (None, None);
    }
    match head.rsplit_once(", line ") {
        Some((file, n)) => (Some(file.trim().to_string()), n.trim().parse().ok()),
        None => (Some(head.to_string()), find_line(head)),
    }
}

/// The number after `line ` in `s`, if any.
fn find_line(s: &str) -> Option<u32> {
    let pos = s.find("line ")?;
    let digits: String = s[pos + 5..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The IR node whose PTX lines contain `line` (`prologue`/`epilogue` included).
pub fn node_for_line(map: &SourceMap, line: u32) -> Option<&str> {
    map.entries
        .iter()
        .find(|e| e.lines.iter().any(|r| r[0] <= line && line <= r[1]))
        .map(|e| e.node.as_str())
}

fn is_statement_node(node: &str) -> bool {
    node.starts_with("body")
}

/// Diagnostics for a ptxas or JIT log. `ptx` (the module text) lets messages quote the
/// failing instruction. When the log reports failure but no message could be parsed, the raw
/// log lines become `C004` errors so nothing is lost.
pub fn compile_diagnostics(log: &str, map: &SourceMap, ptx: Option<&str>) -> Vec<Diagnostic> {
    let ptx_lines: Vec<&str> = ptx.map(|p| p.lines().collect()).unwrap_or_default();
    let parsed = parse_log_lines(log);
    let mut out = Vec::new();
    for m in parsed.iter().flatten() {
        let (severity, code) = match m.kind {
            LogKind::Error => (Severity::Error, "C001"),
            LogKind::Warning => (Severity::Warning, "C002"),
            LogKind::Fatal => (Severity::Error, "C003"),
            LogKind::Info => continue,
        };
        let mapped = m.line.and_then(|l| node_for_line(map, l));
        let node = mapped.filter(|n| is_statement_node(n)).map(str::to_string);
        let mut message = format!("ptxas {}", m.message);
        if let Some(l) = m.line {
            message.push_str(&format!(" (PTX line {l}"));
            if let Some(text) = ptx_lines.get((l as usize).wrapping_sub(1)) {
                message.push_str(&format!(": `{}`", text.trim()));
            }
            if let Some(n) = mapped.filter(|n| !is_statement_node(n)) {
                message.push_str(&format!(", in the kernel {n}"));
            }
            message.push(')');
        }
        let fix = fix_for(m, node.as_deref());
        out.push(Diagnostic::new(
            severity,
            code,
            node.map(crate::ir::NodeId::from),
            message,
            fix,
        ));
    }
    if out.is_empty() && !log.trim().is_empty() {
        let failed = log.to_ascii_lowercase().contains("error");
        if failed {
            for l in log.lines().filter(|l| !l.trim().is_empty()) {
                out.push(Diagnostic::error(
                    "C004",
                    None,
                    format!("JIT: {}", l.trim()),
                    "this is an emitter bug if the Program passed `vyrescope check`; report it with the PTX (`vyrescope emit FILE`)",
                ));
            }
        }
    }
    out
}

fn fix_for(m: &LogMessage, node: Option<&str>) -> String {
    let text = m.message.to_ascii_lowercase();
    if text.contains("too much shared data") {
        return "shrink the workgroup buffers: static shared memory is limited to 48 KiB per block"
            .into();
    }
    if text.contains("spilled") || text.contains("spill") {
        return "reduce live values (fewer simultaneous temporaries, smaller unrolled loops) or use a smaller workgroup so more registers per thread are allowed".into();
    }
    if m.kind == LogKind::Fatal {
        return "see the errors above; ptxas stops at the first failing instruction".into();
    }
    match node {
        Some(n) => format!(
            "the PTX emitted for {n} was rejected: if the Program passed `vyrescope check`, this is an emitter bug; report it with `vyrescope emit FILE`"
        ),
        None => "if the Program passed `vyrescope check`, this is an emitter bug; report it with `vyrescope emit FILE`".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::MapEntry;

    #[test]
    fn ptxas_report_becomes_occupancy_inputs() {
        let mut o = OfflineResources {
            registers: 40,
            spill_stores: 24,
            stack_frame: 16,
            shared_bytes: 4096,
            constant_bytes: 380,
            ..OfflineResources::default()
        };
        let r = resources_from_ptxas(&o);
        assert_eq!(
            (
                r.regs_per_thread,
                r.static_smem_bytes,
                r.local_bytes,
                r.const_bytes
            ),
            (40, 4096, 24, 380)
        );
        o.stack_frame = 64;
        assert_eq!(resources_from_ptxas(&o).local_bytes, 64);
        assert_eq!(resources_from_ptxas(&o).max_threads_per_block, 0);
    }

    fn map() -> SourceMap {
        SourceMap {
            entries: vec![
                MapEntry {
                    node: "prologue".into(),
                    lines: vec![[1, 10]],
                },
                MapEntry {
                    node: "body[0]".into(),
                    lines: vec![[11, 14]],
                },
                MapEntry {
                    node: "body[1].then[0]".into(),
                    lines: vec![[15, 20], [30, 31]],
                },
                MapEntry {
                    node: "epilogue".into(),
                    lines: vec![[32, 33]],
                },
            ],
        }
    }

    #[test]
    fn parses_every_ptxas_message_shape() {
        let log = "ptxas /tmp/k.ptx, line 17; error   : Arguments mismatch for instruction 'mov'\n\
                   ptxas application ptx input, line 31; warning : Unused variable\n\
                   ptxas error   : Entry function 'k' uses too much shared data (0xc004 bytes, 0xc000 max)\n\
                   ptxas error   : Illegal value at line 12; expected register\n\
                   ptxas info    : Used 14 registers, 380 bytes cmem[0]\n\
                   ptxas fatal   : Ptx assembly aborted due to errors\n\
                   something else";
        let m = parse_log(log);
        assert_eq!(m.len(), 6);
        assert_eq!((m[0].kind, m[0].line), (LogKind::Error, Some(17)));
        assert_eq!(m[0].file.as_deref(), Some("/tmp/k.ptx"));
        assert_eq!(m[0].message, "Arguments mismatch for instruction 'mov'");
        assert_eq!(m[1].file.as_deref(), Some("application ptx input"));
        assert_eq!((m[1].kind, m[1].line), (LogKind::Warning, Some(31)));
        assert_eq!((m[2].file.clone(), m[2].line), (None, None));
        assert_eq!(m[3].line, Some(12));
        assert_eq!(m[4].kind, LogKind::Info);
        assert_eq!(m[5].kind, LogKind::Fatal);
    }

    #[test]
    fn maps_ptx_lines_to_ir_nodes() {
        let ptx: String = (1..=33).map(|i| format!("  insn{i};\n")).collect();
        let log = "ptxas /tmp/k.ptx, line 30; error   : Unknown symbol 'x'\n\
                   ptxas /tmp/k.ptx, line 5; error   : bad param\n\
                   ptxas fatal   : Ptx assembly aborted due to errors\n";
        let d = compile_diagnostics(log, &map(), Some(&ptx));
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].node.as_deref(), Some("body[1].then[0]"));
        assert_eq!(d[0].code, "C001");
        assert!(d[0].message.contains("`insn30;`"), "{}", d[0].message);
        assert_eq!(d[1].node, None);
        assert!(d[1].message.contains("in the kernel prologue"));
        assert_eq!((d[2].code, d[2].severity), ("C003", Severity::Error));
        assert_eq!(node_for_line(&map(), 12), Some("body[0]"));
        assert_eq!(node_for_line(&map(), 25), None);
    }

    #[test]
    fn spill_warning_and_unparsed_failures() {
        let d = compile_diagnostics(
            "ptxas warning : Registers are spilled to local memory in function 'k', 8 bytes spill stores, 8 bytes spill loads",
            &map(),
            None,
        );
        assert_eq!((d[0].code, d[0].severity), ("C002", Severity::Warning));
        assert!(d[0].fix.contains("registers"));
        let d = compile_diagnostics("CUDA_ERROR_INVALID_PTX: error in module\n", &map(), None);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, "C004");
        assert!(compile_diagnostics("ptxas info    : Used 8 registers", &map(), None).is_empty());
    }
}
