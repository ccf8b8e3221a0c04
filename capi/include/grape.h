/* grape.h: the stable C API of Grape, the only public header.
 *
 * Grape compiles `.grp` model programs and runs them. A grp_model is a compiled program plus its
 * weights; a grp_session runs one entry point of a model and owns that entry's inputs, outputs and
 * the model's state (KV caches, counters) between runs.
 *
 * ERRORS. Every fallible function returns a grp_error*: NULL means success. On failure the caller
 * owns the returned error and frees it with grp_error_free(). grp_error_code() classifies it,
 * grp_error_message() is the complete human-readable text (every diagnostic, each with
 * `file:line:col`), grp_error_location() gives the position of the first diagnostic of a source
 * error. Invariants of every fallible function:
 *   - on failure, out-parameters are left untouched and no object is half-made;
 *   - a rejected call changes nothing: a session stays usable after it (inputs, state and the
 *     previous outputs are as they were);
 *   - no C++ exception ever crosses this boundary; out of memory is GRP_ERR_OUT_OF_MEMORY (the
 *     error object itself then is a static one; grp_error_free() on it is still correct).
 * Non-fallible accessors given a NULL handle or an index out of range return 0, NULL or "" as
 * stated for each, and never crash.
 *
 * OWNERSHIP. A pointer result marked GRP_OWN belongs to the caller, who releases it with the
 * function named beside it. Every other pointer the library returns is borrowed: it stays valid
 * for as long as the text beside it says (typically "as long as the model/session lives"). The
 * library never keeps a caller's pointer beyond the call, except where a function says it does
 * (grp_session_bind_input, grp_session_bind_output).
 *
 * THREADS. A grp_model is immutable once its weights are set and may be shared by any number of
 * threads and sessions. Setting weights is itself thread-safe: a session takes a snapshot of the
 * model's weights when it is created and keeps using that snapshot; sessions created later see
 * the new weights. A grp_session must be used by one thread at a time (it may move between
 * threads); any number of sessions, of the same model or not, may run concurrently. A model may
 * be destroyed while sessions of it still exist: each session keeps what it needs alive.
 * grp_error objects are independent values usable from any thread.
 *
 * ABI. Option structs begin with `size_t struct_size` and only ever grow at the end: initialise
 * them with the matching *_default_options() function and then change fields. Those functions are
 * defined inline in this header: they pass sizeof the struct as *this header* knows it to the
 * library's *_options_init(), which writes only that many bytes, so a program built against an
 * older grape.h never gets (or makes the library read) more than its own struct. Bindings that
 * mirror a struct call *_options_init() with the size of their mirror. The library reads only
 * the first struct_size bytes; fields beyond them take their defaults, and every field added
 * later has zero/NULL as its default, so a zero-initialised tail is always the default. Functions are only
 * ever appended, never removed or changed. GRAPE_VERSION_NUMBER is the version of this header;
 * grp_version_number() is the version of the library actually loaded: a program may refuse to run
 * when grp_version_number() < GRAPE_VERSION_NUMBER (the library predates the header).
 *
 * BACKENDS. "cpu" is the reference backend, always present. "cuda" runs on an NVIDIA GPU: the
 * library loads libcuda and libnvrtc at run time (dlopen), so a machine without them reports
 * GRP_ERR_NO_DEVICE for "cuda". "auto" picks "cuda" when a device is usable, else the CPU
 * (grp_backend_available). Where this header speaks of device memory, it is host memory on the CPU
 * backend.
 */
#ifndef GRAPE_H
#define GRAPE_H

#include <stddef.h>
#include <stdint.h>

#define GRAPE_VERSION_MAJOR 0
#define GRAPE_VERSION_MINOR 1
#define GRAPE_VERSION_PATCH 0
/* major*1000000 + minor*1000 + patch */
#define GRAPE_VERSION_NUMBER 1000
#define GRAPE_VERSION_STRING "0.1.0"

#if defined(_WIN32) && !defined(GRAPE_STATIC)
#if defined(GRAPE_BUILDING_LIBRARY)
#define GRAPE_API __declspec(dllexport)
#else
#define GRAPE_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define GRAPE_API __attribute__((visibility("default")))
#else
#define GRAPE_API
#endif

/* Marks a result the caller owns (see OWNERSHIP above). Expands to nothing. */
#define GRP_OWN

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ------------------------------------------------------------------------------- */

/* The version of the loaded library, as GRAPE_VERSION_NUMBER. */
GRAPE_API uint32_t grp_version_number(void);
/* "0.1.0"; static storage. */
GRAPE_API const char* grp_version_string(void);

/* ---- errors -------------------------------------------------------------------------------- */

typedef struct grp_error grp_error;

