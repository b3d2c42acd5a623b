//! The operators of the Program model: binary and unary operators, atomics with their memory
//! orders, and workgroup reductions, each with its spec spelling (`name` / `from_name`) and
//! the classifications later stages ask of it (comparison, shift, approximate).

/// Binary operators (spec: `add sub mul div rem min max absdiff mulhi addsat subsat mulsat and
/// or xor shl shr rotl rotr eq ne lt le gt ge land lor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Min,
    Max,
    AbsDiff,
    MulHi,
    /// Integer addition clamped to the type's range (no wrap).
    AddSat,
    /// Integer subtraction clamped to the type's range.
    SubSat,
    /// Integer multiplication clamped to the type's range.
    MulSat,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Rotl,
    Rotr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LAnd,
    LOr,
}

impl BinOp {
    /// Every binary operator.
    pub const ALL: [BinOp; 27] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::Min,
        BinOp::Max,
        BinOp::AbsDiff,
        BinOp::MulHi,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::Shr,
        BinOp::Rotl,
        BinOp::Rotr,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::LAnd,
        BinOp::LOr,
        BinOp::AddSat,
        BinOp::SubSat,
        BinOp::MulSat,
    ];

    /// Spec spelling (the JSON key).
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::AbsDiff => "absdiff",
            BinOp::MulHi => "mulhi",
            BinOp::AddSat => "addsat",
            BinOp::SubSat => "subsat",
            BinOp::MulSat => "mulsat",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
            BinOp::Rotl => "rotl",
            BinOp::Rotr => "rotr",
            BinOp::Eq => "eq",
            BinOp::Ne => "ne",
            BinOp::Lt => "lt",
            BinOp::Le => "le",
            BinOp::Gt => "gt",
            BinOp::Ge => "ge",
            BinOp::LAnd => "land",
            BinOp::LOr => "lor",
        }
    }

    /// Parses the spec spelling.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|o| o.name() == s)
    }

    /// Comparisons give `bool`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    /// Operators whose result is `bool` whatever their operands: comparisons, `land`, `lor`.
    pub fn yields_bool(self) -> bool {
        self.is_comparison() || matches!(self, BinOp::LAnd | BinOp::LOr)
    }

    /// Shifts and rotates: the right operand is a `u32` amount.
    pub fn is_shift(self) -> bool {
        matches!(self, BinOp::Shl | BinOp::Shr | BinOp::Rotl | BinOp::Rotr)
    }
}

/// Unary operators (spec: `neg not lnot popcount clz ctz brev abs sign sqrt rsqrt rcp exp exp2
/// log log2 sin cos tan tanh floor ceil round trunc isnan isinf isfinite`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum UnOp {
    Neg,
    Not,
    LNot,
    Popcount,
    Clz,
    Ctz,
    Brev,
    Abs,
    Sign,
    Sqrt,
    Rsqrt,
    Rcp,
    Exp,
    Exp2,
    Log,
    Log2,
    Sin,
    Cos,
    Tan,
    Tanh,
    Floor,
    Ceil,
    Round,
    Trunc,
    IsNan,
    IsInf,
    IsFinite,
}

impl UnOp {
    /// Every unary operator.
    pub const ALL: [UnOp; 27] = [
        UnOp::Neg,
        UnOp::Not,
        UnOp::LNot,
        UnOp::Popcount,
        UnOp::Clz,
        UnOp::Ctz,
        UnOp::Brev,
        UnOp::Abs,
        UnOp::Sign,
        UnOp::Sqrt,
        UnOp::Rsqrt,
        UnOp::Rcp,
        UnOp::Exp,
        UnOp::Exp2,
        UnOp::Log,
        UnOp::Log2,
        UnOp::Sin,
        UnOp::Cos,
        UnOp::Tan,
        UnOp::Tanh,
        UnOp::Floor,
        UnOp::Ceil,
        UnOp::Round,
        UnOp::Trunc,
        UnOp::IsNan,
        UnOp::IsInf,
        UnOp::IsFinite,
    ];

