//! `Session`: runs one entry point of a model and owns its inputs, outputs and state
//! (`grp_session`).

use std::cell::Cell;
use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_void};
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::time::Duration;

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
    /// Trips of a device loop without `max` before [`Session::run`] fails ([`Code::Type`] on the
    /// CPU, [`Code::Device`] on CUDA, naming the loop and the cap); 0: `$GRAPE_MAX_LOOP_TRIPS` if
    /// set, else 100000. Negative: [`Session::new`] fails with [`Code::InvalidArgument`].
    pub max_loop_trips: i64,
    /// Wall-clock limit of each [`Session::run`]; a run past it fails with [`Code::Interrupted`]
    /// and changes nothing (docs/execution.md, "Bounded runs"). None or zero: no limit.
    pub timeout: Option<Duration>,
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
    pub fn max_loop_trips(mut self, trips: i64) -> SessionOptions {
        self.max_loop_trips = trips;
        self
    }
    pub fn timeout(mut self, timeout: Duration) -> SessionOptions {
        self.timeout = Some(timeout);
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

/// `grp_session_input_buffer` and `grp_session_input_device_buffer`.
type AllocInputFn = unsafe extern "C" fn(
    *mut ffi::grp_session,
    *const c_char,
    ffi::grp_dtype,
    *const i64,
    usize,
    *mut *mut c_void,
    *mut usize,
) -> *mut ffi::grp_error;

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
/// and a session cannot be shared between threads (use [`Session::interrupter`] to stop a run
/// from another thread):
/// ```compile_fail
/// fn shared<T: Sync>() {}
/// shared::<grape::Session>();
/// ```
pub struct Session {
    // Declared first, so dropped before `outputs`: the C session is gone (or, with an Interrupter
    // still alive, has every owned buffer unbound; see Drop) before the buffers are freed.
    handle: Arc<Handle>,
    /// Per output: what is bound to it (see `bind_output`).
    outputs: Vec<OutputSlot>,
    /// grape.h, THREADS: "A grp_session must be used by one thread at a time (it may move between
    /// threads)": Send (every field is), not Sync (Cell is not).
    _not_sync: PhantomData<Cell<()>>,
}

/// The C session, shared by a [`Session`] and its [`Interrupter`]s and destroyed when the last of
/// them is dropped.
struct Handle(NonNull<ffi::grp_session>);

// SAFETY: the Session (Send, not Sync) makes every call but one; the Interrupters, on any thread,
// call only grp_session_interrupt, which grape.h allows "from any thread while another uses the
// session". Destruction happens once, when the last Arc goes.
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        unsafe { ffi::grp_session_destroy(self.0.as_ptr()) }
    }
}

/// The binding of one output.
#[derive(Default)]
struct OutputSlot {
    /// An [`OutputBuffer`] the session holds while it is bound.
    owned: Option<OutputBuffer>,
    /// Caller memory bound with [`Session::bind_output_raw`].
    raw: bool,
    /// A successful run wrote the output into the memory bound now.
    delivered: bool,
    /// The memory the last run delivered the output into was unbound since: grp_session_get_output
    /// would still return it, so [`Session::output`] refuses until the next run.
    released: bool,
}

/// Stops the run in progress of a [`Session`] from another thread ([`Session::interrupter`]).
///
/// `Send + Sync + Clone`. It keeps the C session alive (not the [`Session`]'s bound output
/// buffers): interrupting after the session was dropped is a harmless no-op.
#[derive(Clone)]
pub struct Interrupter {
    handle: Arc<Handle>,
}

impl Interrupter {
    /// Stops the run in progress (`grp_session_interrupt`): it fails with
    /// [`Code::Interrupted`] and changes nothing; the session stays usable. With no run in
    /// progress this has no effect (the next run starts afresh). Only sets an atomic flag: cheap,
    /// and callable from any thread while another runs the session. The CUDA graph executor can
    /// stop a run only before it launches its graph, the CUDA eager executor only until the run
    /// writes its first state (docs/execution.md, "Bounded runs").
    pub fn interrupt(&self) {
        unsafe { ffi::grp_session_interrupt(self.handle.0.as_ptr()) }
    }
}