typedef enum grp_code {
  GRP_OK = 0,               /* only grp_error_code(NULL) returns it */
  GRP_ERR_INVALID_ARGUMENT, /* NULL/invalid argument, unknown name (entry, input, const, state),
                               byte count that does not match the shape, call out of order */
  GRP_ERR_SYNTAX,           /* the .grp text does not parse */
  GRP_ERR_TYPE,             /* the program does not type-check; an input or state of the wrong
                               dtype, rank or shape */
  GRP_ERR_IO,               /* a file cannot be opened, read or written */
  GRP_ERR_FORMAT,           /* a malformed file (.npy, safetensors) or weights that do not match
                               the model's declarations */
  GRP_ERR_UNSUPPORTED,      /* valid, but not supported by this build or backend */
  GRP_ERR_NO_DEVICE,        /* the requested backend or device is not available */
  GRP_ERR_DEVICE,           /* the device failed */
  GRP_ERR_OUT_OF_MEMORY,
  GRP_ERR_INTERNAL, /* a bug in Grape */
  /* Appended in 0.1.0: */
  GRP_ERR_INTERRUPTED /* grp_session_run stopped by grp_session_interrupt or by the
                         session's timeout; nothing changed, the session stays usable */
} grp_code;

/* GRP_OK for NULL. */
GRAPE_API grp_code grp_error_code(const grp_error* e);
/* The full message: every diagnostic, `file:line:col` included. "" for NULL. Valid until the
 * error is freed. */
GRAPE_API const char* grp_error_message(const grp_error* e);
/* The position of the first diagnostic of a source error (GRP_ERR_SYNTAX, GRP_ERR_TYPE from
 * loading a program), or of the op a run-time error of the CPU backend is about (a loop past the
 * trip cap; its message then reads `file:line:col: error: ...` too). Returns 1 and fills the
 * non-NULL out-pointers when the error has a position; returns 0 and leaves them untouched
 * otherwise (and for NULL). `file` is the name the source was loaded under, valid until the error
 * is freed; line and column are 1-based (column in bytes). */
GRAPE_API int grp_error_location(const grp_error* e, const char** file, uint32_t* line, uint32_t* column);
/* NULL is a no-op. */
GRAPE_API void grp_error_free(grp_error* e);

/* Releases memory the library handed to the caller as GRP_OWN char* or void* (IR text, ...).
 * NULL is a no-op. */
GRAPE_API void grp_free(void* p);

/* ---- element types ------------------------------------------------------------------------- */

typedef enum grp_dtype { GRP_F32, GRP_F16, GRP_BF16, GRP_I32, GRP_I64, GRP_BOOL } grp_dtype;

/* Bytes per element (bool: 1 byte, 0 or 1); 0 for a value outside the enum. */
GRAPE_API size_t grp_dtype_size(grp_dtype dtype);
/* "f32", "f16", "bf16", "i32", "i64", "bool"; "" for a value outside the enum. */
GRAPE_API const char* grp_dtype_name(grp_dtype dtype);

/* ---- models -------------------------------------------------------------------------------- */

typedef struct grp_model grp_model;

typedef struct grp_model_options {
  size_t struct_size; /* sizeof(grp_model_options) */
  /* const overrides, each "NAME=VALUE" with VALUE a decimal integer (as `-D NAME=VALUE`). NAME
   * must be a const the program declares. A later entry for the same NAME wins. */
  const char* const* defines;
  size_t num_defines;
  /* nonzero: keep the IR exactly as lowered (no constant folding, CSE, dead-code elimination) */
  int no_optimize;
  /* nonzero: reject device loops without a compile-time trip bound (`while ... max N`) */
  int require_loop_bounds;
  /* Appended in 0.1.0 (zero: the default): */
  /* Compiler resource limits to set, each "NAME=N" with N a non-negative integer (as `grape
   * --limit NAME=N`): max_ops, max_unrolled_iterations, max_call_depth, max_weights,
   * max_tensor_elements, max_program_elements, max_loop_trips (docs/language.md, "Limits", gives
   * the defaults). They win over $GRAPE_LIMITS; a later entry for the same NAME wins. An unknown
   * NAME or a malformed entry: GRP_ERR_INVALID_ARGUMENT. */
  const char* const* limits;
  size_t num_limits;
} grp_model_options;

/* Sets the first `struct_size` bytes of *opts to the defaults, and opts->struct_size to
 * `struct_size`: the size of the caller's grp_model_options (a larger size than this library
 * knows gets a zero, i.e. default, tail). Nothing is written when opts is NULL or struct_size is
 * less than sizeof(size_t). */
GRAPE_API void grp_model_options_init(grp_model_options* opts, size_t struct_size);
#if defined(GRAPE_BUILDING_LIBRARY)
/* Kept for programs linked before grp_model_options_init existed: returns the library's size. */
GRAPE_API grp_model_options grp_model_default_options(void);
#else
/* The defaults, struct_size = sizeof(grp_model_options) of this header. */
static inline grp_model_options grp_model_default_options(void) {
  grp_model_options o;
  grp_model_options_init(&o, sizeof o);
  return o;
}
#endif

