//! Program files in a foreign format: the vyre compiler's binary wire format (`VYRE` header,
//! `*.vyre`) and its hex text envelope (first line `vyre_ir v0.1`).
//!
//! Recognising such a file needs no vyre code, so it happens here, in the one place every
//! Program file is read ([`super::load_program`]). Converting one needs the vyre crates, which
//! only the `vyre` module (feature `vyre`, a higher layer) may use; that module installs its
//! converter here at start-up ([`install_importer`], called by the command line). Without it a
//! vyre file gets one clear error saying how to enable the feature, instead of a confusing JSON
//! error about invalid UTF-8.

use std::path::Path;
use std::sync::OnceLock;

use super::ast::Program;
use super::parse::ParseError;
use super::pipeline::Pipeline;

/// A Program file format other than format-1 JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ForeignFormat {
    /// vyre's binary wire format (`Program::to_wire`): starts with the 4 bytes `VYRE`.
    VyreWire,
    /// vyre's hex text envelope (`Program::to_text`): first line `vyre_ir v0.1`.
    VyreText,
}

impl ForeignFormat {
    /// How messages name the format.
    pub fn describe(self) -> &'static str {
        match self {
            ForeignFormat::VyreWire => "a vyre wire file (`VYRE` header)",
            ForeignFormat::VyreText => "a vyre text file (`vyre_ir` header)",
        }
    }
}

/// The first bytes of vyre's wire format.
pub const VYRE_WIRE_MAGIC: &[u8; 4] = b"VYRE";

/// The start of the first line of vyre's text envelope (`vyre_ir v0.1`).
pub const VYRE_TEXT_HEADER: &str = "vyre_ir";

/// The format of a Program file from its first bytes, or `None` for JSON (anything else).
/// A file named `*.vyre` counts as wire bytes whatever it starts with, so that a damaged one
/// gets vyre's decoder error rather than a JSON syntax error.
pub fn sniff(path: &Path, bytes: &[u8]) -> Option<ForeignFormat> {
    if bytes.starts_with(VYRE_WIRE_MAGIC) {
        return Some(ForeignFormat::VyreWire);
    }
    if bytes.starts_with(VYRE_TEXT_HEADER.as_bytes()) {
        return Some(ForeignFormat::VyreText);
    }
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("vyre"))
    {
        return Some(ForeignFormat::VyreWire);
    }
    None
}

/// Converts the bytes of a foreign Program file (named `path`, in `format`) into a Program.
/// A conversion that finds constructs without an equivalent fails (the error lists them).
pub type Importer = fn(&Path, &[u8], ForeignFormat) -> Result<Program, ParseError>;

static IMPORTER: OnceLock<Importer> = OnceLock::new();

/// Installs the converter for foreign files (the `vyre` module's, at start-up). The first
/// installation wins; later calls change nothing.
pub fn install_importer(importer: Importer) {
    let _ = IMPORTER.set(importer);
}

/// True once a converter is installed (a build with the `vyre` feature, after start-up).
pub fn importer_installed() -> bool {
    IMPORTER.get().is_some()
}

/// Converts a foreign file with the installed converter, or explains how to get one.
pub fn import(path: &Path, bytes: &[u8], format: ForeignFormat) -> Result<Program, ParseError> {
    match IMPORTER.get() {
        Some(f) => f(path, bytes, format),
        None => Err(not_enabled(path, format)),
    }
}

/// The error for a vyre file read by a build without the `vyre` feature.
pub fn not_enabled(path: &Path, format: ForeignFormat) -> ParseError {
    ParseError {
        file: path.display().to_string(),
        line: 0,
        column: 0,
        path: String::new(),
        message: format!(
            "this is {}, and this vyrescope was built without vyre support",
            format.describe()
        ),
        fix: "rebuild with `cargo build --release --features vyre` (then `vyrescope import FILE` \
              converts it to a Program JSON file, and every command opens it directly)"
            .into(),
    }
}

/// The first bytes of vyre's ProgramGraph wire format (`ProgramGraph::to_wire`): a graph of
/// Programs, which opens as a pipeline.
pub const VYRE_GRAPH_MAGIC: &[u8; 4] = b"VGR0";

/// The first bytes of a vyre-megakernel artifact (`Artifact::to_bytes`), which carries the
/// graph it was compiled from and so opens as a pipeline too.
pub const VYRE_ARTIFACT_MAGIC: &[u8; 4] = b"VMK0";

/// True when `bytes` (of the file `path`) are a vyre ProgramGraph or megakernel artifact: the
/// `VGR0` or `VMK0` header, or a `*.vgr`/`*.vmk` name (so that a damaged one gets vyre's
/// decoder error, not a JSON syntax error).
pub fn is_vyre_graph(path: &Path, bytes: &[u8]) -> bool {
    bytes.starts_with(VYRE_GRAPH_MAGIC)
        || bytes.starts_with(VYRE_ARTIFACT_MAGIC)
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("vgr") || e.eq_ignore_ascii_case("vmk"))
}

