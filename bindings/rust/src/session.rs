//! `Session`: runs one entry point of a model and owns its inputs, outputs and state
//! (`grp_session`).

use std::ffi::CString;
use std::fmt;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_void};
use std::ptr::{self, NonNull};

use crate::dtype::{DType, Element};
use crate::error::{c_string, check, lossy, Code, Error, Result};
use crate::ffi;
use crate::model::Model;
use crate::tensor::{as_bytes, c_slice, check_bytes, check_len, data_ptr, element_count, TensorView};

/// Which entry to run, and where. Unset fields take libgrape's defaults ("main", "auto",
/// "auto", device 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionOptions {
    pub entry: Option<String>,
    /// "auto" | "cpu" | "cuda".
    pub backend: Option<String>,
    /// "auto" | "eager" | "graph" | "mono" | "dataflow" (the CPU backend accepts only "auto").
    pub executor: Option<String>,
    /// CUDA device ordinal; 0 on the CPU backend.
    pub device: i32,
    /// Shape buckets per symbolic dim for the CUDA graph executor and "auto", e.g.
    /// "S=pow2;T=16,64,256;B=exact" (docs/execution.md, "Shape buckets"); None: pow2 for every dim.
    /// Checked on every backend.
    pub buckets: Option<String>,
    /// Device memory the instantiated CUDA graphs may hold before the least recently used is
    /// evicted; 0: the default (1 GiB).
    pub graph_memory_bytes: i64,
}

impl SessionOptions {
    pub fn new() -> SessionOptions {
        SessionOptions::default()
    }
    pub fn entry(mut self, entry: impl Into<String>) -> SessionOptions {
        self.entry = Some(entry.into());
        self
    }
    pub fn backend(mut self, backend: impl Into<String>) -> SessionOptions {
        self.backend = Some(backend.into());
        self
    }
    pub fn executor(mut self, executor: impl Into<String>) -> SessionOptions {
        self.executor = Some(executor.into());
        self
    }
    pub fn device(mut self, device: i32) -> SessionOptions {
        self.device = device;
        self
    }
    pub fn buckets(mut self, buckets: impl Into<String>) -> SessionOptions {
        self.buckets = Some(buckets.into());
        self
    }
    pub fn graph_memory_bytes(mut self, bytes: i64) -> SessionOptions {
        self.graph_memory_bytes = bytes;
        self
    }
}

/// One dim of a declared tensor type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dim {
    /// The size, or None where the dim is symbolic (bound by the inputs of a run).
    pub size: Option<i64>,
    /// The dim as declared: "768", "B", "S+1".
    pub expr: String,
}

/// The declared type of an input or output of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: DType,
    pub dims: Vec<Dim>,
}

impl fmt::Display for TensorInfo {
    /// As declared: `x: f16[B, 784]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<&str> = self.dims.iter().map(|d| d.expr.as_str()).collect();
        write!(f, "{}: {}[{}]", self.name, self.dtype, dims.join(", "))
    }
}

type InfoFn = unsafe extern "C" fn(
    *const ffi::grp_session,
    usize,
    *mut ffi::grp_dtype,
    *mut usize,
    *mut *const i64,
    *mut *const *const c_char,
) -> *mut ffi::grp_error;

/// A session of one entry point: set inputs, run, read outputs; the model's state (KV caches,
/// counters) persists across runs.
///
/// `Send` (a session may move between threads) but not `Sync` (one thread at a time). Outputs
/// and states are borrowed views that live until the next `&mut self` call, which is what
/// grape.h promises ("valid until the next run, reset_state or set_state").
///
/// An output cannot be held across a run:
/// ```compile_fail
/// # fn f(s: &mut grape::Session) -> grape::Result<()> {
/// let out = s.output(0)?;
/// s.run()?; // error: `*s` is borrowed by `out`
/// println!("{:?}", out.shape());
/// # Ok(()) }
/// ```
/// nor an input buffer across any other call:
/// ```compile_fail
/// # fn f(s: &mut grape::Session) -> grape::Result<()> {
/// let buf = s.input_buffer::<f32>("x", &[4])?;
/// s.run()?;
/// buf[0] = 1.0;
/// # Ok(()) }
/// ```
/// nor a device input buffer across a run (copy its address out with `as_ptr` instead):
/// ```compile_fail
/// # fn f(s: &mut grape::Session) -> grape::Result<()> {
/// let buf = s.input_device_buffer("x", grape::DType::F32, &[4])?;
/// s.run()?;
/// println!("{:?}", buf.as_ptr());
/// # Ok(()) }
/// ```
/// and a session cannot be shared between threads:
/// ```compile_fail
/// fn shared<T: Sync>() {}
/// shared::<grape::Session>();
/// ```
pub struct Session {
    raw: NonNull<ffi::grp_session>,
}

