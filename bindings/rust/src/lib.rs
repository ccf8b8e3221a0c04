//! Safe Rust bindings to Grape's C API (`grape.h`, libgrape.so): compile `.grp` model programs
//! and run them.
//!
//! ```no_run
//! use grape::{Model, ModelOptions, SessionOptions};
//! # fn main() -> grape::Result<()> {
//! let model = Model::load_file("examples/mlp.grp", &ModelOptions::new().define("D", 32).define("H", 64))?;
//! model.set_random_weights(1)?;
//! let mut session = model.session(&SessionOptions::new())?;
//! let x = vec![grape::F16::from_f32(1.0); 2 * 32];
//! session.set_input("x", &[2, 32], &x)?;
//! session.run()?;
//! let y: Vec<grape::F16> = session.output_vec(0)?;
//! # Ok(()) }
//! ```
//!
//! Layout: [`ffi`] holds the raw declarations; [`Model`] (Send + Sync) and [`Session`] (Send)
//! own their handles and free them on drop; every fallible call goes through [`check`], which
//! turns a `grp_error*` into [`Error`].

pub mod ffi;

mod dtype;
mod error;
pub mod half;
mod model;
mod session;
mod tensor;

pub use dtype::{DType, Element};
pub use error::{check, Code, Error, Location, Result};
pub use half::{Bf16, F16};
pub use model::{Model, ModelOptions, WeightInfo};
pub use session::{Dim, Session, SessionOptions, TensorInfo};
pub use tensor::{write_npy, HostTensor, TensorView};

use std::ffi::CString;
use std::path::Path;

/// The version of the loaded libgrape, as `major*1000000 + minor*1000 + patch`.
pub fn version() -> u32 {
    unsafe { ffi::grp_version_number() }
}

/// The version of the loaded libgrape, e.g. "0.1.0".
pub fn version_string() -> String {
    unsafe { error::lossy(ffi::grp_version_string()) }
}

/// Whether this build and machine can run `backend` ("cpu", "cuda", "auto").
pub fn backend_available(backend: &str) -> bool {
    match CString::new(backend) {
        Ok(b) => unsafe { ffi::grp_backend_available(b.as_ptr()) != 0 },
        Err(_) => false,
    }
}

/// Reads and checks the kernel bundle at `path` (written by [`Model::write_kernel_bundle`] or
/// `grape compile --bundle`); every session created afterwards in this process takes its kernels
/// from it before the kernel cache or NVRTC. Errors: [`Code::Io`] (cannot be read),
/// [`Code::Format`] (not a bundle, corrupt, or from another Grape version).
pub fn use_kernel_bundle(path: &str) -> Result<()> {
    let path = error::c_string(path, "path")?;
    unsafe { check(ffi::grp_kernel_bundle_use(path.as_ptr())) }
}

pub(crate) fn path_c_string(path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| Error::invalid(format!("path {path:?} is not valid UTF-8")))?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| Error::invalid(format!("path {path:?} contains a NUL byte")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_agree_with_the_library() {
        for d in DType::ALL {
            assert_eq!(unsafe { ffi::grp_dtype_size(d.raw()) }, d.size());
            assert_eq!(unsafe { error::lossy(ffi::grp_dtype_name(d.raw())) }, d.name());
        }
        assert_eq!(unsafe { ffi::grp_dtype_size(99) }, 0);
    }

    #[test]
    fn version_matches_the_header() {
        assert!(version() >= ffi::GRAPE_VERSION_NUMBER);
        assert!(!version_string().is_empty());
        assert!(backend_available("cpu"));
    }

    #[test]
    fn check_of_null_is_ok() {
        assert_eq!(unsafe { check(std::ptr::null_mut()) }, Ok(()));
    }
}
