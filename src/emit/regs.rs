//! Virtual registers: one numbered class per PTX register type, declared once at the top of
//! the entry. ptxas does the real allocation, so registers are never reused here: a fresh
//! name per value keeps the PTX readable (each register has one meaning) and costs nothing.

use crate::ir::ScalarType;

/// A PTX register class and its declaration type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegClass {
    /// `.pred %p`: booleans and branch conditions.
    Pred,
    /// `.b16 %h`: f16 and 16-bit memory values.
    B16,
    /// `.b32 %r`: u32, i32 and bool words.
    B32,
    /// `.b64 %rd`: u64, i64 and addresses.
    B64,
    /// `.f32 %f`.
    F32,
    /// `.f64 %fd`.
    F64,
}

impl RegClass {
    /// Every class, in declaration order.
    pub const ALL: [RegClass; 6] = [
        RegClass::Pred,
        RegClass::B16,
        RegClass::B32,
        RegClass::B64,
        RegClass::F32,
        RegClass::F64,
    ];

    /// Register name prefix (`%r`).
    pub fn prefix(self) -> &'static str {
        match self {
            RegClass::Pred => "%p",
            RegClass::B16 => "%h",
            RegClass::B32 => "%r",
            RegClass::B64 => "%rd",
            RegClass::F32 => "%f",
            RegClass::F64 => "%fd",
        }
    }

    /// PTX declaration type (`.b32`).
    pub fn decl_type(self) -> &'static str {
        match self {
            RegClass::Pred => ".pred",
            RegClass::B16 => ".b16",
            RegClass::B32 => ".b32",
            RegClass::B64 => ".b64",
            RegClass::F32 => ".f32",
            RegClass::F64 => ".f64",
        }
    }

    /// The class holding values of `ty`.
    pub fn of(ty: ScalarType) -> RegClass {
        match ty {
            ScalarType::Bool => RegClass::Pred,
            ScalarType::U32 | ScalarType::I32 => RegClass::B32,
            ScalarType::U64 | ScalarType::I64 => RegClass::B64,
            ScalarType::F32 => RegClass::F32,
            ScalarType::F64 => RegClass::F64,
        }
    }
}

/// A virtual register (`%r12`, `%p3`): only [`RegAlloc`] names one, so a `Reg` is never an
/// immediate, a predicate's negation or a special register. It reads as its name (`Deref` to
/// `str`, `Display`), so it goes into instruction text as is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg(String);

impl std::ops::Deref for Reg {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Reg {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Reg {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Reg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Reg> for String {
    fn from(r: Reg) -> String {
        r.0
    }
}

/// Hands out fresh register names per class.
#[derive(Debug, Clone, Default)]
pub struct RegAlloc {
    used: [u32; 6],
}

impl RegAlloc {
    /// A fresh register of class `c` (numbered from 1, like nvcc).
    pub fn fresh(&mut self, c: RegClass) -> Reg {
        let i = c as usize;
        self.used[i] += 1;
        Reg(format!("{}{}", c.prefix(), self.used[i]))
    }

    /// Registers handed out in class `c`.
    pub fn count(&self, c: RegClass) -> u32 {
        self.used[c as usize]
    }

    /// `.reg` declaration lines for the classes in use.
    pub fn declarations(&self) -> Vec<String> {
        RegClass::ALL
            .iter()
            .filter(|c| self.count(**c) > 0)
            .map(|c| {
                format!(
                    "\t.reg {} {}<{}>;",
                    c.decl_type(),
                    c.prefix(),
                    self.count(*c) + 1
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_names_are_numbered_per_class_and_declared() {
        let mut r = RegAlloc::default();
        assert_eq!(&*r.fresh(RegClass::B32), "%r1");
        assert_eq!(&*r.fresh(RegClass::B32), "%r2");
        assert_eq!(r.fresh(RegClass::F64).to_string(), "%fd1");
        assert_eq!(
            r.declarations(),
            vec![
                "\t.reg .b32 %r<3>;".to_string(),
                "\t.reg .f64 %fd<2>;".to_string()
            ]
        );
    }
}