// SAFETY: grape.h, THREADS: "A grp_session must be used by one thread at a time (it may move
// between threads)". Not Sync: NonNull already makes it !Sync.
unsafe impl Send for Session {}

impl Session {
    /// A session of `opts.entry` (default "main"). `InvalidArgument` when the entry does not
    /// exist or the model declares weights and none are set.
    pub fn new(model: &Model, opts: &SessionOptions) -> Result<Session> {
        let opt = |s: &Option<String>, what| s.as_deref().map(|s| c_string(s, what)).transpose();
        let entry = opt(&opts.entry, "entry")?;
        let backend = opt(&opts.backend, "backend")?;
        let executor = opt(&opts.executor, "executor")?;
        let buckets = opt(&opts.buckets, "buckets")?;
        let p = |s: &Option<CString>| s.as_ref().map_or(ptr::null(), |s| s.as_ptr());
        // The strings outlive the create call.
        let mut raw = ffi::session_default_options();
        raw.entry = p(&entry);
        if backend.is_some() {
            raw.backend = p(&backend);
        }
        if executor.is_some() {
            raw.executor = p(&executor);
        }
        raw.device = opts.device;
        raw.buckets = p(&buckets);
        raw.graph_memory_bytes = opts.graph_memory_bytes;
        let mut out = ptr::null_mut();
        unsafe { check(ffi::grp_session_create(model.as_ptr(), &raw, &mut out))? };
        NonNull::new(out)
            .map(|raw| Session { raw })
            .ok_or_else(|| Error::new(Code::Internal, "libgrape returned success but no session"))
    }

    fn ptr(&self) -> *mut ffi::grp_session {
        self.raw.as_ptr()
    }

    fn infos(
        &self,
        count: usize,
        names: unsafe extern "C" fn(*const ffi::grp_session, usize) -> *const c_char,
        info: InfoFn,
    ) -> Result<Vec<TensorInfo>> {
        (0..count)
            .map(|i| {
                let (mut dtype, mut rank, mut dims, mut exprs) = (0, 0usize, ptr::null(), ptr::null());
                unsafe { check(info(self.ptr(), i, &mut dtype, &mut rank, &mut dims, &mut exprs))? };
                // SAFETY: `rank` elements each, valid while the session lives; copied here.
                let (dims, exprs) = unsafe { (c_slice(dims, rank), c_slice(exprs, rank)) };
                let name = unsafe { lossy(names(self.ptr(), i)) };
                Ok(TensorInfo {
                    dtype: DType::from_raw(dtype)
                        .ok_or_else(|| Error::new(Code::Internal, format!("{name}: unknown dtype {dtype}")))?,
                    dims: (0..rank)
                        .map(|k| Dim {
                            size: dims.get(k).copied().filter(|&d| d >= 0),
                            expr: exprs.get(k).map_or(String::new(), |&e| unsafe { lossy(e) }),
                        })
                        .collect(),
                    name,
                })
            })
            .collect()
    }

    /// The entry's parameters, in order.
    pub fn inputs(&self) -> Result<Vec<TensorInfo>> {
        let n = unsafe { ffi::grp_session_num_inputs(self.ptr()) };
        self.infos(n, ffi::grp_session_input_name, ffi::grp_session_input_info)
    }

    /// The entry's results, in order, named "out0", "out1", ...
    pub fn outputs(&self) -> Result<Vec<TensorInfo>> {
        let n = unsafe { ffi::grp_session_num_outputs(self.ptr()) };
        self.infos(n, ffi::grp_session_output_name, ffi::grp_session_output_info)
    }

    pub fn num_inputs(&self) -> usize {
        unsafe { ffi::grp_session_num_inputs(self.ptr()) }
    }

    pub fn num_outputs(&self) -> usize {
        unsafe { ffi::grp_session_num_outputs(self.ptr()) }
    }

    /// The position of input `name`.
    pub fn input_index(&self, name: &str) -> Result<usize> {
        let name = c_string(name, "input name")?;
        let mut i = 0usize;
        unsafe { check(ffi::grp_session_input_index(self.ptr(), name.as_ptr(), &mut i))? };
        Ok(i)
    }

