//! `Model`: a compiled .grp program plus its weights (`grp_model`).

use std::ffi::CString;
use std::os::raw::c_char;
use std::path::Path;
use std::ptr::{self, NonNull};

use crate::dtype::DType;
use crate::error::{c_string, check, lossy, Code, Error, Result};
use crate::ffi;
use crate::session::{Session, SessionOptions};
use crate::tensor::{c_slice, data_ptr};

/// How to compile a program: const overrides (`-D NAME=VALUE`) and front-end switches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelOptions {
    /// Const overrides, in order; a later entry for the same name wins.
    pub defines: Vec<(String, i64)>,
    /// Keep the IR exactly as lowered (no constant folding, CSE, dead-code elimination).
    pub no_optimize: bool,
    /// Reject device loops without a compile-time trip bound (`while ... max N`).
    pub require_loop_bounds: bool,
    /// Compiler resource limits to set, in order, as `(NAME, N)` (`--limit NAME=N` of the CLI):
    /// max_ops, max_unrolled_iterations, max_call_depth, max_weights, max_tensor_elements,
    /// max_program_elements, max_loop_trips (docs/language.md, "Limits"). They win over
    /// `$GRAPE_LIMITS`; a later entry for the same name wins; an unknown name makes loading fail
    /// with [`Code::InvalidArgument`].
    pub limits: Vec<(String, u64)>,
}

impl ModelOptions {
    pub fn new() -> ModelOptions {
        ModelOptions::default()
    }

    /// Overrides const `name` (which the program must declare) with `value`.
    pub fn define(mut self, name: impl Into<String>, value: i64) -> ModelOptions {
        self.defines.push((name.into(), value));
        self
    }

    pub fn no_optimize(mut self, yes: bool) -> ModelOptions {
        self.no_optimize = yes;
        self
    }

    pub fn require_loop_bounds(mut self, yes: bool) -> ModelOptions {
        self.require_loop_bounds = yes;
        self
    }

    /// Sets compiler resource limit `name` (e.g. "max_ops") to `value`.
    pub fn limit(mut self, name: impl Into<String>, value: u64) -> ModelOptions {
        self.limits.push((name.into(), value));
        self
    }

    /// Calls `f` with the C struct; the strings it points to live until `f` returns.
    fn with_raw<R>(&self, f: impl FnOnce(&ffi::grp_model_options) -> R) -> Result<R> {
        let defines = self
            .defines
            .iter()
            .map(|(name, value)| c_string(&format!("{name}={value}"), "define"))
            .collect::<Result<Vec<CString>>>()?;
        let limits = self
            .limits
            .iter()
            .map(|(name, value)| c_string(&format!("{name}={value}"), "limit"))
            .collect::<Result<Vec<CString>>>()?;
        let pointers: Vec<*const c_char> = defines.iter().map(|d| d.as_ptr()).collect();
        let limit_pointers: Vec<*const c_char> = limits.iter().map(|d| d.as_ptr()).collect();
        let array = |p: &Vec<*const c_char>| if p.is_empty() { ptr::null() } else { p.as_ptr() };
        let mut raw = ffi::model_default_options();
        raw.defines = array(&pointers);
        raw.num_defines = pointers.len();
        raw.limits = array(&limit_pointers);
        raw.num_limits = limit_pointers.len();
        raw.no_optimize = self.no_optimize as _;
        raw.require_loop_bounds = self.require_loop_bounds as _;
        Ok(f(&raw))
    }
}

/// A declared weight: full name (prefix applied), dtype and concrete shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightInfo {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<i64>,
}

/// A compiled program and its weights.
///
/// Immutable once loaded except for its weights, and setting weights is thread-safe in libgrape
/// (sessions take a snapshot when created), so a `Model` is `Send + Sync` and the weight setters
/// take `&self`: share one through an `Arc` and give each thread its own [`Session`]. Sessions keep
/// what they need alive, so a `Model` may be dropped before its sessions.
pub struct Model {
    raw: NonNull<ffi::grp_model>,
}

