//! The one error type every layer reports in: [`Problem`], a message with its `Fix:`, where it
//! is (a file place, a node id) and its [`ExitClass`]. Library errors convert into it without
//! losing a field; the CLI prints it in one place, as text (`message\n  Fix: fix`, the form
//! every error printed before this type existed) or as the `--json` object.
//!
//! It lives in `util` (layer 0) because `util`'s own errors convert into it and every layer
//! above returns it.

use std::fmt;

/// How a failed command ends, as documented in the README: exit code 1 for a failure, 2 for a
/// command line that cannot be run as given. The code does not depend on `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ExitClass {
    /// The command ran and failed (a missing file, an invalid Program, no GPU...): exit 1.
    #[default]
    Failure,
    /// The command line itself is wrong (bad or missing arguments): exit 2.
    Usage,
}

impl ExitClass {
    /// The process exit code of this class.
    pub fn code(self) -> i32 {
        match self {
            ExitClass::Failure => 1,
            ExitClass::Usage => 2,
        }
    }

    /// The name used in the JSON form (`"failure"`, `"usage"`).
    pub fn name(self) -> &'static str {
        match self {
            ExitClass::Failure => "failure",
            ExitClass::Usage => "usage",
        }
    }
}

/// What went wrong, how to fix it, where, and how the command ends.
///
/// Text form ([`fmt::Display`]): `message`, then `\n  Fix: fix` when there is a fix. JSON form
/// ([`Problem::to_json`]): `{"error", "fix", "location", "node", "exit"}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Problem {
    /// What is wrong (names the file or value it is about).
    pub message: String,
    /// How to fix it, without the `Fix: ` prefix; empty when there is no advice.
    pub fix: String,
    /// Where: `FILE:LINE:COLUMN` or a file name, when the problem is in a file.
    pub location: Option<String>,
    /// The Program node id (`body[1].then[0]`) the problem is about, when there is one.
    pub node: Option<String>,
    /// How the command ends.
    pub exit: ExitClass,
    /// The findings behind the problem (an invalid file's diagnostics), when there are any;
    /// boxed, as most problems have none and every `Result` carries the size of this type.
    pub findings: Option<Box<Findings>>,
}

/// The findings behind a [`Problem`] (the diagnostics of an invalid file).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Findings {
    /// Lines shown above the error in text form only.
    pub notes: Vec<String>,
    /// The first error among `notes` as (message, fix): the JSON form, which has no room for
    /// notes, reports it in place of the problem's `message`/`fix` (which point at the notes).
    pub first: Option<(String, String)>,
}

impl Problem {
    /// A failure with a message and a fix (exit code 1).
    pub fn new(message: impl Into<String>, fix: impl Into<String>) -> Self {
        Problem {
            message: message.into(),
            fix: fix.into(),
            ..Problem::default()
        }
    }

    /// A command line that cannot run as given (exit code 2).
    pub fn usage(message: impl Into<String>, fix: impl Into<String>) -> Self {
        Problem::new(message, fix).with_exit(ExitClass::Usage)
    }

    /// An error that should not happen (a serialisation of our own values failing): the fix
    /// asks for a bug report.
    pub fn bug(e: impl fmt::Display) -> Self {
        Problem::new(e.to_string(), "report this bug")
    }

    /// The same problem at `location`.
    pub fn at(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }

    /// The same problem about node `node`.
    pub fn on_node(mut self, node: impl Into<String>) -> Self {
        self.node = Some(node.into());
        self
    }

    /// The same problem with another exit class.
    pub fn with_exit(mut self, exit: ExitClass) -> Self {
        self.exit = exit;
        self
    }

    /// The same problem with `prefix: ` before its message (`group 2: ...`, `FILE: ...`). The
    /// location is recomputed as a legacy text's would be, so the JSON form is unchanged by
    /// the conversion to this type.
    pub fn context(mut self, prefix: impl fmt::Display) -> Self {
        self.message = format!("{prefix}: {}", self.message);
        if let Some((m, _)) = self.findings.as_mut().and_then(|f| f.first.as_mut()) {
            *m = format!("{prefix}: {m}");
        }
        if self.location.is_none() {
            self.location = location_of(&self.message).map(str::to_string);
        }
        self
    }

    /// The lines shown above the error in text form (none for most problems).
    pub fn notes(&self) -> &[String] {
        self.findings.as_ref().map_or(&[], |f| &f.notes)
    }

    /// The process exit code.
    pub fn exit_code(&self) -> i32 {
        self.exit.code()
    }

    /// The JSON form: `{"error", "fix", "location", "node", "exit"}` (`location` and `node`
    /// null when unknown; `exit` is the exit class's name).
    pub fn to_json(&self) -> serde_json::Value {
        let (error, fix) = match self.findings.as_ref().and_then(|f| f.first.as_ref()) {
            Some((m, f)) => (m.as_str(), f.as_str()),
            None => (self.message.trim_end(), self.fix.as_str()),
        };
        serde_json::json!({
            "error": error,
            "fix": fix,
            "location": self.location,
            "node": self.node,
            "exit": self.exit.name(),
        })
    }

