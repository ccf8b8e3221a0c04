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
pub use session::{
    AutoDecision, DeviceBuffer, Dim, Interrupter, KernelProfile, KernelTime, OutputBuffer, RunStats, Session,
    SessionOptions, TensorInfo,
};
pub use tensor::{write_npy, HostTensor, TensorView};

use std::ffi::CString;
use std::os::raw::{c_char, c_void};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// The on-disk kernel cache ([`cache_info`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheInfo {
    /// The folder "kernels" of `$GRAPE_CACHE_DIR`, else of `$XDG_CACHE_HOME/grape`, else of
    /// `$HOME/.cache/grape`.
    pub directory: PathBuf,
    /// Cache entries in it.
    pub entries: u64,
    /// Their size on disk.
    pub bytes: u64,
}

/// Where the kernel cache of this process lives and what it holds (`grp_cache_info`); the folder
/// is created (mode 0700) when missing. [`Code::Io`] when it cannot be placed or created.
pub fn cache_info() -> Result<CacheInfo> {
    let mut out: *mut c_char = std::ptr::null_mut();
    let text = unsafe {
        check(ffi::grp_cache_info(&mut out))?;
        let text = error::lossy(out);
        ffi::grp_free(out.cast());
        text
    };
    // "directory: DIR\nentries: N\nbytes: B\n"
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix(": ")))
            .map(str::to_owned)
    };
    let number = |key: &str| field(key).and_then(|v| v.parse::<u64>().ok());
    match (field("directory"), number("entries"), number("bytes")) {
        (Some(dir), Some(entries), Some(bytes)) => Ok(CacheInfo {
            directory: PathBuf::from(dir),
            entries,
            bytes,
        }),
        _ => Err(Error::new(
            Code::Internal,
            format!("grp_cache_info returned text this crate cannot read: {text:?}"),
        )),
    }
}

/// Deletes every entry of the kernel cache (and leftover temporary files); the folder and
/// anything else in it stay (`grp_cache_clear`). [`Code::Io`] when the folder cannot be placed,
/// created or listed, or an entry cannot be deleted.
pub fn cache_clear() -> Result<()> {
    unsafe { check(ffi::grp_cache_clear()) }
}

/// A kernel-build progress callback: `(kernels done, kernels to build)`.
pub type BuildProgress = Box<dyn Fn(usize, usize) + Send + Sync>;

static BUILD_PROGRESS: Mutex<Option<BuildProgress>> = Mutex::new(None);

unsafe extern "C" fn build_progress_trampoline(_user: *mut c_void, done: usize, total: usize) {
    // A panic must not unwind into C; the callback is then dropped.
    let result = std::panic::catch_unwind(|| {
        let guard = BUILD_PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = guard.as_ref() {
            f(done, total);
        }
    });
    if result.is_err() {
        *BUILD_PROGRESS.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Calls `f(done, total)` as kernel builds (NVRTC) progress: session creation on the CUDA backend,
/// [`Model::write_kernel_bundle`]; kernels from the kernel cache or a bundle count too, and builds
/// running at once add up into one count (`grp_set_build_progress`, grape.h). `f` runs on the
/// building threads while Grape holds a lock: it must return quickly and must not call into Grape.
/// Process-wide; `None` removes it.
pub fn set_build_progress(f: Option<BuildProgress>) {
    // Grape calls the trampoline holding its own lock, and the trampoline takes BUILD_PROGRESS:
    // so BUILD_PROGRESS is never held while calling into Grape (no lock-order inversion).
    match f {
        Some(f) => {
            *BUILD_PROGRESS.lock().unwrap_or_else(|e| e.into_inner()) = Some(f);
            unsafe { ffi::grp_set_build_progress(Some(build_progress_trampoline), std::ptr::null_mut()) };
        }
        None => {
            unsafe { ffi::grp_set_build_progress(None, std::ptr::null_mut()) };
            *BUILD_PROGRESS.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }
}

/// The executable that serves NVRTC compile workers (`grp_set_compile_worker`, grape.h): builds of
/// several kernels then compile in worker processes of it, which is faster on many cores; `None`
/// unsets it (compiles on threads, unless `$GRAPE_COMPILE_WORKER` names one). The path of an
/// installed `grape`, or this program's own executable when its `main` starts with
/// [`run_compile_worker_if_asked`]. Errors: [`Code::InvalidArgument`] for a path with a NUL byte.
pub fn set_compile_worker(executable: Option<&Path>) -> Result<()> {
    match executable {
        Some(p) => {
            let c = path_c_string(p)?;
            unsafe { ffi::grp_set_compile_worker(c.as_ptr()) };
        }
        None => unsafe { ffi::grp_set_compile_worker(std::ptr::null()) },
    }
    Ok(())
}

/// When this process was started as a compile worker (its first argument is
/// `ffi::GRP_COMPILE_WORKER_ARG`), serves the build that started it and returns `Some(exit
/// status)`, which `main` should exit with at once; otherwise `None` (`grp_compile_worker_main`).
pub fn run_compile_worker_if_asked() -> Option<i32> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.len() < 2 || args[1] != ffi::GRP_COMPILE_WORKER_ARG {
        return None;
    }
    let owned: Vec<CString> = args
        .iter()
        .map(|a| {
            use std::os::unix::ffi::OsStrExt;
            CString::new(a.as_bytes()).unwrap_or_default()
        })
        .collect();
    let mut argv: Vec<*mut c_char> = owned.iter().map(|c| c.as_ptr() as *mut c_char).collect();
    argv.push(std::ptr::null_mut());
    Some(unsafe { ffi::grp_compile_worker_main(owned.len() as std::os::raw::c_int, argv.as_mut_ptr()) })
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