impl fmt::Debug for Interrupter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interrupter").field("session", &self.handle.0).finish()
    }
}

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
        raw.max_loop_trips = opts.max_loop_trips;
        raw.timeout_seconds = opts.timeout.map_or(0.0, |t| t.as_secs_f64());
        let mut out = ptr::null_mut();
        unsafe { check(ffi::grp_session_create(model.as_ptr(), &raw, &mut out))? };
        let handle = NonNull::new(out)
            .map(|raw| Arc::new(Handle(raw)))
            .ok_or_else(|| Error::new(Code::Internal, "libgrape returned success but no session"))?;
        let n = unsafe { ffi::grp_session_num_outputs(handle.0.as_ptr()) };
        Ok(Session {
            handle,
            outputs: (0..n).map(|_| OutputSlot::default()).collect(),
            _not_sync: PhantomData,
        })
    }

    fn ptr(&self) -> *mut ffi::grp_session {
        self.handle.0.as_ptr()
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

    /// Lets `alloc` allocate input `cname` as a `dtype` tensor of `shape` and checks what it
    /// returns: the memory and its element count (the byte count is `n * dtype.size()`, and the
    /// pointer is non-null when `n > 0`).
    fn allocate_input(
        &mut self,
        alloc: AllocInputFn,
        what: &str,
        cname: &CStr,
        dtype: DType,
        shape: &[i64],
    ) -> Result<(*mut c_void, usize)> {
        let n = element_count(shape)?;
        let (mut data, mut nbytes): (*mut c_void, usize) = (ptr::null_mut(), 0);
        // SAFETY: `shape` and `cname` outlive the call; `alloc` writes the two out-pointers only.
        unsafe {
            check(alloc(
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
                format!("{what}: libgrape returned {nbytes} bytes at {data:?} for {dtype}{shape:?}"),
            ));
        }
        Ok((data, n))
    }

    /// Zero-copy input: the session allocates input `name` with `shape` (zero-filled) and lends
    /// its buffer to fill. The buffer stays the input's value across runs until the input is set
    /// again; the borrow ends at the next `&mut self` call (call `input_buffer` again to rewrite
    /// it, which allocates a fresh zeroed buffer).
    pub fn input_buffer<T: Element>(&mut self, name: &str, shape: &[i64]) -> Result<&mut [T]> {
        let cname = c_string(name, "input name")?;
        let dtype = T::resolve(self.declared_input_dtype(&cname));
        let what = format!("input_buffer '{name}'");
        let (data, n) = self.allocate_input(ffi::grp_session_input_buffer, &what, &cname, dtype, shape)?;
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
        let what = format!("input_device_buffer '{name}'");
        let (data, n) = self.allocate_input(ffi::grp_session_input_device_buffer, &what, &cname, dtype, shape)?;
        Ok(DeviceBuffer {
            ptr: data,
            len: n * dtype.size(),
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
    /// CUDA. libgrape tells the two apart (`cuPointerGetAttributes`). Device memory of another GPU,
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
    ///
    /// A run can be bounded ([`SessionOptions::timeout`], [`SessionOptions::max_loop_trips`]) and
    /// stopped from another thread ([`Session::interrupter`]); either way it fails with
    /// [`Code::Interrupted`] and changes nothing.
    pub fn run(&mut self) -> Result<()> {
        unsafe { check(ffi::grp_session_run(self.ptr()))? };
        for slot in &mut self.outputs {
            slot.released = false;
            slot.delivered = slot.owned.is_some() || slot.raw;
        }
        Ok(())
    }

    /// A handle that stops this session's run in progress from another thread
    /// (`grp_session_interrupt`): `Send + Sync + Clone`, usable while [`Session::run`] holds the
    /// session.
    ///
    /// ```no_run
    /// # fn f(mut s: grape::Session) -> grape::Result<()> {
    /// let stop = s.interrupter();
    /// std::thread::spawn(move || {
    ///     std::thread::sleep(std::time::Duration::from_secs(1));
    ///     stop.interrupt();
    /// });
    /// match s.run() {
    ///     Err(e) if e.code == grape::Code::Interrupted => println!("stopped; the session is as before"),
    ///     r => r?,
    /// }
    /// # Ok(()) }
    /// ```
    pub fn interrupter(&self) -> Interrupter {
        Interrupter {
            handle: Arc::clone(&self.handle),
        }
    }

    /// The backend the session runs on: "cpu" or "cuda" (`grp_session_backend`). With backend
    /// "auto" and no usable GPU it is "cpu", and [`Session::fallback_reason`] says why.
    pub fn backend(&self) -> String {
        unsafe { lossy(ffi::grp_session_backend(self.ptr())) }
    }

    /// Why a session asked for backend "auto" runs on the CPU (`grp_session_fallback_reason`);
    /// None when it runs where it asked to.
    pub fn fallback_reason(&self) -> Option<String> {
        let why = unsafe { lossy(ffi::grp_session_fallback_reason(self.ptr())) };
        (!why.is_empty()).then_some(why)
    }

    /// What the last run did (`grp_session_last_run_stats`): kernel launches, host
    /// synchronisations, device time, the executor that ran it, ... (see [`RunStats`]). Before
    /// the first run, and after a failed one, it describes the last successful run (all zero and
    /// empty when there was none).
    pub fn last_run_stats(&self) -> Result<RunStats> {
        // SAFETY: all-zero is a valid grp_run_stats (null strings, zero numbers).
        let mut raw: ffi::grp_run_stats = unsafe { std::mem::zeroed() };
        raw.struct_size = std::mem::size_of::<ffi::grp_run_stats>();
        unsafe {
            check(ffi::grp_session_last_run_stats(self.ptr(), &mut raw))?;
            Ok(RunStats {
                kernels: raw.kernels,
                host_syncs: raw.host_syncs,
                device_ms: raw.device_ms,
                device_bytes: raw.device_bytes,
                compile_ms: raw.compile_ms,
                executor: lossy(raw.executor),
                graph_launches: raw.graph_launches,
                graphs: raw.graphs,
                param_uploads: raw.param_uploads,
                auto_state: lossy(raw.auto_state),
                graph_bytes: raw.graph_bytes,
                graph_updates: raw.graph_updates,
                kernels_tuned: raw.kernels_tuned,
                kernels_retuned: raw.kernels_retuned,
                tuning_ms: raw.tuning_ms,
                plan: lossy(raw.plan),
            })
        }
    }

    /// Executor "auto"'s decisions, one per shape bucket in the order of their first runs
    /// (`grp_session_auto_decisions`, docs/execution.md, "Selective execution"). Empty for the
    /// other executors and on the CPU backend.
    pub fn auto_decisions(&mut self) -> Result<Vec<AutoDecision>> {
        let mut count = 0usize;
        unsafe { check(ffi::grp_session_auto_decisions(self.ptr(), &mut count))? };
        (0..count)
            .map(|i| {
                // SAFETY: all-zero is a valid grp_auto_decision.
                let mut d: ffi::grp_auto_decision = unsafe { std::mem::zeroed() };
                d.struct_size = std::mem::size_of::<ffi::grp_auto_decision>();
                // SAFETY: the strings and arrays stay valid until the next snapshot, which needs
                // &mut self; they are copied here.
                unsafe {
                    check(ffi::grp_session_auto_decision_at(self.ptr(), i, &mut d))?;
                    Ok(AutoDecision {
                        bucket: lossy(d.bucket),
                        executor: lossy(d.executor),
                        reason: lossy(d.reason),
                        calls: d.calls,
                        measured_calls: d.measured_calls,
                        calls_to_decide: d.calls_to_decide,
                        eager_ms: c_slice(d.eager_ms, d.eager_count).to_vec(),
                        graph_ms: c_slice(d.graph_ms, d.graph_count).to_vec(),
                        eager_median_ms: d.eager_median_ms,
                        graph_median_ms: d.graph_median_ms,
                    })
                }
            })
            .collect()
    }

    /// Binds `buffer` as the destination of output `i` (`grp_session_bind_output`): after each
    /// successful run the output's value is in it, and [`Session::output`] reads it there. The
    /// session owns the buffer until [`Session::unbind_output`] (or another bind of output `i`)
    /// gives it back, so it outlives every run that writes into it. A run whose output needs more
    /// than `buffer.len()` bytes fails with [`Code::InvalidArgument`] before executing anything.
    /// On the CPU backend the result is copied into the buffer once per run.
    ///
    /// Returns the buffer bound to output `i` before, if there was one (see
    /// [`Session::unbind_output`]). Errors: [`Code::InvalidArgument`] for `i` out of range (the
    /// binding is unchanged and `buffer` is dropped).
    pub fn bind_output(&mut self, i: usize, buffer: OutputBuffer) -> Result<Option<OutputBuffer>> {
        let (data, capacity) = (buffer.ptr.as_ptr().cast::<c_void>(), buffer.len);
        let previous = self.rebind_output(i, data, capacity)?;
        let mut buffer = buffer;
        buffer.written = None;
        self.outputs[i].owned = Some(buffer);
        Ok(previous)
    }

    /// Output `i` goes back to the session's own memory (`grp_session_bind_output` with NULL).
    /// Returns the [`OutputBuffer`] bound to it, if any: when a run delivered into it,
    /// [`OutputBuffer::output`] is the last value written. From here until the next run,
    /// [`Session::output`] of `i` is an [`Code::InvalidArgument`] error when the last run had
    /// delivered it into the memory unbound now (libgrape would still point there).
    pub fn unbind_output(&mut self, i: usize) -> Result<Option<OutputBuffer>> {
        self.rebind_output(i, ptr::null_mut(), 0)
    }

    /// Binds caller memory, `capacity` bytes at `data`, as the destination of output `i`
    /// (`grp_session_bind_output`); null `data` (with `capacity` 0) unbinds, as
    /// [`Session::unbind_output`]. As [`Session::bind_output`] otherwise, whose safe form is
    /// usually what you want. Returns the [`OutputBuffer`] bound to output `i` before, if any.
    /// Errors: [`Code::InvalidArgument`] for `i` out of range or null `data` with a non-zero
    /// `capacity`.
    ///
    /// # Safety
    ///
    /// The session keeps `data` without a lifetime, so the caller guarantees that `data` points to
    /// `capacity` bytes of host memory, readable and writable from any thread, that stay valid
    /// until output `i` is unbound or bound again or the session is dropped; that nothing else
    /// accesses them while [`Session::run`] runs; and that nothing writes them while a view
    /// returned by [`Session::output`] lives.
    pub unsafe fn bind_output_raw(
        &mut self,
        i: usize,
        data: *mut c_void,
        capacity: usize,
    ) -> Result<Option<OutputBuffer>> {
        let previous = self.rebind_output(i, data, capacity)?;
        self.outputs[i].raw = !data.is_null();
        Ok(previous)
    }

    /// Replaces the binding of output `i` and releases the previous one: returns its owned buffer
    /// (with the output it holds, when the last run delivered there) and marks the output
    /// unreadable until the next run when the last run had delivered it there.
    fn rebind_output(&mut self, i: usize, data: *mut c_void, capacity: usize) -> Result<Option<OutputBuffer>> {
        let delivered = self.outputs.get(i).is_some_and(|s| s.delivered);
        // The value in the memory about to be released, for an owned buffer to keep describing.
        let written = if delivered && self.outputs[i].owned.is_some() {
            self.output(i)
                .ok()
                .map(|v| (v.dtype(), v.shape().to_vec(), v.bytes().len()))
        } else {
            None
        };
        // SAFETY: the callers' contracts (bind_output: memory the session owns from here on).
        unsafe { check(ffi::grp_session_bind_output(self.ptr(), i, data, capacity))? };
        let slot = self.outputs.get_mut(i).ok_or_else(|| {
            Error::new(
                Code::Internal,
                format!("libgrape bound output {i}, which it does not have"),
            )
        })?;
        slot.released |= delivered;
        slot.delivered = false;
        slot.raw = false;
        Ok(slot.owned.take().map(|mut b| {
            b.written = written;
            b
        }))
    }

    /// Output `i` of the last successful run, borrowed until the next `&mut self` call.
    /// `InvalidArgument` before the first successful run or for `i` out of range, and for an
    /// output whose bound memory was unbound since the run delivered it there.
    pub fn output(&self, i: usize) -> Result<TensorView<'_>> {
        if self.outputs.get(i).is_some_and(|s| s.released) {
            return Err(Error::invalid(format!(
                "output {i}: the memory the last run wrote it to was unbound since (unbind_output, \
                 bind_output); run again to read it"
            )));
        }
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
        unsafe { check(ffi::grp_session_reset_state(self.ptr()))? };
        for slot in &mut self.outputs {
            slot.released = false;
            slot.delivered = false;
        }
        Ok(())
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
        // An Interrupter may keep the C session alive past this: leave it no pointer into the
        // buffers freed next. (Unbinding a valid index cannot fail; an error would be freed.)
        for (i, slot) in self.outputs.iter().enumerate() {
            if slot.owned.is_some() || slot.raw {
                unsafe {
                    let _ = check(ffi::grp_session_bind_output(self.ptr(), i, ptr::null_mut(), 0));
                }
            }
        }
        // Then `handle` drops (destroying the C session unless an Interrupter holds it), then the
        // buffers in `outputs`.
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

/// Host memory a session writes an output into ([`Session::bind_output`]): `len` bytes, zeroed
/// when made, aligned for every dtype. While bound, the session owns it; [`Session::unbind_output`]
/// gives it back.
pub struct OutputBuffer {
    /// `len` bytes rounded up to whole u64s (at least one, so never dangling), from a Box<[u64]>.
    ptr: NonNull<u64>,
    len: usize,
    /// The output the session last wrote here, when it gave the buffer back: dtype, shape, bytes.
    written: Option<(DType, Vec<i64>, usize)>,
}

// SAFETY: plain owned memory; the session writes it only while it owns the buffer.
unsafe impl Send for OutputBuffer {}
unsafe impl Sync for OutputBuffer {}

impl OutputBuffer {
    fn words(len: usize) -> usize {
        len.div_ceil(8).max(1)
    }

    /// A zeroed buffer of `len` bytes.
    pub fn new(len: usize) -> OutputBuffer {
        let words = vec![0u64; Self::words(len)].into_boxed_slice();
        let ptr = NonNull::new(Box::into_raw(words).cast::<u64>()).expect("Box is never null");
        OutputBuffer {
            ptr,
            len,
            written: None,
        }
    }

    /// A zeroed buffer that holds a `dtype` tensor of `shape`, e.g. an output's largest shape.
    pub fn for_tensor(dtype: DType, shape: &[i64]) -> Result<OutputBuffer> {
        let n = element_count(shape)?
            .checked_mul(dtype.size())
            .filter(|&n| n <= isize::MAX as usize)
            .ok_or_else(|| Error::invalid(format!("shape {shape:?} of {dtype} is too large")))?;
        Ok(OutputBuffer::new(n))
    }

    /// Its size in bytes: the capacity it is bound with.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// All its bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes of our allocation; while a session owns the buffer no
        // `&self` reaches here (it is not reachable from outside the session).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<u8>(), self.len) }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, exclusively.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<u8>(), self.len) }
    }

    /// The output the session last wrote into this buffer, when it gave it back
    /// ([`Session::unbind_output`], or a new [`Session::bind_output`] of the same output): a view
    /// of its dtype and shape over the first bytes. None when no successful run wrote into it
    /// while it was bound.
    pub fn output(&self) -> Option<TensorView<'_>> {
        let (dtype, shape, nbytes) = self.written.as_ref()?;
        // SAFETY: the session wrote exactly this tensor into our first `nbytes` bytes.
        unsafe {
            TensorView::from_raw(
                "output buffer",
                dtype.raw(),
                shape.as_ptr(),
                shape.len(),
                self.ptr.as_ptr().cast(),
                *nbytes,
            )
        }
        .ok()
    }
}

impl Drop for OutputBuffer {
    fn drop(&mut self) {
        let words = Self::words(self.len);
        // SAFETY: made by Box::into_raw of a boxed slice of `words` u64s in `new`.
        drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), words)) });
    }
}