    /// A failure whose location is the leading place of `message` (`FILE:LINE:COLUMN: ...`
    /// or `FILE.json: ...`), as every error that names its file first reports it.
    pub fn located(message: impl Into<String>, fix: impl Into<String>) -> Self {
        let p = Problem::new(message, fix);
        Problem {
            location: location_of(&p.message).map(str::to_string),
            ..p
        }
    }
}

/// An error type that keeps what is wrong and how to fix it apart, so that a [`Problem`] is
/// built from its fields and its text form is written from them (never read back from text).
/// Every error type of the crate implements it; [`into_problem!`] then gives it `Display`
/// (the text form of its [`Problem`]) and `From<E> for Problem`.
pub trait HasFix {
    /// What is wrong, naming the file or value it is about; no `Fix:` line.
    fn message(&self) -> String;

    /// How to fix it, without the `Fix: ` prefix; empty when there is no advice.
    fn fix(&self) -> String;

    /// The whole problem. By default the message and fix, located at the message's leading
    /// place; a type that knows its node, place or exit class, or wraps a [`Problem`],
    /// overrides it.
    fn problem(&self) -> Problem {
        Problem::located(self.message(), self.fix())
    }
}

impl HasFix for Problem {
    fn message(&self) -> String {
        self.message.clone()
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }

    fn problem(&self) -> Problem {
        self.clone()
    }
}

/// A leading `FILE:LINE:COLUMN` or `FILE.json` place (no spaces) before the first `: `.
fn location_of(message: &str) -> Option<&str> {
    message.split_once(": ").map(|(p, _)| p).filter(|p| {
        let parts: Vec<&str> = p.rsplitn(3, ':').collect();
        let numbered = parts.len() == 3
            && parts[0].chars().all(|c| c.is_ascii_digit())
            && parts[1].chars().all(|c| c.is_ascii_digit())
            && !parts[0].is_empty();
        !p.contains(' ') && (numbered || p.ends_with(".json"))
    })
}

impl fmt::Display for Problem {
    /// `message`, then `\n  Fix: fix` when there is a fix (notes are not part of it: the
    /// printer shows them above).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.fix.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}\n  Fix: {}", self.message, self.fix)
        }
    }
}

impl std::error::Error for Problem {}

impl From<Problem> for String {
    /// The text form, for callers not yet converted to [`Problem`].
    fn from(p: Problem) -> Self {
        p.to_string()
    }
}

/// `Display` (the text form of its [`Problem`]: `message`, then `\n  Fix: fix`) and
/// `From<$t> for Problem` for error types implementing [`HasFix`], so `?` works in functions
/// returning [`Problem`] and the text is written from the fields in one place.
macro_rules! into_problem {
    ($($t:ty),+ $(,)?) => {$(
        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(&$crate::util::HasFix::problem(self), f)
            }
        }
        impl From<$t> for $crate::util::Problem {
            fn from(e: $t) -> Self {
                $crate::util::HasFix::problem(&e)
            }
        }
    )+};
}
pub(crate) use into_problem;

into_problem!(super::ReadError, super::ConfineError);

#[cfg(test)]
mod tests {
    use super::*;

    /// An error type with a place, a message and a fix in fields.
    struct Typed {
        file: &'static str,
        what: &'static str,
        fix: &'static str,
    }

    impl HasFix for Typed {
        fn message(&self) -> String {
            format!("{}: {}", self.file, self.what)
        }

        fn fix(&self) -> String {
            self.fix.to_string()
        }
    }

    into_problem!(Typed);

    #[test]
    fn the_text_form_is_written_from_the_fields() {
        let e = Typed {
            file: "a.json:2:3",
            what: "bad",
            fix: "mend it",
        };
        assert_eq!(e.to_string(), "a.json:2:3: bad\n  Fix: mend it");
        let p = Problem::from(e);
        assert_eq!(p.message, "a.json:2:3: bad");
        assert_eq!(p.fix, "mend it");
        assert_eq!(p.location.as_deref(), Some("a.json:2:3"));
        assert_eq!(p.exit_code(), 1);
        // A fix-less problem is its message alone, whatever the message holds.
        let p = Problem::new("two findings\n  P001 x\n  Fix: one", "");
        assert_eq!(p.to_string(), "two findings\n  P001 x\n  Fix: one");
        assert_eq!(p.fix, "");
    }

    #[test]
    fn the_json_form_keeps_the_legacy_fields() {
        let p = Problem::usage("bad option", "see --help").on_node("body[0]");
        let v = p.to_json();
        assert_eq!(v["error"], "bad option");
        assert_eq!(v["fix"], "see --help");
        assert!(v["location"].is_null());
        assert_eq!(v["node"], "body[0]");
        assert_eq!(v["exit"], "usage");
        assert_eq!(p.exit_code(), 2);
        let p = Problem::located("x.json: cannot read", "check it").context("group 1");
        assert_eq!(p.message, "group 1: x.json: cannot read");
        assert_eq!(p.location.as_deref(), Some("x.json"));
    }
}