    /// Spec spelling (the JSON key).
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "neg",
            UnOp::Not => "not",
            UnOp::LNot => "lnot",
            UnOp::Popcount => "popcount",
            UnOp::Clz => "clz",
            UnOp::Ctz => "ctz",
            UnOp::Brev => "brev",
            UnOp::Abs => "abs",
            UnOp::Sign => "sign",
            UnOp::Sqrt => "sqrt",
            UnOp::Rsqrt => "rsqrt",
            UnOp::Rcp => "rcp",
            UnOp::Exp => "exp",
            UnOp::Exp2 => "exp2",
            UnOp::Log => "log",
            UnOp::Log2 => "log2",
            UnOp::Sin => "sin",
            UnOp::Cos => "cos",
            UnOp::Tan => "tan",
            UnOp::Tanh => "tanh",
            UnOp::Floor => "floor",
            UnOp::Ceil => "ceil",
            UnOp::Round => "round",
            UnOp::Trunc => "trunc",
            UnOp::IsNan => "isnan",
            UnOp::IsInf => "isinf",
            UnOp::IsFinite => "isfinite",
        }
    }

    /// Parses the spec spelling.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|o| o.name() == s)
    }

    /// Transcendental ops with a documented ULP bound rather than exact rounding.
    pub fn is_approximate(self) -> bool {
        matches!(
            self,
            UnOp::Rsqrt
                | UnOp::Rcp
                | UnOp::Exp
                | UnOp::Exp2
                | UnOp::Log
                | UnOp::Log2
                | UnOp::Sin
                | UnOp::Cos
                | UnOp::Tan
                | UnOp::Tanh
        )
    }
}

/// Atomic read-modify-write operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum AtomicOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
    Exchange,
    Cas,
}

impl AtomicOp {
    /// Every atomic op.
    pub const ALL: [AtomicOp; 8] = [
        AtomicOp::Add,
        AtomicOp::Min,
        AtomicOp::Max,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
        AtomicOp::Exchange,
        AtomicOp::Cas,
    ];

    /// Spec spelling.
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Min => "min",
            AtomicOp::Max => "max",
            AtomicOp::And => "and",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
            AtomicOp::Exchange => "exchange",
            AtomicOp::Cas => "cas",
        }
    }

    /// Parses the spec spelling.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|o| o.name() == s)
    }
}

/// The memory order of an atomic (C++ `std::memory_order`, PTX `.sem`), at the scope of its
/// buffer (the workgroup for workgroup buffers, the device for host buffers). Every atomic is
/// a read-modify-write, so every order is valid on every op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AtomicOrder {
    /// No ordering of other memory accesses; only the atomicity of this one.
    Relaxed,
    /// Later accesses of this thread are not moved before it.
    Acquire,
    /// Earlier accesses of this thread are not moved after it.
    Release,
    /// Both acquire and release.
    AcqRel,
    /// Acquire and release, and one total order over all `seq_cst` operations (the default).
    #[default]
    SeqCst,
}

impl AtomicOrder {
    /// Every order, weakest first.
    pub const ALL: [AtomicOrder; 5] = [
        AtomicOrder::Relaxed,
        AtomicOrder::Acquire,
        AtomicOrder::Release,
        AtomicOrder::AcqRel,
        AtomicOrder::SeqCst,
    ];

    /// Spec spelling.
    pub fn name(self) -> &'static str {
        match self {
            AtomicOrder::Relaxed => "relaxed",
            AtomicOrder::Acquire => "acquire",
            AtomicOrder::Release => "release",
            AtomicOrder::AcqRel => "acq_rel",
            AtomicOrder::SeqCst => "seq_cst",
        }
    }

    /// Parses the spec spelling.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|o| o.name() == s)
    }
}

/// Warp-wide reductions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ReduceOp {
    Add,
    Mul,
    Min,
    Max,
    And,
    Or,
    Xor,
}

impl ReduceOp {
    /// Every reduction.
    pub const ALL: [ReduceOp; 7] = [
        ReduceOp::Add,
        ReduceOp::Mul,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::And,
        ReduceOp::Or,
        ReduceOp::Xor,
    ];

    /// Spec spelling.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Add => "add",
            ReduceOp::Mul => "mul",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::And => "and",
            ReduceOp::Or => "or",
            ReduceOp::Xor => "xor",
        }
    }

    /// Parses the spec spelling.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|o| o.name() == s)
    }
}