impl fmt::Debug for OutputBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputBuffer")
            .field("len", &self.len)
            .field("output", &self.output())
            .finish()
    }
}

/// What the last run did ([`Session::last_run_stats`], grape.h's `grp_run_stats`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunStats {
    /// Kernel launches (CUDA; 0 on the CPU backend).
    pub kernels: i64,
    /// Host synchronisations inside the run (device loop conditions).
    pub host_syncs: i64,
    /// Time of the run on the device stream, measured with CUDA events.
    pub device_ms: f64,
    /// Device memory held by the session.
    pub device_bytes: usize,
    /// Building the session's kernels (NVRTC or the kernel cache).
    pub compile_ms: f64,
    /// The executor that ran the run: "eager" or "graph" on CUDA ("auto" before its first run),
    /// "cpu" on the CPU backend.
    pub executor: String,
    /// CUDA graphs launched by the run (graph executor: 1).
    pub graph_launches: i64,
    /// Instantiated CUDA graphs the session holds.
    pub graphs: usize,
    /// Parameter-block uploads (0 when no pointer, dim or state address changed).
    pub param_uploads: i64,
    /// Executor "auto"'s decision for the run's shape bucket, one line ("measuring (3 of 8
    /// calls)", "graph (graph 0.740 ms vs eager 0.890 ms, ...)"); "" for the other executors and
    /// the CPU backend.
    pub auto_state: String,
    /// Device memory the session's instantiated graphs took.
    pub graph_bytes: usize,
    /// 1 when the run rewrote its bucket's graph for new dims (no new graph).
    pub graph_updates: i64,
    /// Autotuning (CUDA): kernels whose launch configurations the session measured so far.
    pub kernels_tuned: usize,
    /// Kernels bound now to a configuration other than the built-in heuristic's.
    pub kernels_retuned: usize,
    /// Host time the measurements took, so far.
    pub tuning_ms: f64,
    /// Executor "mono": "decoder" when the run took the decoder plan, else "general (<why
    /// not>)"; "" for the other executors and the CPU backend.
    pub plan: String,
}

/// Executor "auto"'s decision for one shape bucket ([`Session::auto_decisions`], grape.h's
/// `grp_auto_decision`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AutoDecision {
    /// The dims it stands for, "B=2, S=3..4"; "" without symbolic dims.
    pub bucket: String,
    /// "eager" or "graph" once decided; "" while measuring.
    pub executor: String,
    /// Why, one line; "" while measuring.
    pub reason: String,
    /// Calls of the bucket so far.
    pub calls: i64,
    /// Of those, the calls that counted towards the decision.
    pub measured_calls: i64,
    /// Calls the measurement takes (8); the decision holds after them.
    pub calls_to_decide: i64,
    /// Device time of each timed eager call, in call order.
    pub eager_ms: Vec<f64>,
    /// And of each timed graph call.
    pub graph_ms: Vec<f64>,
    /// Medians of those; 0 before the first.
    pub eager_median_ms: f64,
    pub graph_median_ms: f64,
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
