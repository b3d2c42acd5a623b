//! The optional `run` section: default dispatch shape and input contents.

/// `run`: how to dispatch a Program by default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunSpec {
    /// Workgroup count, x/y/z.
    pub grid: Option<[u32; 3]>,
    /// Invocations wanted along x (`grid.x = ceil(elements / workgroup_size.x)`).
    pub elements: Option<u64>,
    /// Per host buffer: length and contents, in file order.
    pub inputs: Vec<(String, InputSpec)>,
}

/// Length and contents of one host buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSpec {
    /// Element count; defaults to `elements` (or the data length for `data`).
    pub len: Option<u64>,
    /// Where the contents come from.
    pub source: InputSource,
}

/// Contents of a host buffer.
#[derive(Debug, Clone, PartialEq)]
pub enum InputSource {
    /// A generated fill.
    Fill(Fill),
    /// Literal elements, converted to the buffer's type when the buffer is built.
    Data(super::data::DataArray),
    /// Raw little-endian elements from a file relative to the Program file.
    File(String),
}

/// Generated contents.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fill {
    /// All zero.
    Zeros,
    /// All one.
    Ones,
    /// `0, 1, 2, ...`
    Iota,
    /// Seeded pseudo-random values in `[range.0, range.1)` (see [`crate::inputs`]).
    Random {
        /// PRNG seed.
        seed: u64,
        /// Value range; `None` means the element type's natural default.
        range: Option<(f64, f64)>,
    },
}
