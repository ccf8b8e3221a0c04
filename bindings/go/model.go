package grape

/*
#include <stdlib.h>
#include <grape.h>
*/
import "C"

import (
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"
)

// finalized counts handles released by a finalizer rather than Close (tests read it).
var finalized atomic.Int64

// LoadOptions configure compiling a program. The zero value (or nil) is the default.
type LoadOptions struct {
	// Const overrides, as `-D NAME=VALUE`: every NAME must be a const the program declares.
	Defines map[string]int64
	// Keep the IR exactly as lowered (no constant folding, CSE, dead-code elimination).
	NoOptimize bool
	// Reject device loops without a compile-time trip bound (`while ... max N`).
	RequireLoopBounds bool
	// Compiler resource limits to set, as `--limit NAME=N` of the CLI: max_ops,
	// max_unrolled_iterations, max_call_depth, max_weights, max_tensor_elements,
	// max_program_elements, max_loop_trips (docs/language.md, "Limits"). They win over
	// $GRAPE_LIMITS; an unknown NAME makes loading fail with CodeInvalidArgument.
	Limits map[string]uint64
}

// Model is a compiled program plus its weights.
//
// A Model may be shared by any number of goroutines and sessions: grape.h makes models immutable
// once their weights are set, and setting weights is itself thread-safe (sessions created before
// keep the weights they started with). Close may be called while sessions of the model are still
// open: they keep what they need alive.
type Model struct {
	mu  sync.RWMutex // Close takes it for writing, every other method for reading
	ptr *C.grp_model
}

// LoadFile loads, checks and compiles a .grp file. opts may be nil.
func LoadFile(path string, opts *LoadOptions) (*Model, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	copts, free := opts.toC()
	defer free()
	var ptr *C.grp_model
	if err := check(C.grp_model_load_file(cpath, copts, &ptr)); err != nil {
		return nil, err
	}
	return newModel(ptr), nil
}

// LoadSource compiles a program held in memory. name is the file name diagnostics use ("" for
// "<source>"). opts may be nil.
func LoadSource(src, name string, opts *LoadOptions) (*Model, error) {
	csrc := C.CString(src)
	defer C.free(unsafe.Pointer(csrc))
	var cname *C.char
	if name != "" {
		cname = C.CString(name)
		defer C.free(unsafe.Pointer(cname))
	}
	copts, free := opts.toC()
	defer free()
	var ptr *C.grp_model
	if err := check(C.grp_model_load_source(csrc, C.size_t(len(src)), cname, copts, &ptr)); err != nil {
		return nil, err
	}
	return newModel(ptr), nil
}

func newModel(ptr *C.grp_model) *Model {
	m := &Model{ptr: ptr}
	runtime.SetFinalizer(m, func(m *Model) {
		finalized.Add(1)
		m.Close()
	})
	return m
}

// toC builds the C options in C memory (the struct is read during the call only, but it points
// at an array of strings, which cgo does not allow in Go memory). free releases it.
func (o *LoadOptions) toC() (*C.grp_model_options, func()) {
	if o == nil {
		return nil, func() {}
	}
	opts := (*C.grp_model_options)(C.malloc(C.sizeof_grp_model_options))
	C.grp_model_options_init(opts, C.sizeof_grp_model_options)
	if o.NoOptimize {
		opts.no_optimize = 1
	}
	if o.RequireLoopBounds {
		opts.require_loop_bounds = 1
	}
	defines := make([]string, 0, len(o.Defines))
	for k, v := range o.Defines {
		defines = append(defines, k+"="+strconv.FormatInt(v, 10))
	}
	limits := make([]string, 0, len(o.Limits))
	for k, v := range o.Limits {
		limits = append(limits, k+"="+strconv.FormatUint(v, 10))
	}
	defs := cStrings(defines)
	lims := cStrings(limits)
	if len(defs) > 0 {
		opts.defines = &defs[0]
		opts.num_defines = C.size_t(len(defs))
	}
	if len(lims) > 0 {
		opts.limits = &lims[0]
		opts.num_limits = C.size_t(len(lims))
	}
	return opts, func() {
		freeCStrings(defs)
		freeCStrings(lims)
		C.free(unsafe.Pointer(opts))
	}
}

// cStrings copies items, sorted (a deterministic order; the names are unique, so the order does not
// matter otherwise), into a C array of C strings (nil when empty); freeCStrings releases it.
func cStrings(items []string) []*C.char {
	if len(items) == 0 {
		return nil
	}
	sort.Strings(items)
	arr := C.malloc(C.size_t(len(items)) * C.size_t(unsafe.Sizeof((*C.char)(nil))))
	out := unsafe.Slice((**C.char)(arr), len(items))
	for i, item := range items {
		out[i] = C.CString(item)
	}
	return out
}

func freeCStrings(arr []*C.char) {
	for _, c := range arr {
		C.free(unsafe.Pointer(c))
	}
	if len(arr) > 0 {
		C.free(unsafe.Pointer(&arr[0]))
	}
}

// Close releases the model. It is idempotent; open sessions of the model stay valid.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ptr != nil {
		C.grp_model_destroy(m.ptr)
		m.ptr = nil
		runtime.SetFinalizer(m, nil)
	}
	return nil
}

// use runs f with the model's handle under the read lock, or fails when the model is closed.
func (m *Model) use(f func(p *C.grp_model) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.ptr == nil {
		return errClosed("model")
	}
	err := f(m.ptr)
	runtime.KeepAlive(m)
	return err
}

// SetWeightsFile reads every declared weight from a safetensors file. On failure the previous
// weights stay.
func (m *Model) SetWeightsFile(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	return m.use(func(p *C.grp_model) error {
		return check(C.grp_model_set_weights_file(p, cpath))
	})
}

