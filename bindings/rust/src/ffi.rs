//! Raw declarations of grape.h (GRAPE_VERSION_NUMBER 1000), written by hand.
//!
//! C enums are `int`-sized on every ABI Grape supports, so they are declared as `c_int` aliases
//! with constants rather than Rust enums: a value the library returns that this file does not know
//! (a code added by a newer library) must not be undefined behaviour.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_uint, c_void};

/// grape.h's GRP_COMPILE_WORKER_ARG: argv[1] of a compile worker process.
pub const GRP_COMPILE_WORKER_ARG: &str = "--grape-compile-worker";

pub const GRAPE_VERSION_MAJOR: u32 = 0;
pub const GRAPE_VERSION_MINOR: u32 = 1;
pub const GRAPE_VERSION_PATCH: u32 = 0;
pub const GRAPE_VERSION_NUMBER: u32 = 1000;
pub const GRAPE_VERSION_STRING: &str = "0.1.0";

// ---- errors --------------------------------------------------------------------------------

#[repr(C)]
pub struct grp_error {
    _private: [u8; 0],
}

pub type grp_code = c_int;
pub const GRP_OK: grp_code = 0;
pub const GRP_ERR_INVALID_ARGUMENT: grp_code = 1;
pub const GRP_ERR_SYNTAX: grp_code = 2;
pub const GRP_ERR_TYPE: grp_code = 3;
pub const GRP_ERR_IO: grp_code = 4;
pub const GRP_ERR_FORMAT: grp_code = 5;
pub const GRP_ERR_UNSUPPORTED: grp_code = 6;
pub const GRP_ERR_NO_DEVICE: grp_code = 7;
pub const GRP_ERR_DEVICE: grp_code = 8;
pub const GRP_ERR_OUT_OF_MEMORY: grp_code = 9;
pub const GRP_ERR_INTERNAL: grp_code = 10;
pub const GRP_ERR_INTERRUPTED: grp_code = 11;

// ---- element types -------------------------------------------------------------------------

pub type grp_dtype = c_int;
pub const GRP_F32: grp_dtype = 0;
pub const GRP_F16: grp_dtype = 1;
pub const GRP_BF16: grp_dtype = 2;
pub const GRP_I32: grp_dtype = 3;
pub const GRP_I64: grp_dtype = 4;
pub const GRP_BOOL: grp_dtype = 5;

// ---- handles -------------------------------------------------------------------------------

#[repr(C)]
pub struct grp_model {
    _private: [u8; 0],
}

#[repr(C)]
pub struct grp_session {
    _private: [u8; 0],
}

/// grape.h's grp_kernel_profile (first version).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct grp_kernel_profile {
    pub struct_size: usize,
    pub name: *const c_char,
    pub op: *const c_char,
    pub where_: *const c_char,
    pub grid: c_uint,
    pub block: c_uint,
    pub launches: i64,
    pub total_ms: f64,
    pub bytes: f64,
    pub flops: f64,
}

/// grape.h's grp_run_stats (every field up to plan). The library fills only the fields
/// `struct_size` covers.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct grp_run_stats {
    pub struct_size: usize,
    pub kernels: i64,
    pub host_syncs: i64,
    pub device_ms: f64,
    pub device_bytes: usize,
    pub compile_ms: f64,
    /// Appended after the first version:
    pub executor: *const c_char,
    pub graph_launches: i64,
    pub graphs: usize,
    pub param_uploads: i64,
    /// Appended in 0.2.0:
    pub auto_state: *const c_char,
    /// Appended with shape buckets:
    pub graph_bytes: usize,
    pub graph_updates: i64,
    /// Appended with autotuning:
    pub kernels_tuned: usize,
    pub kernels_retuned: usize,
    pub tuning_ms: f64,
    /// Appended with the decoder plan:
    pub plan: *const c_char,
}

