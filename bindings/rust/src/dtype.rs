//! Element types: `DType` (grp_dtype) and `Element`, the Rust types tensors can be read and
//! written as.

use std::fmt;

use crate::ffi;
use crate::half::{Bf16, F16};

/// The element type of a tensor; mirrors `grp_dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F16,
    BF16,
    I32,
    I64,
    /// One byte per element, 0 or 1.
    Bool,
}

impl DType {
    pub const ALL: [DType; 6] = [DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64, DType::Bool];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::I64 => 8,
            DType::Bool => 1,
        }
    }

    /// "f32", "f16", "bf16", "i32", "i64", "bool" (as in .grp source).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::Bool => "bool",
        }
    }

    pub fn raw(self) -> ffi::grp_dtype {
        match self {
            DType::F32 => ffi::GRP_F32,
            DType::F16 => ffi::GRP_F16,
            DType::BF16 => ffi::GRP_BF16,
            DType::I32 => ffi::GRP_I32,
            DType::I64 => ffi::GRP_I64,
            DType::Bool => ffi::GRP_BOOL,
        }
    }

    /// None for a value outside the enum (a dtype added by a newer libgrape).
    pub fn from_raw(raw: ffi::grp_dtype) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.raw() == raw)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type whose slices are the bytes of a tensor of some dtype: `f32`, `i32`, `i64`, `bool`,
/// [`F16`], [`Bf16`], and `u16` (the raw bits of an `f16` or `bf16` tensor, whichever the
/// declaration or the tensor says). Sealed: every implementation is plain data of exactly
/// `dtype.size()` bytes.
pub trait Element: Copy + Send + Sync + 'static + sealed::Sealed {
    /// The dtype used when no declaration decides it.
    const DTYPE: DType;
    /// Whether a tensor of `dtype` can be read and written as `Self`.
    fn accepts(dtype: DType) -> bool {
        dtype == Self::DTYPE
    }
    /// Whether every element of `bytes` is a valid `Self` (only `bool` has invalid patterns).
    fn valid(_bytes: &[u8]) -> bool {
        true
    }
    /// The dtype to use for a tensor declared as `declared` (None: unknown).
    fn resolve(declared: Option<DType>) -> DType {
        match declared {
            Some(d) if Self::accepts(d) => d,
            _ => Self::DTYPE,
        }
    }
}

macro_rules! element {
    ($t:ty, $d:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = $d;
        }
    };
}

element!(f32, DType::F32);
element!(i32, DType::I32);
element!(i64, DType::I64);
element!(F16, DType::F16);
element!(Bf16, DType::BF16);

impl sealed::Sealed for u16 {}
impl Element for u16 {
    const DTYPE: DType = DType::F16;
    fn accepts(dtype: DType) -> bool {
        matches!(dtype, DType::F16 | DType::BF16)
    }
}

impl sealed::Sealed for bool {}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn valid(bytes: &[u8]) -> bool {
        bytes.iter().all(|&b| b <= 1)
    }
}

// Every Element has the size of its dtypes: the casts between byte and element slices rely on it.
const _: () = {
    assert!(std::mem::size_of::<F16>() == 2 && std::mem::size_of::<Bf16>() == 2);
    assert!(std::mem::size_of::<bool>() == 1);
};
