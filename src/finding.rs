//! The one finding type every check reports in (validator, launch, compile and performance
//! rules): [`Diagnostic`] with its [`Severity`], keyed by node id. It sits at the bottom of the
//! module graph (it imports only `ir`) so that every layer can speak it; the rule sets that
//! produce findings beyond the validator's are `crate::diagnostics`, five layers up.

use serde::Serialize;

use crate::ir::NodeId;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The Program (or launch) cannot run.
    Error,
    /// It runs, but probably not as intended or not fast.
    Warning,
    /// Worth knowing.
    Info,
}

/// One finding, with where it is and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Severity.
    pub severity: Severity,
    /// Stable rule code (`V...` validator, `L...` launch, `C...` compile, `P...` performance).
    pub code: &'static str,
    /// Statement node id; `None` for the Program as a whole (serialized as `"program"`).
    #[serde(serialize_with = "ser_node")]
    pub node: Option<NodeId>,
    /// What is wrong.
    pub message: String,
    /// How to fix it (without the `Fix: ` prefix).
    pub fix: String,
}

impl Diagnostic {
    /// A diagnostic of any severity.
    pub fn new(
        severity: Severity,
        code: &'static str,
        node: Option<NodeId>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Diagnostic {
            severity,
            code,
            node,
            message: message.into(),
            fix: fix.into(),
        }
    }

    /// An error.
    pub fn error(
        code: &'static str,
        node: Option<NodeId>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::new(Severity::Error, code, node, message, fix)
    }

    /// A warning.
    pub fn warning(
        code: &'static str,
        node: Option<NodeId>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::new(Severity::Warning, code, node, message, fix)
    }

    /// An informational note.
    pub fn info(
        code: &'static str,
        node: Option<NodeId>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::new(Severity::Info, code, node, message, fix)
    }
}

fn ser_node<S: serde::Serializer>(n: &Option<NodeId>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(n.as_deref().unwrap_or("program"))
}

impl Diagnostic {
    /// The text form without its `Fix:` line: `severity[code] node: message`.
    pub fn headline(&self) -> String {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        format!(
            "{sev}[{}] {}: {}",
            self.code,
            self.node.as_deref().unwrap_or("program"),
            self.message
        )
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\n  Fix: {}", self.headline(), self.fix)
    }
}

impl crate::util::Problem {
    /// `file` is not a valid `what`: in text form its diagnostics above one closing error that
    /// points at them; in JSON form the first error diagnostic (with its node and fix).
    pub fn invalid_file(file: &std::path::Path, what: &str, diags: &[Diagnostic]) -> Self {
        let name = file.display().to_string();
        let mut p = crate::util::Problem::new(
            format!("{name} is not a valid {what}"),
            format!("correct the errors above (`vyrescope check {name}`)"),
        )
        .at(name.clone());
        let mut findings = crate::util::Findings {
            notes: diags.iter().map(|d| d.to_string()).collect(),
            first: None,
        };
        if let Some(d) = diags.iter().find(|d| d.severity == Severity::Error) {
            let place = d.node.as_deref().unwrap_or("program");
            findings.first = Some((
                format!(
                    "{name} is not a valid {what}: [{}] {place}: {}",
                    d.code, d.message
                ),
                d.fix.clone(),
            ));
            if let Some(n) = &d.node {
                p = p.on_node(n.to_string());
            }
        }
        p.findings = Some(Box::new(findings));
        p
    }
}