/* Loads, checks and compiles a .grp file. opts NULL: defaults. */
GRAPE_API grp_error* grp_model_load_file(const char* path, const grp_model_options* opts,
                                         GRP_OWN grp_model** out);
/* The same from memory: `src` holds `len` bytes (no terminator needed). `name` is the file name
 * diagnostics use (NULL: "<source>"). */
GRAPE_API grp_error* grp_model_load_source(const char* src, size_t len, const char* name,
                                           const grp_model_options* opts, GRP_OWN grp_model** out);
/* Weights from a safetensors file; every declared weight must be present with its declared dtype
 * and shape (extra tensors are ignored). On failure the previous weights stay. */
GRAPE_API grp_error* grp_model_set_weights_file(grp_model* m, const char* safetensors_path);
/* Weights from the bytes of a safetensors file in memory (copied; the buffer may be freed after
 * the call). `name` is used in error messages (NULL: "<memory>"). */
GRAPE_API grp_error* grp_model_set_weights_memory(grp_model* m, const void* data, size_t nbytes,
                                                  const char* name);
/* Deterministic random weights: each element a function of (seed, weight name, index). */
GRAPE_API grp_error* grp_model_set_random_weights(grp_model* m, uint64_t seed);
/* NULL is a no-op. Sessions of the model stay valid. */
GRAPE_API void grp_model_destroy(grp_model* m);

/* Entry points (functions callable from outside), in declaration order. 0 / NULL for NULL or out
 * of range; names are valid as long as the model lives. */
GRAPE_API size_t grp_model_num_entries(const grp_model* m);
GRAPE_API const char* grp_model_entry_name(const grp_model* m, size_t i);
/* Declared weights, in declaration order, with their full names (prefix applied) and concrete
 * shapes. 0 / NULL for NULL or out of range. */
GRAPE_API size_t grp_model_num_weights(const grp_model* m);
GRAPE_API const char* grp_model_weight_name(const grp_model* m, size_t i);
/* dtype/shape/rank of weight i; NULL out-pointers are skipped; *shape valid while the model
 * lives. */
GRAPE_API grp_error* grp_model_weight_info(const grp_model* m, size_t i, grp_dtype* dtype,
                                           const int64_t** shape, size_t* rank);
/* 1 if sessions can be created: weights are set, or the model declares none. 0 for NULL. */
GRAPE_API int grp_model_has_weights(const grp_model* m);
/* The predicated IR as text (what `grape ir` prints): of one entry, or of the whole module when
 * entry is NULL. *out is NUL-terminated; free it with grp_free(). */
GRAPE_API grp_error* grp_model_ir_text(const grp_model* m, const char* entry, GRP_OWN char** out);

/* ---- sessions ------------------------------------------------------------------------------ */

typedef struct grp_session grp_session;

typedef struct grp_session_options {
  size_t struct_size;  /* sizeof(grp_session_options) */
  const char* entry;   /* NULL: "main" */
  const char* backend; /* "auto" | "cpu" | "cuda"; NULL: "auto" */
  /* "auto" | "eager" | "graph" | "mono" | "dataflow"; NULL: "auto". CUDA runs "eager", "graph",
   * "mono" (the whole entry as one persistent kernel; entries without device loops, else
   * GRP_ERR_UNSUPPORTED at creation) and "auto": per shape bucket (see `buckets` below) the first 8 calls
   * alternate between eager and graph, the last 3 of each timed with CUDA events, and the
   * executor with the lower median runs every later call (graph only when more than 2% faster;
   * eager where the driver lacks conditional graph nodes); grp_run_stats.executor says which ran,
   * grp_run_stats.auto_state and grp_session_auto_decisions what was decided ("dataflow":
   * GRP_ERR_UNSUPPORTED); docs/execution.md. The CPU backend has one executor: it
   * accepts only "auto" (others: GRP_ERR_UNSUPPORTED). */
  const char* executor;
  int device; /* CUDA device ordinal; must be 0 on the CPU backend */
  /* Appended in 0.1.0 (zero: the default): */
  /* Trips of a device loop without `max` before grp_session_run fails (GRP_ERR_TYPE on the CPU,
   * GRP_ERR_DEVICE on CUDA, the message naming the loop and the cap). 0: $GRAPE_MAX_LOOP_TRIPS
   * if set, else 100000. Negative: GRP_ERR_INVALID_ARGUMENT. */
  int64_t max_loop_trips;
  /* Wall-clock limit of each grp_session_run in seconds; 0: none. A run past it fails with
   * GRP_ERR_INTERRUPTED. Checked before every op and loop trip (CPU) or kernel launch (CUDA
   * eager, until the run writes its first state: then it runs to the end); the CUDA graph executor
   * checks it only before launching its graph. */
  double timeout_seconds;
  /* Appended with shape buckets (zero: the default): */
  /* CUDA graph executor and "auto": shape buckets per symbolic dim, "S=pow2;T=16,64,256;B=exact"
   * (pow2: 1, 2, 3..4, 5..8, ...; exact: one graph per value; a list: upper edges, pow2 above the
   * last). One instantiated graph serves every call whose dims fall in its bucket (a call with
   * other dims rewrites the graph's nodes, no new graph), and "auto" decides per bucket. NULL or
   * "": every dim pow2. A bad spec: GRP_ERR_INVALID_ARGUMENT (on every backend). */
  const char* buckets;
  /* Device memory the instantiated graphs may hold before the least recently used one is
   * evicted (it is rebuilt from the plan when its bucket comes back). 0: 1 GiB; negative:
   * GRP_ERR_INVALID_ARGUMENT. */
  int64_t graph_memory_bytes;
} grp_session_options;

