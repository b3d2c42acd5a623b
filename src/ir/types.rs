//! Element and value types, and typed scalar values.

use std::fmt;

/// The type of an expression or variable (spec: `bool u32 i32 u64 i64 f32 f64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    /// Boolean (one 32-bit word in memory).
    Bool,
    /// Unsigned 32-bit integer.
    U32,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 64-bit integer.
    U64,
    /// Signed 64-bit integer.
    I64,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
}

impl ScalarType {
    /// All value types, in spec order.
    pub const ALL: [ScalarType; 7] = [
        ScalarType::Bool,
        ScalarType::U32,
        ScalarType::I32,
        ScalarType::U64,
        ScalarType::I64,
        ScalarType::F32,
        ScalarType::F64,
    ];

    /// Spec spelling (`u32`, `f64`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::U32 => "u32",
            ScalarType::I32 => "i32",
            ScalarType::U64 => "u64",
            ScalarType::I64 => "i64",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
        }
    }

    /// Parses the spec spelling.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|t| t.name() == s)
    }

    /// True for `u32 i32 u64 i64`.
    pub fn is_int(self) -> bool {
        matches!(
            self,
            ScalarType::U32 | ScalarType::I32 | ScalarType::U64 | ScalarType::I64
        )
    }

    /// True for `i32 i64`.
    pub fn is_signed(self) -> bool {
        matches!(self, ScalarType::I32 | ScalarType::I64)
    }

    /// True for `f32 f64`.
    pub fn is_float(self) -> bool {
        matches!(self, ScalarType::F32 | ScalarType::F64)
    }

    /// Width in bits (bool counts as 32, its storage width).
    pub fn bits(self) -> u32 {
        match self {
            ScalarType::U64 | ScalarType::I64 | ScalarType::F64 => 64,
            _ => 32,
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The element type of a buffer (spec: value types plus the storage-only `u8 i8 u16 i16 f16`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElemType {
    /// One 32-bit word, nonzero = true.
    Bool,
    /// Storage-only unsigned byte (widens to `u32`).
    U8,
    /// Storage-only signed byte (widens to `i32`).
    I8,
    /// Storage-only unsigned 16-bit (widens to `u32`).
    U16,
    /// Storage-only signed 16-bit (widens to `i32`).
    I16,
    /// Unsigned 32-bit.
    U32,
    /// Signed 32-bit.
    I32,
    /// Unsigned 64-bit.
    U64,
    /// Signed 64-bit.
    I64,
    /// Storage-only IEEE binary16 (widens to `f32`, stores round to nearest even).
    F16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
}

impl ElemType {
    /// All element types, in spec order.
    pub const ALL: [ElemType; 12] = [
        ElemType::Bool,
        ElemType::U8,
        ElemType::I8,
        ElemType::U16,
        ElemType::I16,
        ElemType::U32,
        ElemType::I32,
        ElemType::U64,
        ElemType::I64,
        ElemType::F16,
        ElemType::F32,
        ElemType::F64,
    ];

    /// Spec spelling.
    pub fn name(self) -> &'static str {
        match self {
            ElemType::Bool => "bool",
            ElemType::U8 => "u8",
            ElemType::I8 => "i8",
            ElemType::U16 => "u16",
            ElemType::I16 => "i16",
            ElemType::U32 => "u32",
            ElemType::I32 => "i32",
            ElemType::U64 => "u64",
            ElemType::I64 => "i64",
            ElemType::F16 => "f16",
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
        }
    }

    /// Parses the spec spelling.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|t| t.name() == s)
    }

    /// Bytes per element in memory.
    pub fn size_bytes(self) -> usize {
        match self {
            ElemType::U8 | ElemType::I8 => 1,
            ElemType::U16 | ElemType::I16 | ElemType::F16 => 2,
            ElemType::Bool | ElemType::U32 | ElemType::I32 | ElemType::F32 => 4,
            ElemType::U64 | ElemType::I64 | ElemType::F64 => 8,
        }
    }

    /// The value type a load of this element produces (and a store expects).
    pub fn value_type(self) -> ScalarType {
        match self {
            ElemType::Bool => ScalarType::Bool,
            ElemType::U8 | ElemType::U16 | ElemType::U32 => ScalarType::U32,
            ElemType::I8 | ElemType::I16 | ElemType::I32 => ScalarType::I32,
            ElemType::U64 => ScalarType::U64,
            ElemType::I64 => ScalarType::I64,
            ElemType::F16 | ElemType::F32 => ScalarType::F32,
            ElemType::F64 => ScalarType::F64,
        }
    }

    /// True for the storage-only types that widen on load and narrow on store.
    pub fn is_narrow(self) -> bool {
        matches!(
            self,
            ElemType::U8 | ElemType::I8 | ElemType::U16 | ElemType::I16 | ElemType::F16
        )
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A typed scalar value: what literals denote and what the interpreter computes with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// `bool`
    Bool(bool),
    /// `u32`
    U32(u32),
    /// `i32`
    I32(i32),
    /// `u64`
    U64(u64),
    /// `i64`
    I64(i64),
    /// `f32`
    F32(f32),
    /// `f64`
    F64(f64),
}

impl Scalar {
    /// The value's type.
    pub fn ty(self) -> ScalarType {
        match self {
            Scalar::Bool(_) => ScalarType::Bool,
            Scalar::U32(_) => ScalarType::U32,
            Scalar::I32(_) => ScalarType::I32,
            Scalar::U64(_) => ScalarType::U64,
            Scalar::I64(_) => ScalarType::I64,
            Scalar::F32(_) => ScalarType::F32,
            Scalar::F64(_) => ScalarType::F64,
        }
    }

    /// The value's bits, zero-extended to 64 (bool = 0/1, floats = IEEE bits).
    pub fn to_bits(self) -> u64 {
        match self {
            Scalar::Bool(b) => b as u64,
            Scalar::U32(v) => v as u64,
            Scalar::I32(v) => v as u32 as u64,
            Scalar::U64(v) => v,
            Scalar::I64(v) => v as u64,
            Scalar::F32(v) => v.to_bits() as u64,
            Scalar::F64(v) => v.to_bits(),
        }
    }

    /// Rebuilds a value of type `ty` from bits as produced by [`Scalar::to_bits`].
    pub fn from_bits(ty: ScalarType, bits: u64) -> Scalar {
        match ty {
            ScalarType::Bool => Scalar::Bool(bits != 0),
            ScalarType::U32 => Scalar::U32(bits as u32),
            ScalarType::I32 => Scalar::I32(bits as u32 as i32),
            ScalarType::U64 => Scalar::U64(bits),
            ScalarType::I64 => Scalar::I64(bits as i64),
            ScalarType::F32 => Scalar::F32(f32::from_bits(bits as u32)),
            ScalarType::F64 => Scalar::F64(f64::from_bits(bits)),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::U32(v) => write!(f, "{v}"),
            Scalar::I32(v) => write!(f, "{v}"),
            Scalar::U64(v) => write!(f, "{v}"),
            Scalar::I64(v) => write!(f, "{v}"),
            Scalar::F32(v) => write!(f, "{v:?}"),
            Scalar::F64(v) => write!(f, "{v:?}"),
        }
    }
}