// SAFETY: grape.h, THREADS: "A grp_model is immutable once its weights are set and may be shared
// by any number of threads and sessions. Setting weights is itself thread-safe".
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

fn check_library_version() -> Result<()> {
    let loaded = crate::version();
    if loaded < ffi::GRAPE_VERSION_NUMBER {
        return Err(Error::new(
            Code::Unsupported,
            format!(
                "libgrape {} is older than the grape.h these bindings were written for ({})",
                crate::version_string(),
                ffi::GRAPE_VERSION_STRING
            ),
        ));
    }
    Ok(())
}

impl Model {
    fn from_out(out: *mut ffi::grp_model) -> Result<Model> {
        NonNull::new(out)
            .map(|raw| Model { raw })
            .ok_or_else(|| Error::new(Code::Internal, "libgrape returned success but no model"))
    }

    /// Loads, checks and compiles a .grp file.
    pub fn load_file(path: impl AsRef<Path>, opts: &ModelOptions) -> Result<Model> {
        check_library_version()?;
        let path = crate::path_c_string(path.as_ref())?;
        let mut out = ptr::null_mut();
        opts.with_raw(|o| unsafe { check(ffi::grp_model_load_file(path.as_ptr(), o, &mut out)) })??;
        Model::from_out(out)
    }

    /// Compiles `source`; diagnostics name it `name` (e.g. "model.grp").
    pub fn load_source(source: &str, name: &str, opts: &ModelOptions) -> Result<Model> {
        check_library_version()?;
        let name = c_string(name, "name")?;
        let mut out = ptr::null_mut();
        opts.with_raw(|o| unsafe {
            check(ffi::grp_model_load_source(
                source.as_ptr().cast(),
                source.len(),
                name.as_ptr(),
                o,
                &mut out,
            ))
        })??;
        Model::from_out(out)
    }

    pub(crate) fn as_ptr(&self) -> *mut ffi::grp_model {
        self.raw.as_ptr()
    }

    /// Weights from a safetensors file (every declared weight, with its declared dtype and
    /// shape). On failure the previous weights stay.
    pub fn set_weights_file(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = crate::path_c_string(path.as_ref())?;
        unsafe { check(ffi::grp_model_set_weights_file(self.as_ptr(), path.as_ptr())) }
    }

    /// Weights from the bytes of a safetensors file (copied). `name` is used in errors.
    pub fn set_weights_memory(&self, safetensors: &[u8], name: &str) -> Result<()> {
        let name = c_string(name, "name")?;
        unsafe {
            check(ffi::grp_model_set_weights_memory(
                self.as_ptr(),
                data_ptr(safetensors),
                safetensors.len(),
                name.as_ptr(),
            ))
        }
    }

    /// Deterministic random weights: each element a function of (seed, weight name, index).
    pub fn set_random_weights(&self, seed: u64) -> Result<()> {
        unsafe { check(ffi::grp_model_set_random_weights(self.as_ptr(), seed)) }
    }

    /// Whether sessions can be created: weights are set, or the model declares none.
    pub fn has_weights(&self) -> bool {
        unsafe { ffi::grp_model_has_weights(self.as_ptr()) != 0 }
    }

    /// The entry points, in declaration order.
    pub fn entry_names(&self) -> Vec<String> {
        let m = self.as_ptr();
        let n = unsafe { ffi::grp_model_num_entries(m) };
        (0..n)
            .map(|i| unsafe { lossy(ffi::grp_model_entry_name(m, i)) })
            .collect()
    }

    /// The declared weights, in declaration order.
    pub fn weights(&self) -> Result<Vec<WeightInfo>> {
        let m = self.as_ptr();
        let n = unsafe { ffi::grp_model_num_weights(m) };
        (0..n)
            .map(|i| {
                let (mut dtype, mut shape, mut rank) = (0, ptr::null(), 0usize);
                unsafe { check(ffi::grp_model_weight_info(m, i, &mut dtype, &mut shape, &mut rank))? };
                Ok(WeightInfo {
                    name: unsafe { lossy(ffi::grp_model_weight_name(m, i)) },
                    dtype: DType::from_raw(dtype)
                        .ok_or_else(|| Error::new(Code::Internal, format!("weight {i}: unknown dtype {dtype}")))?,
                    // SAFETY: `rank` dims, valid while the model lives; copied here.
                    shape: unsafe { c_slice(shape, rank) }.to_vec(),
                })
            })
            .collect()
    }