/* Sets the first `struct_size` bytes of *opts to the defaults, and opts->struct_size to
 * `struct_size`: the size of the caller's grp_session_options (a larger size than this library
 * knows gets a zero, i.e. default, tail). Nothing is written when opts is NULL or struct_size is
 * less than sizeof(size_t). */
GRAPE_API void grp_session_options_init(grp_session_options* opts, size_t struct_size);
#if defined(GRAPE_BUILDING_LIBRARY)
/* Kept for programs linked before grp_session_options_init existed: returns the library's size. */
GRAPE_API grp_session_options grp_session_default_options(void);
#else
/* The defaults, struct_size = sizeof(grp_session_options) of this header. */
static inline grp_session_options grp_session_default_options(void) {
  grp_session_options o;
  grp_session_options_init(&o, sizeof o);
  return o;
}
#endif

/* A session of one entry point. opts NULL: defaults. Fails with GRP_ERR_INVALID_ARGUMENT when
 * the entry does not exist or the model declares weights but none are set. */
GRAPE_API grp_error* grp_session_create(grp_model* m, const grp_session_options* opts,
                                        GRP_OWN grp_session** out);
/* NULL is a no-op. */
GRAPE_API void grp_session_destroy(grp_session* s);

/* Inputs are the entry's parameters, in order; outputs its results, named "out0", "out1", ...
 * Counts are 0 and names NULL for NULL or out of range; names are valid while the session
 * lives. */
GRAPE_API size_t grp_session_num_inputs(const grp_session* s);
GRAPE_API const char* grp_session_input_name(const grp_session* s, size_t i);
GRAPE_API size_t grp_session_num_outputs(const grp_session* s);
GRAPE_API const char* grp_session_output_name(const grp_session* s, size_t i);
/* The index of the input called `name`. */
GRAPE_API grp_error* grp_session_input_index(const grp_session* s, const char* name, size_t* out);

/* Declared type of input/output i. NULL out-pointers are skipped. dims[k] is the size of dim k,
 * or -1 where the dim is symbolic; dim_exprs[k] is dim k as declared ("768", "B", "S+1"). Arrays
 * have *rank elements and stay valid while the session lives. */
GRAPE_API grp_error* grp_session_input_info(const grp_session* s, size_t i, grp_dtype* dtype, size_t* rank,
                                            const int64_t** dims, const char* const** dim_exprs);
GRAPE_API grp_error* grp_session_output_info(const grp_session* s, size_t i, grp_dtype* dtype, size_t* rank,
                                             const int64_t** dims, const char* const** dim_exprs);

/* Sets input `name` to a copy of `data` (nbytes = product(shape) * grp_dtype_size(dtype); data
 * may be NULL only when nbytes is 0). The dtype and rank must be the declared ones and every
 * fixed dim must match (GRP_ERR_TYPE otherwise); symbolic dims are checked across inputs by
 * grp_session_run. An input keeps its value across runs until it is set again. */
GRAPE_API grp_error* grp_session_set_input(grp_session* s, const char* name, grp_dtype dtype,
                                           const int64_t* shape, size_t rank, const void* data,
                                           size_t nbytes);
/* Zero-copy input: the session allocates input `name` with this dtype and shape (checked as by
 * grp_session_set_input), zero-filled, and returns the buffer it lives in (host memory, on both
 * backends: the CUDA executors copy it to the device at the start of each run) and its size.
 * The caller writes the input straight into it.
 * The buffer stays the input's value, and valid, until the input is set, bound or allocated
 * again, or the session is destroyed; the caller may rewrite it between runs. */
GRAPE_API grp_error* grp_session_input_buffer(grp_session* s, const char* name, grp_dtype dtype,
                                              const int64_t* shape, size_t rank, void** data, size_t* nbytes);
/* Binds caller memory as input `name` without copying it on the host. Host memory on both
 * backends (the CUDA executors copy it to the device at the start of each run). On the CUDA
 * backend `data` may also be device memory of the session's GPU (cudaMalloc / cuMemAlloc; told
 * apart with cuPointerGetAttributes): the kernels then read it in place — a new pointer changes
 * only kernel parameters, never a CUDA graph — unless the entry updates that input in place, in
 * which case it is copied device to device at the start of each run. Device memory of another GPU,
 * or on the CPU backend, is GRP_ERR_INVALID_ARGUMENT. The session keeps the pointer: the memory
 * must stay valid, and must not be written during grp_session_run, until the input is set or
 * bound again or the session is destroyed. The session never writes to it. */