    /// The declared dtype of input `name`, if there is one.
    fn declared_input_dtype(&self, name: &CString) -> Option<DType> {
        let mut i = 0usize;
        unsafe { check(ffi::grp_session_input_index(self.ptr(), name.as_ptr(), &mut i)).ok()? };
        let mut dtype = 0;
        unsafe {
            check(ffi::grp_session_input_info(
                self.ptr(),
                i,
                &mut dtype,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            ))
            .ok()?
        };
        DType::from_raw(dtype)
    }

    /// Sets input `name` to a copy of `data`, a tensor of `shape`. The dtype is `T`'s (`u16`:
    /// whichever of f16/bf16 the input declares). An input keeps its value across runs until it
    /// is set again.
    pub fn set_input<T: Element>(&mut self, name: &str, shape: &[i64], data: &[T]) -> Result<()> {
        let cname = c_string(name, "input name")?;
        let dtype = T::resolve(self.declared_input_dtype(&cname));
        check_len(&format!("input '{name}'"), dtype, shape, data.len())?;
        self.set_input_raw(&cname, dtype, shape, as_bytes(data))
    }

    /// Sets input `name` to a copy of `bytes`, a `dtype` tensor of `shape`.
    pub fn set_input_bytes(&mut self, name: &str, dtype: DType, shape: &[i64], bytes: &[u8]) -> Result<()> {
        check_bytes(&format!("input '{name}'"), dtype, shape, bytes.len())?;
        let cname = c_string(name, "input name")?;
        self.set_input_raw(&cname, dtype, shape, bytes)
    }

    /// Sets input `name` to a copy of a tensor (a [`HostTensor`](crate::HostTensor) or an output).
    pub fn set_input_tensor(&mut self, name: &str, tensor: &TensorView<'_>) -> Result<()> {
        self.set_input_bytes(name, tensor.dtype(), tensor.shape(), tensor.bytes())
    }

    fn set_input_raw(&mut self, name: &CString, dtype: DType, shape: &[i64], bytes: &[u8]) -> Result<()> {
        unsafe {
            check(ffi::grp_session_set_input(
                self.ptr(),
                name.as_ptr(),
                dtype.raw(),
                shape.as_ptr(),
                shape.len(),
                data_ptr(bytes),
                bytes.len(),
            ))
        }
    }

    /// Zero-copy input: the session allocates input `name` with `shape` (zero-filled) and lends
    /// its buffer to fill. The buffer stays the input's value across runs until the input is set
    /// again; the borrow ends at the next `&mut self` call (call `input_buffer` again to rewrite
    /// it, which allocates a fresh zeroed buffer).
    pub fn input_buffer<T: Element>(&mut self, name: &str, shape: &[i64]) -> Result<&mut [T]> {
        let cname = c_string(name, "input name")?;
        let dtype = T::resolve(self.declared_input_dtype(&cname));
        let n = element_count(shape)?;
        let (mut data, mut nbytes): (*mut c_void, usize) = (ptr::null_mut(), 0);
        unsafe {
            check(ffi::grp_session_input_buffer(
                self.ptr(),
                cname.as_ptr(),
                dtype.raw(),
                shape.as_ptr(),
                shape.len(),
                &mut data,
                &mut nbytes,
            ))?
        };
        let what = format!("input_buffer '{name}'");
        if n.checked_mul(dtype.size()) != Some(nbytes) || (n > 0 && data.is_null()) {
            return Err(Error::new(
                Code::Internal,
                format!("{what}: libgrape returned {nbytes} bytes at {data:?} for {dtype}{shape:?}"),
            ));
        }
        if n == 0 {
            return Ok(&mut []);
        }
        if data.align_offset(std::mem::align_of::<T>()) != 0 {
            return Err(Error::new(
                Code::Internal,
                format!("{what}: the buffer is not aligned for {dtype}"),
            ));
        }
        // SAFETY: n elements of T (size checked through dtype), zero-filled (valid for every
        // Element, bool included), aligned, owned by the session until the input is replaced,
        // which needs &mut self, so not while this borrow lives.
        Ok(unsafe { std::slice::from_raw_parts_mut(data.cast::<T>(), n) })
    }

