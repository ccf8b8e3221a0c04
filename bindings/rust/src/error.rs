//! `Error`, `Code` and `check()`: the one place a `grp_error*` becomes a `Result`.

use std::ffi::{CStr, CString};
use std::fmt;

use crate::ffi;

/// The class of an error; mirrors `grp_code` (without `GRP_OK`, which is never an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// An invalid argument: unknown name (entry, input, const, state), a byte count or slice
    /// length that does not match the shape, a call out of order.
    InvalidArgument,
    /// The .grp text does not parse.
    Syntax,
    /// The program does not type-check; an input or state of the wrong dtype, rank or shape.
    Type,
    /// A file cannot be opened, read or written.
    Io,
    /// A malformed file (.npy, safetensors) or weights that do not match the declarations.
    Format,
    /// Valid, but not supported by this build or backend.
    Unsupported,
    /// The requested backend or device is not available.
    NoDevice,
    /// The device failed.
    Device,
    OutOfMemory,
    /// A run stopped by an interrupt or its deadline (the session stays usable).
    Interrupted,
    /// A bug in Grape (also: a code this crate does not know, from a newer libgrape).
    Internal,
}

impl Code {
    fn from_raw(code: ffi::grp_code) -> Code {
        match code {
            ffi::GRP_ERR_INVALID_ARGUMENT => Code::InvalidArgument,
            ffi::GRP_ERR_SYNTAX => Code::Syntax,
            ffi::GRP_ERR_TYPE => Code::Type,
            ffi::GRP_ERR_IO => Code::Io,
            ffi::GRP_ERR_FORMAT => Code::Format,
            ffi::GRP_ERR_UNSUPPORTED => Code::Unsupported,
            ffi::GRP_ERR_NO_DEVICE => Code::NoDevice,
            ffi::GRP_ERR_DEVICE => Code::Device,
            ffi::GRP_ERR_OUT_OF_MEMORY => Code::OutOfMemory,
            ffi::GRP_ERR_INTERRUPTED => Code::Interrupted,
            _ => Code::Internal,
        }
    }

    /// The `grp_code` value.
    pub fn raw(self) -> ffi::grp_code {
        match self {
            Code::InvalidArgument => ffi::GRP_ERR_INVALID_ARGUMENT,
            Code::Syntax => ffi::GRP_ERR_SYNTAX,
            Code::Type => ffi::GRP_ERR_TYPE,
            Code::Io => ffi::GRP_ERR_IO,
            Code::Format => ffi::GRP_ERR_FORMAT,
            Code::Unsupported => ffi::GRP_ERR_UNSUPPORTED,
            Code::NoDevice => ffi::GRP_ERR_NO_DEVICE,
            Code::Device => ffi::GRP_ERR_DEVICE,
            Code::OutOfMemory => ffi::GRP_ERR_OUT_OF_MEMORY,
            Code::Interrupted => ffi::GRP_ERR_INTERRUPTED,
            Code::Internal => ffi::GRP_ERR_INTERNAL,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Code::InvalidArgument => "invalid argument",
            Code::Syntax => "syntax error",
            Code::Type => "type error",
            Code::Io => "I/O error",
            Code::Format => "format error",
            Code::Unsupported => "unsupported",
            Code::NoDevice => "no device",
            Code::Device => "device error",
            Code::OutOfMemory => "out of memory",
            Code::Interrupted => "interrupted",
            Code::Internal => "internal error",
        };
        f.write_str(s)
    }
}

/// Where the first diagnostic of a source error is (`grp_error_location`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The name the source was loaded under.
    pub file: String,
    /// 1-based.
    pub line: u32,
    /// 1-based, in bytes.
    pub column: u32,
}

/// An error from libgrape, or from argument checks this crate makes before calling it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: Code,
    /// The complete text: every diagnostic, each with `file:line:col`.
    pub message: String,
    /// For source errors (`Syntax`, `Type` from loading a program): the first diagnostic.
    pub location: Option<Location>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
            location: None,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(Code::InvalidArgument, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Turns the result of a fallible C call into a `Result`, freeing the error.
///
/// # Safety
/// `e` is NULL or an error returned by libgrape that nothing else owns.
pub unsafe fn check(e: *mut ffi::grp_error) -> Result<()> {
    if e.is_null() {
        return Ok(());
    }
    let code = Code::from_raw(ffi::grp_error_code(e));
    let message = lossy(ffi::grp_error_message(e));
    let mut file = std::ptr::null();
    let (mut line, mut column) = (0u32, 0u32);
    let location = (ffi::grp_error_location(e, &mut file, &mut line, &mut column) != 0).then(|| Location {
        file: lossy(file),
        line,
        column,
    });
    ffi::grp_error_free(e);
    Err(Error {
        code,
        message,
        location,
    })
}

/// A C string the library returned, copied (NULL: "").
///
/// # Safety
/// `p` is NULL or a valid NUL-terminated string.
pub(crate) unsafe fn lossy(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// `s` as a C string; an interior NUL is an `InvalidArgument` naming `what`.
pub(crate) fn c_string(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid(format!("{what} {s:?} contains a NUL byte")))
}