GRAPE_API grp_error* grp_session_bind_input(grp_session* s, const char* name, grp_dtype dtype,
                                            const int64_t* shape, size_t rank, const void* data,
                                            size_t nbytes);
/* Like grp_session_input_buffer, but the buffer is zero-filled device memory of the session's GPU
 * (CUDA backend only; GRP_ERR_UNSUPPORTED on the CPU): the caller writes the input on the device
 * (cudaMemcpy, its own kernels; on the session's stream, or synchronised before the run) and the
 * kernels read it in place. *data is a device pointer (CUdeviceptr / the cudaMalloc kind); it stays
 * the input's value, and valid, until the input is set, bound or allocated again, or the session
 * is destroyed. */
GRAPE_API grp_error* grp_session_input_device_buffer(grp_session* s, const char* name, grp_dtype dtype,
                                                     const int64_t* shape, size_t rank, void** data,
                                                     size_t* nbytes);
/* Binds caller memory of `capacity` bytes as the destination of output i (data NULL unbinds).
 * After each successful run the output's value is in that memory and grp_session_get_output
 * returns that pointer. The memory must stay valid until the output is unbound or the session is
 * destroyed. If the output of a run needs more than `capacity` bytes, grp_session_run fails with
 * GRP_ERR_INVALID_ARGUMENT before executing anything. On the CPU backend the reference executor
 * computes into its own buffer and the result is copied into the bound memory once per run; on
 * CUDA the kernels write into it directly. */
GRAPE_API grp_error* grp_session_bind_output(grp_session* s, size_t i, void* data, size_t capacity);
/* The stream runs are issued on: a CUstream / cudaStream_t of the session's GPU (its primary
 * context, which the CUDA runtime uses); NULL: the session's own stream. A run is queued after the
 * work the caller queued on that stream before grp_session_run (a kernel filling a device input,
 * say), and grp_session_run still returns only when the run is complete. The CPU backend has no
 * streams: NULL is accepted, anything else is GRP_ERR_UNSUPPORTED. */
GRAPE_API grp_error* grp_session_set_stream(grp_session* s, void* stream);

/* Runs the entry on the current inputs (every input must be set). On success the outputs and
 * the state are updated; on failure nothing changes. */
GRAPE_API grp_error* grp_session_run(grp_session* s);
/* Stops the grp_session_run in progress on `s`, which fails with GRP_ERR_INTERRUPTED and changes
 * nothing; the session stays usable. The one session function that may be called from any thread
 * while another uses the session, and from a signal handler (it only sets an atomic flag). With
 * no run in progress it has no effect (the next run clears it). NULL is a no-op. The CUDA graph
 * executor cannot stop a launched graph: there it takes effect only before the launch; the CUDA
 * eager executor only until the run writes its first state (docs/execution.md, "Bounded runs"). */
GRAPE_API void grp_session_interrupt(grp_session* s);
/* Output i of the last successful run. NULL out-pointers are skipped. The pointers stay valid
 * until the next run, grp_session_reset_state or the session is destroyed (bound outputs: the
 * bound memory). GRP_ERR_INVALID_ARGUMENT before the first successful run. */
GRAPE_API grp_error* grp_session_get_output(grp_session* s, size_t i, grp_dtype* dtype, const int64_t** shape,
                                            size_t* rank, const void** data, size_t* nbytes);
/* Forgets the state (the next run starts fresh, as a new session would) and the outputs of the
 * last run. Inputs are kept. */
GRAPE_API grp_error* grp_session_reset_state(grp_session* s);

/* The model's state tensors (shared by all entries of one session), in declaration order. */
GRAPE_API size_t grp_session_num_states(const grp_session* s);
GRAPE_API const char* grp_session_state_name(const grp_session* s, size_t i);
/* The current value of state `name`. A state is created by the first run that binds the
 * symbolic dims of its shape; before that this is GRP_ERR_INVALID_ARGUMENT. Pointers valid until
 * the next run, reset or set_state. NULL out-pointers are skipped. */
GRAPE_API grp_error* grp_session_get_state(grp_session* s, const char* name, grp_dtype* dtype,
                                           const int64_t** shape, size_t* rank, const void** data,
                                           size_t* nbytes);
/* Replaces state `name` with a copy of `data` (declared dtype and rank, fixed dims matching;
 * GRP_ERR_TYPE otherwise). Later runs must bind its symbolic dims to the same sizes. */
GRAPE_API grp_error* grp_session_set_state(grp_session* s, const char* name, grp_dtype dtype,
                                           const int64_t* shape, size_t rank, const void* data,
                                           size_t nbytes);

/* ---- backends ------------------------------------------------------------------------------ */

/* 1 if this build and machine can run `backend` ("cpu", "cuda", "auto"), else 0. */
GRAPE_API int grp_backend_available(const char* backend);