    /// Like [`Session::input_buffer`], but in device memory: the session allocates input `name`
    /// as a zero-filled `dtype` tensor of `shape` on its GPU and returns that memory as a device
    /// pointer and byte count, for the caller to fill on the device (`cudaMemcpy`, its own
    /// kernels: on the session's stream, see [`Session::set_stream`], or synchronised before
    /// [`Session::run`]); the kernels read it in place. CUDA backend only: the CPU backend returns
    /// an [`Code::Unsupported`] error. The dtype, rank and fixed dims must be the declared ones
    /// ([`Code::Type`] otherwise).
    ///
    /// The memory stays the input's value, and valid, until the input is set, bound or allocated
    /// again or the session is dropped; the returned [`DeviceBuffer`] borrows the session, so
    /// while it lives none of that can happen. The address itself may be kept past the borrow
    /// (to rewrite the input before each run), under those same conditions.
    pub fn input_device_buffer(&mut self, name: &str, dtype: DType, shape: &[i64]) -> Result<DeviceBuffer<'_>> {
        let cname = c_string(name, "input name")?;
        let n = element_count(shape)?;
        let (mut data, mut nbytes): (*mut c_void, usize) = (ptr::null_mut(), 0);
        unsafe {
            check(ffi::grp_session_input_device_buffer(
                self.ptr(),
                cname.as_ptr(),
                dtype.raw(),
                shape.as_ptr(),
                shape.len(),
                &mut data,
                &mut nbytes,
            ))?
        };
        if n.checked_mul(dtype.size()) != Some(nbytes) || (n > 0 && data.is_null()) {
            return Err(Error::new(
                Code::Internal,
                format!(
                    "input_device_buffer '{name}': libgrape returned {nbytes} bytes at {data:?} for {dtype}{shape:?}"
                ),
            ));
        }
        Ok(DeviceBuffer {
            ptr: data,
            len: nbytes,
            dtype,
            shape: shape.to_vec(),
            _session: PhantomData,
        })
    }

    /// Binds caller memory as input `name`, a `dtype` tensor of `shape`, without copying it on
    /// the host (`grp_session_bind_input`). On the CUDA backend `data` may be device memory of
    /// the session's GPU (`cudaMalloc`, `cuMemAlloc`, another session's
    /// [`Session::input_device_buffer`]), which the kernels read in place (an entry that updates
    /// the input in place gets a device-to-device copy at the start of each run instead); it may
    /// also be host memory, on both backends, copied to the device at the start of each run on
    /// CUDA. libgrape tells the two apart (`cuPointerGetAttribute`). Device memory of another GPU,
    /// or any device memory on the CPU backend, is an [`Code::InvalidArgument`] error. The dtype,
    /// rank and fixed dims must be the declared ones ([`Code::Type`] otherwise).
    ///
    /// # Safety
    ///
    /// The session keeps `data` without a lifetime, so the caller guarantees that:
    /// - `data` points to `product(shape) * dtype.size()` bytes of host memory readable from any
    ///   thread, or of device memory as above (it may be null only when that is 0);
    /// - that memory stays valid, and is not written while [`Session::run`] runs, until the input
    ///   is set, bound or allocated again or the session is dropped.
    ///
    /// The session never writes to it.
    pub unsafe fn bind_input_device(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[i64],
        data: *const c_void,
    ) -> Result<()> {
        let cname = c_string(name, "input name")?;
        let nbytes = element_count(shape)?
            .checked_mul(dtype.size())
            .ok_or_else(|| Error::invalid(format!("input '{name}': shape {shape:?} is too large")))?;
        // SAFETY: the caller's contract above; libgrape only records the pointer here.
        unsafe {
            check(ffi::grp_session_bind_input(
                self.ptr(),
                cname.as_ptr(),
                dtype.raw(),
                shape.as_ptr(),
                shape.len(),
                data,
                nbytes,
            ))
        }
    }

    /// Issues the runs that follow on the caller's CUDA stream (`grp_session_set_stream`): each
    /// run is queued after the work the caller queued on `stream` before [`Session::run`] (a
    /// kernel filling a device input, say), and `run` still returns only when the run is
    /// complete. Null goes back to the session's own stream (as [`Session::clear_stream`]). The
    /// CPU backend has no streams: null is accepted, anything else is an [`Code::Unsupported`]
    /// error.
    ///
    /// # Safety
    ///
    /// `stream` is null or a `CUstream` / `cudaStream_t` of the session's GPU in its primary
    /// context (the one the CUDA runtime uses), and it is not destroyed until the session is given
    /// another stream or is dropped.
    pub unsafe fn set_stream(&mut self, stream: *mut c_void) -> Result<()> {
        // SAFETY: the caller's contract above.
        unsafe { check(ffi::grp_session_set_stream(self.ptr(), stream)) }
    }

    /// Goes back to the session's own stream after [`Session::set_stream`] (a no-op when no
    /// stream was set; accepted on the CPU backend too).
    pub fn clear_stream(&mut self) -> Result<()> {
        // SAFETY: null is always a valid argument.
        unsafe { self.set_stream(ptr::null_mut()) }
    }

    /// Runs the entry on the current inputs (every input must be set). On failure nothing
    /// changes: inputs, state and the previous outputs are as they were.
    pub fn run(&mut self) -> Result<()> {
        unsafe { check(ffi::grp_session_run(self.ptr())) }
    }

    /// Output `i` of the last successful run, borrowed until the next `&mut self` call.
    /// `InvalidArgument` before the first successful run or for `i` out of range.
    pub fn output(&self, i: usize) -> Result<TensorView<'_>> {
        let (mut dtype, mut shape, mut rank, mut data, mut nbytes) = (0, ptr::null(), 0usize, ptr::null(), 0usize);
        // SAFETY: the session is not Sync, so this is the only call on it right now; the
        // pointers stay valid until the next run/reset, which need &mut self.
        unsafe {
            check(ffi::grp_session_get_output(
                self.ptr(),
                i,
                &mut dtype,
                &mut shape,
                &mut rank,
                &mut data,
                &mut nbytes,
            ))?;
            TensorView::from_raw(&format!("output {i}"), dtype, shape, rank, data, nbytes)
        }
    }

    /// A copy of output `i` as `T`s (`Type` when `T` does not match its dtype).
    pub fn output_vec<T: Element>(&self, i: usize) -> Result<Vec<T>> {
        self.output(i)?.to_vec()
    }

    /// Forgets the state (the next run starts as a new session would) and the last outputs.
    /// Inputs are kept.
    pub fn reset_state(&mut self) -> Result<()> {
        unsafe { check(ffi::grp_session_reset_state(self.ptr())) }
    }

    /// Per-kernel device times of the runs that follow (CUDA backend, eager executor: a CUDA
    /// event pair around each launch); `true` also clears what was collected. The CPU backend and
    /// the graph executor return an `Unsupported` error.
    pub fn set_profiling(&mut self, on: bool) -> Result<()> {
        unsafe { check(ffi::grp_session_set_profiling(self.ptr(), on as std::os::raw::c_int)) }
    }

    /// What profiling collected: the runs profiled and each kernel launched, in program order.
    pub fn kernel_profile(&mut self) -> Result<KernelProfile> {
        let mut runs = 0i64;
        let mut count = 0usize;
        unsafe { check(ffi::grp_session_kernel_profile(self.ptr(), &mut runs, &mut count))? };
        let mut kernels = Vec::with_capacity(count);
        for i in 0..count {
            let mut k = ffi::grp_kernel_profile {
                struct_size: std::mem::size_of::<ffi::grp_kernel_profile>(),
                name: std::ptr::null(),
                op: std::ptr::null(),
                where_: std::ptr::null(),
                grid: 0,
                block: 0,
                launches: 0,
                total_ms: 0.0,
                bytes: 0.0,
                flops: 0.0,
            };
            unsafe {
                check(ffi::grp_session_kernel_profile_at(self.ptr(), i, &mut k))?;
                kernels.push(KernelTime {
                    name: lossy(k.name),
                    op: lossy(k.op),
                    location: lossy(k.where_),
                    grid: k.grid,
                    block: k.block,
                    launches: k.launches,
                    total_ms: k.total_ms,
                    bytes: k.bytes,
                    flops: k.flops,
                });
            }
        }
        Ok(KernelProfile { runs, kernels })
    }

    /// The model's state tensors, in declaration order.
    pub fn state_names(&self) -> Vec<String> {
        let n = unsafe { ffi::grp_session_num_states(self.ptr()) };
        (0..n)
            .map(|i| unsafe { lossy(ffi::grp_session_state_name(self.ptr(), i)) })
            .collect()
    }

    /// The current value of state `name`, borrowed until the next `&mut self` call.
    /// `InvalidArgument` before the first run that creates it, or for an unknown name.
    pub fn state(&self, name: &str) -> Result<TensorView<'_>> {
        let cname = c_string(name, "state name")?;
        let (mut dtype, mut shape, mut rank, mut data, mut nbytes) = (0, ptr::null(), 0usize, ptr::null(), 0usize);
        // SAFETY: as in `output`.
        unsafe {
            check(ffi::grp_session_get_state(
                self.ptr(),
                cname.as_ptr(),
                &mut dtype,
                &mut shape,
                &mut rank,
                &mut data,
                &mut nbytes,
            ))?;
            TensorView::from_raw(&format!("state '{name}'"), dtype, shape, rank, data, nbytes)
        }
    }

    /// A copy of state `name` as `T`s.
    pub fn state_vec<T: Element>(&self, name: &str) -> Result<Vec<T>> {
        self.state(name)?.to_vec()
    }

    /// Replaces state `name` with a copy of `data`. The dtype is `T`'s (`u16`: the state's
    /// current dtype when it exists, else f16; use [`Session::set_state_bytes`] for bf16 states
    /// that do not exist yet).
    pub fn set_state<T: Element>(&mut self, name: &str, shape: &[i64], data: &[T]) -> Result<()> {
        let declared = self.state(name).ok().map(|s| s.dtype());
        let dtype = T::resolve(declared);
        check_len(&format!("state '{name}'"), dtype, shape, data.len())?;
        self.set_state_bytes(name, dtype, shape, as_bytes(data))
    }

    /// Replaces state `name` with a copy of `bytes`, a `dtype` tensor of `shape`.
    pub fn set_state_bytes(&mut self, name: &str, dtype: DType, shape: &[i64], bytes: &[u8]) -> Result<()> {
        check_bytes(&format!("state '{name}'"), dtype, shape, bytes.len())?;
        let cname = c_string(name, "state name")?;
        unsafe {
            check(ffi::grp_session_set_state(
                self.ptr(),
                cname.as_ptr(),
                dtype.raw(),
                shape.as_ptr(),
                shape.len(),
                data_ptr(bytes),
                bytes.len(),
            ))
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        unsafe { ffi::grp_session_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("inputs", &self.inputs().unwrap_or_default())
            .field("outputs", &self.outputs().unwrap_or_default())
            .finish()
    }
}

/// Input memory a session allocated on its GPU ([`Session::input_device_buffer`]): a device
/// pointer (a `CUdeviceptr`, what `cudaMalloc` returns) and its size in bytes. It is not host
/// memory, so it is never exposed as a slice: hand [`DeviceBuffer::as_ptr`] to CUDA (a copy, a
/// kernel argument), never dereference it.
///
/// Borrows the session mutably, as [`Session::input_buffer`]'s slice does: while it lives the
/// input cannot be replaced, so the memory stays valid. The session owns and frees it.
#[derive(Debug)]
pub struct DeviceBuffer<'a> {
    ptr: *mut c_void,
    len: usize,
    dtype: DType,
    shape: Vec<i64>,
    _session: PhantomData<&'a mut Session>,
}