    /// The predicated IR as text (what `grape ir` prints): of one entry, or of the whole module.
    pub fn ir_text(&self, entry: Option<&str>) -> Result<String> {
        let entry = entry.map(|e| c_string(e, "entry")).transpose()?;
        let mut out: *mut c_char = ptr::null_mut();
        unsafe {
            check(ffi::grp_model_ir_text(
                self.as_ptr(),
                entry.as_ref().map_or(ptr::null(), |e| e.as_ptr()),
                &mut out,
            ))?;
            let text = lossy(out);
            ffi::grp_free(out.cast());
            Ok(text)
        }
    }

    /// Compiles every CUDA kernel of the model with NVRTC for `archs` ("sm_90", "sm_80,sm_90") and
    /// writes them to the file `path`, an ahead-of-time kernel bundle (docs/kernels.md, "Kernel
    /// bundles"); returns the compile report. Needs NVRTC, not a GPU.
    pub fn write_kernel_bundle(&self, archs: &str, path: &str) -> Result<String> {
        self.write_kernel_bundle_rows(archs, "", path)
    }

    /// The same, and for each row count of `rows` ("1,5,8", each 1..16; "" for none) the variants
    /// of the matrix products whose row count is a runtime dim (decode's batch) compiled for that
    /// count, which a session otherwise compiles at its first run with that many rows
    /// (`grp_kernel_bundle_write_rows`). [`Code::InvalidArgument`] names a bad count.
    pub fn write_kernel_bundle_rows(&self, archs: &str, rows: &str, path: &str) -> Result<String> {
        let archs = c_string(archs, "archs")?;
        let rows = c_string(rows, "rows")?;
        let path = c_string(path, "path")?;
        let mut out: *mut c_char = ptr::null_mut();
        unsafe {
            check(ffi::grp_kernel_bundle_write_rows(
                self.as_ptr(),
                archs.as_ptr(),
                rows.as_ptr(),
                path.as_ptr(),
                &mut out,
            ))?;
            let text = lossy(out);
            ffi::grp_free(out.cast());
            Ok(text)
        }
    }

    /// Generates the CUDA kernels of every entry and compiles each with NVRTC for every target of
    /// `archs`, a comma-separated list of "sm_NN" (cubin) or "compute_NN" (PTX only) names, e.g.
    /// "sm_80,sm_90" (`grp_model_compile_kernels`): an ahead-of-time check that every kernel
    /// compiles. Needs the NVRTC library, not a GPU; the kernel cache is neither read nor written.
    /// Returns a short report: the targets, each entry with its number of kernels, the total
    /// number of compiles. Errors: [`Code::InvalidArgument`] for an `archs` list that is empty,
    /// malformed or names a target this NVRTC cannot compile for; [`Code::NoDevice`] when no NVRTC
    /// library can be loaded; [`Code::Internal`] when a kernel fails to compile or compiles with
    /// warnings (the message lists each, with its entry, kernel, op and `file:line:col`).
    pub fn compile_kernels(&self, archs: &str) -> Result<String> {
        let archs = c_string(archs, "archs")?;
        let mut out: *mut c_char = ptr::null_mut();
        unsafe {
            check(ffi::grp_model_compile_kernels(self.as_ptr(), archs.as_ptr(), &mut out))?;
            let text = lossy(out);
            ffi::grp_free(out.cast());
            Ok(text)
        }
    }

    /// A session of one entry point (shorthand for [`Session::new`]).
    pub fn session(&self, opts: &SessionOptions) -> Result<Session> {
        Session::new(self, opts)
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        unsafe { ffi::grp_model_destroy(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("entries", &self.entry_names()).finish()
    }
}