/* ---- host tensors and .npy files ----------------------------------------------------------- */

/* An owned, immutable host tensor (dense, C order), e.g. read from a .npy file. */
typedef struct grp_tensor grp_tensor;

/* Reads a .npy file (numpy dtypes <f4 <f2 <i4 <i8 |b1, C order; see docs/c-api.md). Errors:
 * GRP_ERR_IO (cannot open/read), GRP_ERR_FORMAT (anything malformed or unsupported), naming the
 * file. */
GRAPE_API grp_error* grp_tensor_read_npy(const char* path, GRP_OWN grp_tensor** out);
/* A tensor holding a copy of `data` (NULL only when nbytes is 0). */
GRAPE_API grp_error* grp_tensor_create(grp_dtype dtype, const int64_t* shape, size_t rank, const void* data,
                                       size_t nbytes, GRP_OWN grp_tensor** out);
/* NULL is a no-op. */
GRAPE_API void grp_tensor_destroy(grp_tensor* t);
/* Accessors; for NULL: GRP_F32, 0, NULL, NULL, 0. Pointers valid while the tensor lives. */
GRAPE_API grp_dtype grp_tensor_dtype(const grp_tensor* t);
GRAPE_API size_t grp_tensor_rank(const grp_tensor* t);
GRAPE_API const int64_t* grp_tensor_shape(const grp_tensor* t);
GRAPE_API const void* grp_tensor_data(const grp_tensor* t);
GRAPE_API size_t grp_tensor_nbytes(const grp_tensor* t);

/* Writes a .npy file (version 1.0, C order) atomically. bf16 has no numpy dtype and is written
 * as float32 (exact). */
GRAPE_API grp_error* grp_npy_write(const char* path, grp_dtype dtype, const int64_t* shape, size_t rank,
                                   const void* data, size_t nbytes);

/* ---- Backends and run statistics (appended in 0.1.0) ------------------------------------- */

/* The backend a session runs on: "cpu" or "cuda". With backend "auto" and no usable GPU it is
 * "cpu", and grp_session_fallback_reason says why (else ""). Valid while the session lives. */
GRAPE_API const char* grp_session_backend(const grp_session* s);
GRAPE_API const char* grp_session_fallback_reason(const grp_session* s);

/* What the last grp_session_run did. Grows through struct_size like the options structs. */
typedef struct grp_run_stats {
  size_t struct_size;
  int64_t kernels;     /* kernel launches (CUDA; 0 on the CPU backend) */
  int64_t host_syncs;  /* host synchronisations inside the run (device loop conditions) */
  double device_ms;    /* time of the run on the device stream, measured with CUDA events */
  size_t device_bytes; /* device memory held by the session */
  double compile_ms;   /* building the session's kernels (NVRTC or the kernel cache) */
  /* Appended after the first version (filled only when struct_size covers them): */
  /* The executor that ran the run: "eager", "graph" or "mono" on CUDA (with executor "auto"
   * "eager" or "graph", or "mono" for a call the decoder plan takes; "auto" before its first
   * run), "cpu" on the CPU backend. Valid while the session lives. */
  const char* executor;
  int64_t graph_launches; /* CUDA graphs launched by the run (graph executor: 1) */
  size_t graphs;          /* instantiated CUDA graphs the session holds */
  int64_t param_uploads;  /* parameter-block uploads (0 when no pointer, dim or state address changed) */
  /* Appended in 0.2.0: executor "auto", its decision for the run's shape bucket, one line:
   * "measuring (3 of 8 calls)", "graph (graph 0.740 ms vs eager 0.890 ms, medians of 3 timed
   * calls each)", "eager (the graph executor is unavailable: ...)"; "" for the other executors
   * and the CPU backend. Valid until the session's next run. */
  const char* auto_state;
  /* Appended with shape buckets: */
  size_t graph_bytes;    /* device memory the session's instantiated graphs took */
  int64_t graph_updates; /* 1 when the run rewrote its bucket's graph for new dims (no new graph) */
  /* Appended with autotuning (CUDA; docs/kernels.md, "Autotuning"): */
  size_t kernels_tuned;   /* kernels whose launch configurations the session measured so far */
  size_t kernels_retuned; /* kernels bound now to a configuration other than the heuristic's */
  double tuning_ms;       /* host time those measurements took, so far */
  /* Appended with the decoder plan: executor "mono", "decoder" when the run took the decoder plan
   * (docs/execution.md), else "general (<why not>)"; "" for the other executors and the CPU
   * backend. Valid until the session's next run. */
  const char* plan;
} grp_run_stats;
/* Fills `out` (whose struct_size the caller sets); out-parameter untouched on failure. */
GRAPE_API grp_error* grp_session_last_run_stats(const grp_session* s, grp_run_stats* out);

/* ---- Kernel profiles (appended in 0.2.0) ------------------------------------------------------ */