impl DeviceBuffer<'_> {
    /// The device address (may be null for an empty tensor).
    pub fn as_ptr(&self) -> *mut c_void {
        self.ptr
    }

    /// The device address as a `CUdeviceptr` (the driver API's `unsigned long long`).
    pub fn device_ptr(&self) -> u64 {
        self.ptr as usize as u64
    }

    /// Its size in bytes: `product(shape) * dtype.size()`.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn shape(&self) -> &[i64] {
        &self.shape
    }
}

/// One kernel's launches while profiling was on (`Session::kernel_profile`).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTime {
    /// The generated kernel, e.g. "decode_step_k12_matmul".
    pub name: String,
    /// The op whose result it writes, e.g. "matmul".
    pub op: String,
    /// That op's source position "file:line:col", or "".
    pub location: String,
    pub grid: u32,
    pub block: u32,
    /// Launches timed, all profiled runs together.
    pub launches: i64,
    /// Their device time, summed.
    pub total_ms: f64,
    /// Bytes one launch reads and writes, at the last run's dims.
    pub bytes: f64,
    /// Floating-point operations of one launch's matrix products (2*M*N*K each).
    pub flops: f64,
}

/// Per-kernel device times (`Session::kernel_profile`).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelProfile {
    /// Runs profiled since profiling was turned on.
    pub runs: i64,
    pub kernels: Vec<KernelTime>,
}