/// Converts the bytes of a vyre ProgramGraph file into a pipeline; a graph with constructs
/// without an equivalent fails (the error names the first and counts them).
pub type GraphImporter = fn(&Path, &[u8]) -> Result<Pipeline, ParseError>;

static GRAPH_IMPORTER: OnceLock<GraphImporter> = OnceLock::new();

/// Installs the converter for vyre graph files (the `vyre` module's, at start-up, beside
/// [`install_importer`]). The first installation wins.
pub fn install_graph_importer(importer: GraphImporter) {
    let _ = GRAPH_IMPORTER.set(importer);
}

/// Converts a vyre graph file with the installed converter, or explains how to get one.
pub fn import_graph(path: &Path, bytes: &[u8]) -> Result<Pipeline, ParseError> {
    match GRAPH_IMPORTER.get() {
        Some(f) => f(path, bytes),
        None => Err(ParseError {
            file: path.display().to_string(),
            line: 0,
            column: 0,
            path: String::new(),
            message: "this is a vyre ProgramGraph or megakernel artifact (`VGR0`/`VMK0` \
                      header), and this vyrescope was built without vyre support"
                .into(),
            fix: "rebuild with `cargo build --release --features vyre` (then every pipeline \
                  command opens the graph, and `vyrescope import FILE.vgr -o DIR` writes it as a \
                  pipeline)"
                .into(),
        }),
    }
}

/// Values of the symbolic dimensions of vyre graphs and artifacts (`--bind SYMBOL=N`), by
/// symbol: a graph value of shape `[items]` becomes a buffer of N elements.
pub type GraphBindings = std::collections::BTreeMap<String, u64>;

static GRAPH_BINDINGS: OnceLock<GraphBindings> = OnceLock::new();

/// Sets the symbol values every graph import of this process uses (the CLI's `--bind`, once,
/// before any file is read; a later call changes nothing).
pub fn bind_graph_symbols(bindings: GraphBindings) {
    let _ = GRAPH_BINDINGS.set(bindings);
}

/// The symbol values set by [`bind_graph_symbols`] (none if it was not called).
pub fn graph_bindings() -> &'static GraphBindings {
    static NONE: GraphBindings = GraphBindings::new();
    GRAPH_BINDINGS.get().unwrap_or(&NONE)
}

/// Largest value `--bind` takes: a buffer length the format can hold (2^32 elements).
pub const MAX_BINDING: u64 = 1 << 32;

/// A `--bind SYMBOL=N` value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// No `=` in the value.
    #[error("`{0}` is not SYMBOL=N (e.g. `--bind items=1048576`)")]
    NotAPair(String),
    /// The symbol holds characters a symbol name cannot.
    #[error("`{0}` is not a symbol name (letters, digits, `_`, `-`, `.`)")]
    BadSymbol(String),
    /// The length is not a number in range.
    #[error("`{value}` is not a length from 1 to {MAX_BINDING} for `{symbol}`")]
    BadLength {
        /// The symbol being bound.
        symbol: String,
        /// The text given as its length.
        value: String,
    },
    /// One symbol given two different lengths.
    #[error("`--bind {symbol}` is given twice ({first} and {second})")]
    Twice {
        /// The symbol.
        symbol: String,
        /// The first length given.
        first: u64,
        /// The other length given.
        second: u64,
    },
}

/// Parses one `SYMBOL=N` (the `--bind` option): a symbol of letters, digits, `_`, `-` or `.`
/// and a length from 1 to [`MAX_BINDING`].
pub fn parse_binding(text: &str) -> Result<(String, u64), BindError> {
    let Some((symbol, value)) = text.split_once('=') else {
        return Err(BindError::NotAPair(text.to_string()));
    };
    let symbol = symbol.trim();
    if symbol.is_empty()
        || !symbol
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(BindError::BadSymbol(symbol.to_string()));
    }
    match value.trim().parse::<u64>() {
        Ok(n) if (1..=MAX_BINDING).contains(&n) => Ok((symbol.to_string(), n)),
        _ => Err(BindError::BadLength {
            symbol: symbol.to_string(),
            value: value.trim().to_string(),
        }),
    }
}

/// Collects `--bind` values into bindings; one symbol given two values is refused.
pub fn collect_bindings(list: &[(String, u64)]) -> Result<GraphBindings, BindError> {
    let mut out = GraphBindings::new();
    for (s, n) in list {
        if let Some(old) = out.insert(s.clone(), *n) {
            if old != *n {
                return Err(BindError::Twice {
                    symbol: s.clone(),
                    first: old,
                    second: *n,
                });
            }
        }
    }
    Ok(out)
}