/* Per-kernel device times of the runs that follow: on != 0 turns them on (clearing what was
 * collected), 0 off. The CUDA backend's eager executor records a CUDA event before and after each
 * kernel launch, which adds a little host time per launch (run latency is best measured with
 * profiling off). With executor "auto" every run while profiling is on runs eager and does not
 * count towards auto's decision. Errors: GRP_ERR_UNSUPPORTED on the CPU backend and on the graph
 * executor. */
GRAPE_API grp_error* grp_session_set_profiling(grp_session* s, int on);

typedef struct grp_kernel_profile {
  size_t struct_size; /* sizeof(grp_kernel_profile) */
  /* Valid until the next grp_session_kernel_profile call or the session's destruction: */
  const char* name;  /* the generated kernel, e.g. "decode_step_k12_matmul" */
  const char* op;    /* the op whose result it writes, e.g. "matmul" */
  const char* where; /* that op's source position "file:line:col", or "" */
  unsigned grid, block;
  int64_t launches; /* launches timed (all profiled runs together) */
  double total_ms;  /* their device time, summed */
  /* Per launch, at the dims of the last run: bytes the kernel reads and writes (its operands as
   * its ops see them, its results), and floating-point operations of its matrix products
   * (2*M*N*K each; other ops are not counted). */
  double bytes;
  double flops;
} grp_kernel_profile;

/* Takes a snapshot of what was collected: *runs (runs profiled) and *count (kernels launched at
 * least once; read each with grp_session_kernel_profile_at). Either pointer may be NULL. A
 * session that was never profiled has 0 and 0. */
GRAPE_API grp_error* grp_session_kernel_profile(grp_session* s, int64_t* runs, size_t* count);
/* Kernel i < count of the last snapshot, in program order. GRP_ERR_INVALID_ARGUMENT for i out of
 * range or a struct_size smaller than this first version's. */
GRAPE_API grp_error* grp_session_kernel_profile_at(const grp_session* s, size_t i, grp_kernel_profile* out);

/* ---- Executor "auto": its decisions (appended in 0.2.0) --------------------------------------- */

/* One shape bucket of a session with executor "auto" on CUDA (docs/execution.md, "Selective
 * execution"). Strings and arrays are valid until the next grp_session_auto_decisions call or
 * the session's destruction. */
typedef struct grp_auto_decision {
  size_t struct_size;      /* sizeof(grp_auto_decision) */
  const char* bucket;      /* the dims it stands for, "B=2, S=3..4"; "" without symbolic dims */
  const char* executor;    /* "eager" or "graph" once decided; "" while measuring */
  const char* reason;      /* why, one line (as in grp_run_stats.auto_state); "" while measuring */
  int64_t calls;           /* calls of the bucket so far */
  int64_t measured_calls;  /* of those, the calls that counted towards the decision */
  int64_t calls_to_decide; /* calls the measurement takes (8); the decision holds after them */
  const double* eager_ms;  /* device time of each timed eager call, in call order */
  size_t eager_count;
  const double* graph_ms; /* and of each timed graph call */
  size_t graph_count;
  double eager_median_ms; /* medians of those; 0 before the first */
  double graph_median_ms;
} grp_auto_decision;

/* Takes a snapshot of the decisions: *count buckets (0 for an executor other than "auto" and on
 * the CPU backend), in the order of their first runs; read each with grp_session_auto_decision_at.
 * count may be NULL. */
GRAPE_API grp_error* grp_session_auto_decisions(grp_session* s, size_t* count);
/* Bucket i < count of the last snapshot. GRP_ERR_INVALID_ARGUMENT for i out of range or a
 * struct_size smaller than this first version's. */
GRAPE_API grp_error* grp_session_auto_decision_at(const grp_session* s, size_t i, grp_auto_decision* out);

/* ---- Ahead-of-time kernel compiles and the kernel cache (appended in 0.1.0) ------------------ */

/* Generates the CUDA kernels of every entry of `m` and compiles each with NVRTC for every target
 * of `archs`, a comma-separated list of "sm_NN" (cubin) or "compute_NN" (PTX only) names, e.g.
 * "sm_80,sm_90". Needs the NVRTC library, not a GPU; the kernel cache is neither read nor written.
 * On success *report is a short NUL-terminated text (the targets, each entry with its number of
 * kernels, the total number of compiles); free it with grp_free(). Errors:
 *   GRP_ERR_INVALID_ARGUMENT  a NULL argument; an archs list that is empty, malformed or names a
 *                             target this NVRTC cannot compile for (the message names it);
 *   GRP_ERR_NO_DEVICE         no NVRTC library can be loaded;
 *   GRP_ERR_INTERNAL          a kernel fails to compile or compiles with warnings: the message
 *                             lists each one with its entry, kernel, op and `file:line:col`, and
 *                             NVRTC's log. */
GRAPE_API grp_error* grp_model_compile_kernels(const grp_model* m, const char* archs, GRP_OWN char** report);