/// grape.h's grp_auto_decision (first version).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct grp_auto_decision {
    pub struct_size: usize,
    pub bucket: *const c_char,
    pub executor: *const c_char,
    pub reason: *const c_char,
    pub calls: i64,
    pub measured_calls: i64,
    pub calls_to_decide: i64,
    pub eager_ms: *const f64,
    pub eager_count: usize,
    pub graph_ms: *const f64,
    pub graph_count: usize,
    pub eager_median_ms: f64,
    pub graph_median_ms: f64,
}

#[repr(C)]
pub struct grp_tensor {
    _private: [u8; 0],
}

// ---- options -------------------------------------------------------------------------------

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct grp_model_options {
    pub struct_size: usize,
    pub defines: *const *const c_char,
    pub num_defines: usize,
    pub no_optimize: c_int,
    pub require_loop_bounds: c_int,
    /// Appended in 0.1.0: compiler resource limits, each "NAME=N" (NULL / 0: the defaults).
    pub limits: *const *const c_char,
    pub num_limits: usize,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct grp_session_options {
    pub struct_size: usize,
    pub entry: *const c_char,
    pub backend: *const c_char,
    pub executor: *const c_char,
    pub device: c_int,
    /// Appended in 0.1.0: trips of a loop without `max` (0: the default), wall-clock seconds per run (0: none).
    pub max_loop_trips: i64,
    pub timeout_seconds: f64,
    /// Appended with shape buckets (zero/NULL: the default): "S=pow2;T=16,64,256;B=exact", and the
    /// device memory instantiated CUDA graphs may hold.
    pub buckets: *const c_char,
    pub graph_memory_bytes: i64,
}

/// `grp_build_progress_fn`: (user, kernels done, kernels to build).
pub type grp_build_progress_fn = Option<unsafe extern "C" fn(user: *mut c_void, done: usize, total: usize)>;

extern "C" {
    // version
    pub fn grp_version_number() -> u32;
    pub fn grp_version_string() -> *const c_char;

    // errors
    pub fn grp_error_code(e: *const grp_error) -> grp_code;
    pub fn grp_error_message(e: *const grp_error) -> *const c_char;
    pub fn grp_error_location(e: *const grp_error, file: *mut *const c_char, line: *mut u32, column: *mut u32)
        -> c_int;
    pub fn grp_error_free(e: *mut grp_error);
    pub fn grp_free(p: *mut c_void);

    // element types
    pub fn grp_dtype_size(dtype: grp_dtype) -> usize;
    pub fn grp_dtype_name(dtype: grp_dtype) -> *const c_char;

    // models
    pub fn grp_model_options_init(opts: *mut grp_model_options, struct_size: usize);
    pub fn grp_model_load_file(
        path: *const c_char,
        opts: *const grp_model_options,
        out: *mut *mut grp_model,
    ) -> *mut grp_error;
    pub fn grp_model_load_source(
        src: *const c_char,
        len: usize,
        name: *const c_char,
        opts: *const grp_model_options,
        out: *mut *mut grp_model,
    ) -> *mut grp_error;
    pub fn grp_model_set_weights_file(m: *mut grp_model, safetensors_path: *const c_char) -> *mut grp_error;
    pub fn grp_model_set_weights_memory(
        m: *mut grp_model,
        data: *const c_void,
        nbytes: usize,
        name: *const c_char,
    ) -> *mut grp_error;
    pub fn grp_model_set_random_weights(m: *mut grp_model, seed: u64) -> *mut grp_error;
    pub fn grp_model_destroy(m: *mut grp_model);
    pub fn grp_model_num_entries(m: *const grp_model) -> usize;
    pub fn grp_model_entry_name(m: *const grp_model, i: usize) -> *const c_char;
    pub fn grp_model_num_weights(m: *const grp_model) -> usize;
    pub fn grp_model_weight_name(m: *const grp_model, i: usize) -> *const c_char;
    pub fn grp_model_weight_info(
        m: *const grp_model,
        i: usize,
        dtype: *mut grp_dtype,
        shape: *mut *const i64,
        rank: *mut usize,
    ) -> *mut grp_error;
    pub fn grp_model_has_weights(m: *const grp_model) -> c_int;
    pub fn grp_model_ir_text(m: *const grp_model, entry: *const c_char, out: *mut *mut c_char) -> *mut grp_error;

    // ahead-of-time kernel bundles
    pub fn grp_kernel_bundle_write(
        m: *const grp_model,
        archs: *const c_char,
        path: *const c_char,
        report: *mut *mut c_char,
    ) -> *mut grp_error;
    pub fn grp_kernel_bundle_write_rows(
        m: *const grp_model,
        archs: *const c_char,
        rows: *const c_char,
        path: *const c_char,
        report: *mut *mut c_char,
    ) -> *mut grp_error;
    pub fn grp_kernel_bundle_use(path: *const c_char) -> *mut grp_error;
    pub fn grp_model_compile_kernels(
        m: *const grp_model,
        archs: *const c_char,
        report: *mut *mut c_char,
    ) -> *mut grp_error;
    pub fn grp_set_build_progress(fn_: grp_build_progress_fn, user: *mut c_void);
    pub fn grp_set_compile_worker(executable: *const c_char);
    pub fn grp_compile_worker_main(argc: c_int, argv: *mut *mut c_char) -> c_int;

    // sessions
    pub fn grp_session_options_init(opts: *mut grp_session_options, struct_size: usize);
    pub fn grp_session_create(
        m: *mut grp_model,
        opts: *const grp_session_options,
        out: *mut *mut grp_session,
    ) -> *mut grp_error;
    pub fn grp_session_destroy(s: *mut grp_session);
    pub fn grp_session_num_inputs(s: *const grp_session) -> usize;
    pub fn grp_session_input_name(s: *const grp_session, i: usize) -> *const c_char;
    pub fn grp_session_num_outputs(s: *const grp_session) -> usize;
    pub fn grp_session_output_name(s: *const grp_session, i: usize) -> *const c_char;
    pub fn grp_session_input_index(s: *const grp_session, name: *const c_char, out: *mut usize) -> *mut grp_error;
    pub fn grp_session_input_info(
        s: *const grp_session,
        i: usize,
        dtype: *mut grp_dtype,
        rank: *mut usize,
        dims: *mut *const i64,
        dim_exprs: *mut *const *const c_char,
    ) -> *mut grp_error;
    pub fn grp_session_output_info(
        s: *const grp_session,
        i: usize,
        dtype: *mut grp_dtype,
        rank: *mut usize,
        dims: *mut *const i64,
        dim_exprs: *mut *const *const c_char,
    ) -> *mut grp_error;
    pub fn grp_session_set_input(
        s: *mut grp_session,
        name: *const c_char,
        dtype: grp_dtype,
        shape: *const i64,
        rank: usize,
        data: *const c_void,
        nbytes: usize,
    ) -> *mut grp_error;
    pub fn grp_session_input_buffer(
        s: *mut grp_session,
        name: *const c_char,
        dtype: grp_dtype,
        shape: *const i64,
        rank: usize,
        data: *mut *mut c_void,
        nbytes: *mut usize,
    ) -> *mut grp_error;
    pub fn grp_session_bind_input(
        s: *mut grp_session,
        name: *const c_char,
        dtype: grp_dtype,
        shape: *const i64,
        rank: usize,
        data: *const c_void,
        nbytes: usize,
    ) -> *mut grp_error;
    pub fn grp_session_input_device_buffer(
        s: *mut grp_session,
        name: *const c_char,
        dtype: grp_dtype,
        shape: *const i64,
        rank: usize,
        data: *mut *mut c_void,
        nbytes: *mut usize,
    ) -> *mut grp_error;
    pub fn grp_session_bind_output(s: *mut grp_session, i: usize, data: *mut c_void, capacity: usize)
        -> *mut grp_error;
    pub fn grp_session_set_stream(s: *mut grp_session, stream: *mut c_void) -> *mut grp_error;
    pub fn grp_session_run(s: *mut grp_session) -> *mut grp_error;
    pub fn grp_session_interrupt(s: *mut grp_session);
    pub fn grp_session_get_output(
        s: *mut grp_session,
        i: usize,
        dtype: *mut grp_dtype,
        shape: *mut *const i64,
        rank: *mut usize,
        data: *mut *const c_void,
        nbytes: *mut usize,
    ) -> *mut grp_error;
    pub fn grp_session_reset_state(s: *mut grp_session) -> *mut grp_error;
    pub fn grp_session_set_profiling(s: *mut grp_session, on: c_int) -> *mut grp_error;
    pub fn grp_session_kernel_profile(s: *mut grp_session, runs: *mut i64, count: *mut usize) -> *mut grp_error;
    pub fn grp_session_kernel_profile_at(
        s: *const grp_session,
        i: usize,
        out: *mut grp_kernel_profile,
    ) -> *mut grp_error;
    pub fn grp_session_num_states(s: *const grp_session) -> usize;
    pub fn grp_session_state_name(s: *const grp_session, i: usize) -> *const c_char;
    pub fn grp_session_get_state(
        s: *mut grp_session,
        name: *const c_char,
        dtype: *mut grp_dtype,
        shape: *mut *const i64,
        rank: *mut usize,
        data: *mut *const c_void,
        nbytes: *mut usize,
    ) -> *mut grp_error;
    pub fn grp_session_set_state(
        s: *mut grp_session,
        name: *const c_char,
        dtype: grp_dtype,
        shape: *const i64,
        rank: usize,
        data: *const c_void,
        nbytes: usize,
    ) -> *mut grp_error;

    // backends and run statistics
    pub fn grp_backend_available(backend: *const c_char) -> c_int;
    pub fn grp_session_backend(s: *const grp_session) -> *const c_char;
    pub fn grp_session_fallback_reason(s: *const grp_session) -> *const c_char;
    pub fn grp_session_last_run_stats(s: *const grp_session, out: *mut grp_run_stats) -> *mut grp_error;

    // executor "auto": its decisions
    pub fn grp_session_auto_decisions(s: *mut grp_session, count: *mut usize) -> *mut grp_error;
    pub fn grp_session_auto_decision_at(s: *const grp_session, i: usize, out: *mut grp_auto_decision)
        -> *mut grp_error;

    // the on-disk kernel cache
    pub fn grp_cache_info(out: *mut *mut c_char) -> *mut grp_error;
    pub fn grp_cache_clear() -> *mut grp_error;

    // host tensors and .npy files
    pub fn grp_tensor_read_npy(path: *const c_char, out: *mut *mut grp_tensor) -> *mut grp_error;
    pub fn grp_tensor_create(
        dtype: grp_dtype,
        shape: *const i64,
        rank: usize,
        data: *const c_void,
        nbytes: usize,
        out: *mut *mut grp_tensor,
    ) -> *mut grp_error;
    pub fn grp_tensor_destroy(t: *mut grp_tensor);
    pub fn grp_tensor_dtype(t: *const grp_tensor) -> grp_dtype;
    pub fn grp_tensor_rank(t: *const grp_tensor) -> usize;
    pub fn grp_tensor_shape(t: *const grp_tensor) -> *const i64;
    pub fn grp_tensor_data(t: *const grp_tensor) -> *const c_void;
    pub fn grp_tensor_nbytes(t: *const grp_tensor) -> usize;
    pub fn grp_npy_write(
        path: *const c_char,
        dtype: grp_dtype,
        shape: *const i64,
        rank: usize,
        data: *const c_void,
        nbytes: usize,
    ) -> *mut grp_error;
}

/// grape.h's inline grp_model_default_options(): the defaults, `struct_size` being the size of
/// this mirror of the struct (the library writes exactly that many bytes).
pub fn model_default_options() -> grp_model_options {
    let mut o = std::mem::MaybeUninit::<grp_model_options>::zeroed();
    // SAFETY: the library writes size_of::<grp_model_options>() bytes; all-zero is a valid value.
    unsafe {
        grp_model_options_init(o.as_mut_ptr(), std::mem::size_of::<grp_model_options>());
        o.assume_init()
    }
}

/// grape.h's inline grp_session_default_options(), as model_default_options().
pub fn session_default_options() -> grp_session_options {
    let mut o = std::mem::MaybeUninit::<grp_session_options>::zeroed();
    // SAFETY: as in model_default_options.
    unsafe {
        grp_session_options_init(o.as_mut_ptr(), std::mem::size_of::<grp_session_options>());
        o.assume_init()
    }
}

#[cfg(test)]
mod layout {
    use super::*;
    use std::mem::{offset_of, size_of};

    // The layouts grape.h gives these structs on LP64 targets.
    #[test]
    fn option_structs_match_the_header() {
        assert_eq!(offset_of!(grp_model_options, defines), 8);
        assert_eq!(offset_of!(grp_model_options, num_defines), 16);
        assert_eq!(offset_of!(grp_model_options, no_optimize), 24);
        assert_eq!(offset_of!(grp_model_options, require_loop_bounds), 28);
        assert_eq!(offset_of!(grp_model_options, limits), 32);
        assert_eq!(offset_of!(grp_model_options, num_limits), 40);
        assert_eq!(size_of::<grp_model_options>(), 48);
        assert_eq!(offset_of!(grp_session_options, executor), 24);
        assert_eq!(offset_of!(grp_session_options, device), 32);
        assert_eq!(offset_of!(grp_session_options, max_loop_trips), 40);
        assert_eq!(offset_of!(grp_session_options, timeout_seconds), 48);
        assert_eq!(offset_of!(grp_session_options, buckets), 56);
        assert_eq!(offset_of!(grp_session_options, graph_memory_bytes), 64);
        assert_eq!(size_of::<grp_session_options>(), 72);
    }

    #[test]
    fn result_structs_match_the_header() {
        assert_eq!(offset_of!(grp_run_stats, kernels), 8);
        assert_eq!(offset_of!(grp_run_stats, compile_ms), 40);
        assert_eq!(offset_of!(grp_run_stats, executor), 48);
        assert_eq!(offset_of!(grp_run_stats, param_uploads), 72);
        assert_eq!(offset_of!(grp_run_stats, auto_state), 80);
        assert_eq!(offset_of!(grp_run_stats, graph_bytes), 88);
        assert_eq!(offset_of!(grp_run_stats, graph_updates), 96);
        assert_eq!(offset_of!(grp_run_stats, kernels_tuned), 104);
        assert_eq!(offset_of!(grp_run_stats, kernels_retuned), 112);
        assert_eq!(offset_of!(grp_run_stats, tuning_ms), 120);
        assert_eq!(offset_of!(grp_run_stats, plan), 128);
        assert_eq!(size_of::<grp_run_stats>(), 136);
        assert_eq!(offset_of!(grp_auto_decision, bucket), 8);
        assert_eq!(offset_of!(grp_auto_decision, calls), 32);
        assert_eq!(offset_of!(grp_auto_decision, eager_ms), 56);
        assert_eq!(offset_of!(grp_auto_decision, graph_count), 80);
        assert_eq!(offset_of!(grp_auto_decision, graph_median_ms), 96);
        assert_eq!(size_of::<grp_auto_decision>(), 104);
        assert_eq!(offset_of!(grp_kernel_profile, flops), 64);
        assert_eq!(size_of::<grp_kernel_profile>(), 72);
    }

    #[test]
    fn default_options_report_this_layout() {
        assert_eq!(model_default_options().struct_size, size_of::<grp_model_options>());
        assert_eq!(session_default_options().struct_size, size_of::<grp_session_options>());
        assert!(model_default_options().limits.is_null());
        assert!(!session_default_options().backend.is_null());
    }
}