// SetWeightsMemory reads the weights from the bytes of a safetensors file (copied: data may be
// reused after the call). name is used in error messages ("" for "<memory>").
func (m *Model) SetWeightsMemory(data []byte, name string) error {
	var cname *C.char
	if name != "" {
		cname = C.CString(name)
		defer C.free(unsafe.Pointer(cname))
	}
	return m.use(func(p *C.grp_model) error {
		err := check(C.grp_model_set_weights_memory(p, sliceData(data), C.size_t(len(data)), cname))
		runtime.KeepAlive(data)
		return err
	})
}

// SetRandomWeights sets deterministic random weights: each element is a function of (seed,
// weight name, index).
func (m *Model) SetRandomWeights(seed uint64) error {
	return m.use(func(p *C.grp_model) error {
		return check(C.grp_model_set_random_weights(p, C.uint64_t(seed)))
	})
}

// HasWeights reports whether sessions can be created: weights are set or none are declared.
func (m *Model) HasWeights() bool {
	var has bool
	m.use(func(p *C.grp_model) error {
		has = C.grp_model_has_weights(p) != 0
		return nil
	})
	return has
}

// Entries returns the names of the entry points, in declaration order (nil once closed).
func (m *Model) Entries() []string {
	var names []string
	m.use(func(p *C.grp_model) error {
		n := int(C.grp_model_num_entries(p))
		names = make([]string, n)
		for i := range names {
			names[i] = C.GoString(C.grp_model_entry_name(p, C.size_t(i)))
		}
		return nil
	})
	return names
}

// WeightInfo describes a declared weight.
type WeightInfo struct {
	Name  string // full name, prefix applied
	DType DType
	Shape []int64
}

// Weights returns the declared weights, in declaration order.
func (m *Model) Weights() ([]WeightInfo, error) {
	var ws []WeightInfo
	err := m.use(func(p *C.grp_model) error {
		n := int(C.grp_model_num_weights(p))
		ws = make([]WeightInfo, n)
		for i := range ws {
			var dt C.grp_dtype
			var shape *C.int64_t
			var rank C.size_t
			if err := check(C.grp_model_weight_info(p, C.size_t(i), &dt, &shape, &rank)); err != nil {
				return err
			}
			ws[i] = WeightInfo{Name: C.GoString(C.grp_model_weight_name(p, C.size_t(i))), DType: DType(dt), Shape: goShape(shape, rank)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ws, nil
}

// IRText returns the predicated IR as text (what `grape ir` prints) of one entry, or of the
// whole module when entry is "".
func (m *Model) IRText(entry string) (string, error) {
	var centry *C.char
	if entry != "" {
		centry = C.CString(entry)
		defer C.free(unsafe.Pointer(centry))
	}
	var text string
	err := m.use(func(p *C.grp_model) error {
		var out *C.char
		if err := check(C.grp_model_ir_text(p, centry, &out)); err != nil {
			return err
		}
		text = C.GoString(out)
		C.grp_free(unsafe.Pointer(out))
		return nil
	})
	return text, err
}

// WriteKernelBundle compiles every CUDA kernel of the model with NVRTC for archs ("sm_90" or
// "sm_80,sm_90") and writes them to the file path, an ahead-of-time kernel bundle
// (docs/kernels.md, "Kernel bundles"); it returns the compile report. Needs NVRTC, not a GPU.
func (m *Model) WriteKernelBundle(archs, path string) (string, error) {
	return m.WriteKernelBundleRows(archs, "", path)
}

// WriteKernelBundleRows is WriteKernelBundle that also writes, for each row count of rows ("1,5,8",
// each 1..16; "" for none), the variants of the matrix products whose row count is a runtime dim
// (decode's batch) compiled for that count, which a session otherwise compiles at its first run
// with that many rows (grp_kernel_bundle_write_rows). CodeInvalidArgument names a bad count.
func (m *Model) WriteKernelBundleRows(archs, rows, path string) (string, error) {
	carchs := C.CString(archs)
	defer C.free(unsafe.Pointer(carchs))
	crows := C.CString(rows)
	defer C.free(unsafe.Pointer(crows))
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var text string
	err := m.use(func(p *C.grp_model) error {
		var out *C.char
		if err := check(C.grp_kernel_bundle_write_rows(p, carchs, crows, cpath, &out)); err != nil {
			return err
		}
		text = C.GoString(out)
		C.grp_free(unsafe.Pointer(out))
		return nil
	})
	return text, err
}

// UseKernelBundle reads and checks the kernel bundle at path; every session created afterwards in
// this process takes its kernels from it before the kernel cache or NVRTC. Errors: CodeIO (cannot
// be read), CodeFormat (not a bundle, corrupt, or from another Grape version).
func UseKernelBundle(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	return check(C.grp_kernel_bundle_use(cpath))
}

// goShape copies a C shape array.
func goShape(shape *C.int64_t, rank C.size_t) []int64 {
	out := make([]int64, int(rank))
	if rank > 0 {
		copy(out, unsafe.Slice((*int64)(unsafe.Pointer(shape)), int(rank)))
	}
	return out
}

// Version is the version of the loaded library ("0.1.0").
func Version() string { return C.GoString(C.grp_version_string()) }

// VersionNumber is the version of the loaded library, major*1000000 + minor*1000 + patch.
func VersionNumber() uint32 { return uint32(C.grp_version_number()) }

// HeaderVersionNumber is the version of grape.h this package was compiled against.
const HeaderVersionNumber = C.GRAPE_VERSION_NUMBER

// BackendAvailable reports whether this build and machine can run backend ("cpu", "cuda",
// "auto").
func BackendAvailable(backend string) bool {
	c := C.CString(backend)
	defer C.free(unsafe.Pointer(c))
	return C.grp_backend_available(c) != 0
}