/* Ahead-of-time kernel bundles (docs/kernels.md, "Kernel bundles"). grp_kernel_bundle_write compiles
 * as grp_model_compile_kernels does (same archs, report and errors) and writes every kernel, with
 * the executors' own kernels, to the file `path` (a temporary file beside it, renamed into place;
 * GRP_ERR_IO when it cannot be written). grp_kernel_bundle_use reads and checks a bundle and makes
 * every later session of this process take its kernels from it before the kernel cache or NVRTC,
 * so a machine without the CUDA toolkit can run a model whose kernels are all in the bundle. A
 * kernel the bundle lacks (other -D values, another target) is compiled as usual. Errors:
 * GRP_ERR_IO (cannot be read, not a regular file), GRP_ERR_FORMAT (not a bundle, corrupt, written
 * by another Grape version); the message names the file. Thread-safe. */
GRAPE_API grp_error* grp_kernel_bundle_write(const grp_model* m, const char* archs, const char* path,
                                             GRP_OWN char** report);
/* The same, and for each row count in `rows` ("1,5,8": comma-separated, each 1..16) the row-count
 * variants of the matrix products whose row count is a runtime dim (decode's batch): the kernels a
 * session builds at the first run with that many rows (docs/kernels.md, "Which path a matrix
 * product takes"). "" adds none. GRP_ERR_INVALID_ARGUMENT names a malformed or out-of-range count. */
GRAPE_API grp_error* grp_kernel_bundle_write_rows(const grp_model* m, const char* archs, const char* rows,
                                                  const char* path, GRP_OWN char** report);
GRAPE_API grp_error* grp_kernel_bundle_use(const char* path);

/* Progress of kernel builds (NVRTC), for a person waiting on them: once set, `fn` is called with
 * `user`, the kernels finished and the kernels to build, as each kernel of a build finishes
 * (grp_session_create on the CUDA backend, grp_model_compile_kernels, grp_kernel_bundle_write);
 * kernels found in the kernel cache or a bundle count too. Builds running at the same time add up
 * into one count; when the last one ends, `fn` sees done == total and the count restarts. Calls
 * are serialised and made from the building threads while a lock is held: `fn` must return
 * quickly and must not call into Grape. Process-wide; NULL removes it (the default). The grape
 * command uses it for its progress line on a terminal. Thread-safe. */
typedef void (*grp_build_progress_fn)(void* user, size_t done, size_t total);
GRAPE_API void grp_set_build_progress(grp_build_progress_fn fn, void* user);

/* Compile worker processes. NVRTC compiles on several threads of one process slow each other down
 * (on a 16-core machine GPT-2's kernels built in 8.4-9.1 s on 16 threads, 5.1-5.8 s in 4 processes of
 * 4 threads), so a build of several kernels (grp_session_create on the CUDA backend,
 * grp_model_compile_kernels, grp_kernel_bundle_write) sends its compiles to worker processes when
 * an executable that serves them is known: the one set here, else $GRAPE_COMPILE_WORKER. Such an
 * executable, started with argv[1] == GRP_COMPILE_WORKER_ARG, calls grp_compile_worker_main(argc,
 * argv) from main() and exits with its result before anything else; the grape command does that
 * and sets itself, and an embedding program may do the same, or name an installed `grape`.
 * $GRAPE_COMPILE_PROCESSES=0 keeps every compile in the building process. A worker that cannot be
 * started or dies has its compiles run in the building process instead: the results are the same
 * either way. NULL or "" unsets (the default: no worker, compiles on threads). Thread-safe. */
#define GRP_COMPILE_WORKER_ARG "--grape-compile-worker"
GRAPE_API void grp_set_compile_worker(const char* executable);
/* The body of a worker process: serves the requests of the build that started it until it closes
 * them. Returns the exit status: 0; 2 when argv is not a worker's (argv[1] is not
 * GRP_COMPILE_WORKER_ARG, or the channel count is missing or out of range). */
GRAPE_API int grp_compile_worker_main(int argc, char** argv);

/* The on-disk kernel cache lives in the folder "kernels" of $GRAPE_CACHE_DIR, else of
 * $XDG_CACHE_HOME/grape, else of $HOME/.cache/grape (created, mode 0700, when missing).
 * *out is "directory: DIR\nentries: N\nbytes: B\ntuning file: F\ntuning decisions: T\n" (B: the
 * entries' size on disk; F: the autotuner's decisions beside the folder, "<root>/tuning/tuning.txt",
 * which need not exist yet; T: the valid decisions in it); free it with grp_free(). GRP_ERR_IO when
 * the folder cannot be placed or created. */
GRAPE_API grp_error* grp_cache_info(GRP_OWN char** out);
/* Deletes every entry of the kernel cache (and leftover temporary files) and the tuning file, so
 * kernels are built and measured again; the folder stays.
 * GRP_ERR_IO when the folder cannot be placed, created or listed, or an entry cannot be deleted. */
GRAPE_API grp_error* grp_cache_clear(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GRAPE_H */
