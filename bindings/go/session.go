package grape

/*
#include <stdlib.h>
#include <grape.h>
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// SessionOptions choose what a session runs and where. The zero value (or nil) is the default.
type SessionOptions struct {
	Entry    string // "" for "main"
	Backend  string // "auto" | "cpu" | "cuda"; "" for "auto"
	Executor string // "auto" | "eager" | "graph" | "mono" | "dataflow"; "" for "auto"
	Device   int    // CUDA device ordinal; 0 on the CPU backend
	// Shape buckets per symbolic dim for the CUDA graph executor and "auto", e.g.
	// "S=pow2;T=16,64,256;B=exact" (docs/execution.md); "" for pow2 on every dim. Checked on every
	// backend.
	Buckets string
	// Device memory instantiated CUDA graphs may hold before the least recently used is evicted;
	// 0 for the default (1 GiB).
	GraphMemoryBytes int64
	// Trips of a device loop without `max` before Run fails (CodeType on the CPU, CodeDevice on
	// CUDA, naming the loop and the cap); 0 for $GRAPE_MAX_LOOP_TRIPS if set, else 100000.
	// Negative: NewSession fails with CodeInvalidArgument.
	MaxLoopTrips int64
	// Wall-clock limit of each Run; a run past it fails with CodeInterrupted and changes nothing
	// (docs/execution.md, "Bounded runs"). 0 for none; negative: CodeInvalidArgument.
	Timeout time.Duration
}

// IOInfo describes an input or output of a session's entry.
type IOInfo struct {
	Name  string
	DType DType
	// Dims[k] is the size of dim k, or -1 where it is symbolic; DimExprs[k] is dim k as declared
	// ("768", "B", "S+1").
	Dims     []int64
	DimExprs []string
}

// Session runs one entry point of a model and owns that entry's inputs, outputs and the model's
// state between runs.
//
// A Session is safe to call from several goroutines: its methods are serialised by a mutex (the C
// library requires one thread at a time per session). Tensors that alias session memory
// (OutputView, InputBuffer) are not protected by it: do not use them while another goroutine may
// be calling the session. Sessions are independent: any number may run concurrently.
//
// Aliasing tensors point into memory the session frees in Close (or its finalizer): keep the
// Session reachable, e.g. with runtime.KeepAlive(s), for as long as you use them.
type Session struct {
	mu sync.Mutex
	// imu guards ptr for Interrupt, which must not wait for mu (Run holds it): Close takes both
	// to destroy the session, Interrupt only imu (for reading).
	imu      sync.RWMutex
	ptr      *C.grp_session
	inputs   []IOInfo
	outputs  []IOInfo
	states   []string
	backend  string
	fallback string
	bound    []outputBinding // per output, under mu
}

// outputBinding tracks BindOutput for one output.
type outputBinding struct {
	bound     bool // caller memory is bound to it
	delivered bool // a successful run wrote the output into the memory bound now
	// The memory the last run delivered the output into was unbound since: the library would
	// still return it, so Output and OutputView refuse until the next run.
	released bool
}

// NewSession creates a session of one entry of the model. It fails with CodeInvalidArgument when
// the entry does not exist or the model declares weights but none are set. opts may be nil.
func (m *Model) NewSession(opts *SessionOptions) (*Session, error) {
	var copts C.grp_session_options
	C.grp_session_options_init(&copts, C.sizeof_grp_session_options)
	if opts != nil {
		for _, f := range []struct {
			s   string
			dst **C.char
		}{{opts.Entry, &copts.entry}, {opts.Backend, &copts.backend}, {opts.Executor, &copts.executor},
			{opts.Buckets, &copts.buckets}} {
			if f.s != "" {
				*f.dst = C.CString(f.s)
				defer C.free(unsafe.Pointer(*f.dst))
			}
		}
		copts.device = C.int(opts.Device)
		copts.graph_memory_bytes = C.int64_t(opts.GraphMemoryBytes)
		copts.max_loop_trips = C.int64_t(opts.MaxLoopTrips)
		copts.timeout_seconds = C.double(opts.Timeout.Seconds())
	}
	var ptr *C.grp_session
	err := m.use(func(p *C.grp_model) error {
		return check(C.grp_session_create(p, &copts, &ptr))
	})
	if err != nil {
		return nil, err
	}
	s := &Session{ptr: ptr}
	runtime.SetFinalizer(s, func(s *Session) {
		finalized.Add(1)
		s.Close()
	})
	if err := s.describe(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// describe caches the entry's signature, which cannot change during the session's life.
func (s *Session) describe() error {
	p := s.ptr
	var err error
	s.inputs = make([]IOInfo, int(C.grp_session_num_inputs(p)))
	for i := range s.inputs {
		if s.inputs[i], err = ioInfo(p, i, true); err != nil {
			return err
		}
	}
	s.outputs = make([]IOInfo, int(C.grp_session_num_outputs(p)))
	for i := range s.outputs {
		if s.outputs[i], err = ioInfo(p, i, false); err != nil {
			return err
		}
	}
	s.states = make([]string, int(C.grp_session_num_states(p)))
	for i := range s.states {
		s.states[i] = C.GoString(C.grp_session_state_name(p, C.size_t(i)))
	}
	s.backend = C.GoString(C.grp_session_backend(p))
	s.fallback = C.GoString(C.grp_session_fallback_reason(p))
	s.bound = make([]outputBinding, len(s.outputs))
	runtime.KeepAlive(s)
	return nil
}

func ioInfo(p *C.grp_session, i int, input bool) (IOInfo, error) {
	var dt C.grp_dtype
	var rank C.size_t
	var dims *C.int64_t
	var exprs **C.char
	var info IOInfo
	var e *C.grp_error
	if input {
		info.Name = C.GoString(C.grp_session_input_name(p, C.size_t(i)))
		e = C.grp_session_input_info(p, C.size_t(i), &dt, &rank, &dims, &exprs)
	} else {
		info.Name = C.GoString(C.grp_session_output_name(p, C.size_t(i)))
		e = C.grp_session_output_info(p, C.size_t(i), &dt, &rank, &dims, &exprs)
	}
	if err := check(e); err != nil {
		return info, err
	}
	info.DType = DType(dt)
	info.Dims = goShape(dims, rank)
	info.DimExprs = make([]string, int(rank))
	if rank > 0 {
		for k, c := range unsafe.Slice(exprs, int(rank)) {
			info.DimExprs[k] = C.GoString(c)
		}
	}
	return info, nil
}

// Close releases the session and everything it owns; tensors aliasing its memory become
// invalid. It is idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr != nil {
		s.imu.Lock()
		C.grp_session_destroy(s.ptr)
		s.ptr = nil
		s.imu.Unlock()
		runtime.SetFinalizer(s, nil)
	}
	return nil
}

// Interrupt stops the Run in progress (grp_session_interrupt): it fails with CodeInterrupted and
// changes nothing; the session stays usable. Unlike every other method it does not wait for the
// session's mutex, so any goroutine may call it while another is in Run. With no run in progress
// it has no effect (the next run starts afresh), as on a closed session. The CUDA graph executor
// can stop a run only before it launches its graph, the CUDA eager executor only until the run
// writes its first state (docs/execution.md, "Bounded runs").
func (s *Session) Interrupt() {
	s.imu.RLock()
	defer s.imu.RUnlock()
	if s.ptr != nil {
		C.grp_session_interrupt(s.ptr)
	}
}

// Backend is the backend the session runs on: "cpu" or "cuda". With backend "auto" and no usable
// GPU it is "cpu", and FallbackReason says why.
func (s *Session) Backend() string { return s.backend }

// FallbackReason says why a session that asked for backend "auto" runs on the CPU; "" when it
// runs where it asked to.
func (s *Session) FallbackReason() string { return s.fallback }

// InputIndex returns the position of input name among Inputs (CodeInvalidArgument when the entry
// has no such input).
func (s *Session) InputIndex(name string) (int, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var i C.size_t
	err := s.use(func(p *C.grp_session) error {
		return check(C.grp_session_input_index(p, cname, &i))
	})
	return int(i), err
}

// use runs f with the session's handle under its mutex, or fails when the session is closed.
func (s *Session) use(f func(p *C.grp_session) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr == nil {
		return errClosed("session")
	}
	err := f(s.ptr)
	runtime.KeepAlive(s)
	return err
}

// Inputs describes the entry's parameters, in order.
func (s *Session) Inputs() []IOInfo { return cloneInfos(s.inputs) }

// Outputs describes the entry's results, in order; they are named "out0", "out1", ...
func (s *Session) Outputs() []IOInfo { return cloneInfos(s.outputs) }

// States returns the names of the model's state tensors, in declaration order.
func (s *Session) States() []string { return append([]string{}, s.states...) }

func cloneInfos(in []IOInfo) []IOInfo {
	out := make([]IOInfo, len(in))
	for i, x := range in {
		out[i] = IOInfo{Name: x.Name, DType: x.DType, Dims: append([]int64{}, x.Dims...), DimExprs: append([]string{}, x.DimExprs...)}
	}
	return out
}

func (s *Session) input(name string) (IOInfo, bool) {
	for _, in := range s.inputs {
		if in.Name == name {
			return in, true
		}
	}
	return IOInfo{}, false
}

// SetInput sets input name to a copy of data with the given shape. data is []float32, []int32,
// []int64, []bool, or []uint16 holding the bits of an f16 or bf16 input (which one is the input's
// declared dtype); its length must be the product of shape. The dtype, rank and fixed dims must
// be the declared ones (CodeType otherwise). An input keeps its value across runs until it is
// set again.
func (s *Session) SetInput(name string, shape []int64, data any) error {
	var dtype DType
	switch data.(type) {
	case []float32:
		dtype = F32
	case []int32:
		dtype = I32
	case []int64:
		dtype = I64
	case []bool:
		dtype = Bool
	case []uint16:
		dtype = F16
		if in, ok := s.input(name); ok && in.DType == BF16 {
			dtype = BF16
		}
	default:
		return newError(CodeInvalidArgument, "input %q: unsupported data type %T (use SetInputTensor for raw bytes)", name, data)
	}
	raw, err := rawBytes(dtype, shape, data)
	if err != nil {
		return err
	}
	return s.setInput(name, dtype, shape, raw)
}

// SetInputTensor sets input name to a copy of t (for example an output of another session).
func (s *Session) SetInputTensor(name string, t Tensor) error {
	raw, err := rawBytes(t.DType, t.Shape, t.Data)
	if err != nil {
		return err
	}
	return s.setInput(name, t.DType, t.Shape, raw)
}

func (s *Session) setInput(name string, dtype DType, shape []int64, raw []byte) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return s.use(func(p *C.grp_session) error {
		err := check(C.grp_session_set_input(p, cname, C.grp_dtype(dtype), shapePtr(shape), C.size_t(len(shape)),
			sliceData(raw), C.size_t(len(raw))))
		runtime.KeepAlive(shape)
		runtime.KeepAlive(raw)
		return err
	})
}

// InputBuffer allocates input name with this dtype and shape inside the session, zero-filled,
// and returns a Tensor whose Data is that memory (no copy): write the input into it, e.g. through
// t.Float32(). It stays the input's value and valid until the input is set or allocated again or
// the session is closed; it may be rewritten between runs, but not during one.
func (s *Session) InputBuffer(name string, dtype DType, shape []int64) (Tensor, error) {
	if _, err := numElements(shape); err != nil {
		return Tensor{}, err
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var t Tensor
	err := s.use(func(p *C.grp_session) error {
		var data unsafe.Pointer
		var nbytes C.size_t
		if err := check(C.grp_session_input_buffer(p, cname, C.grp_dtype(dtype), shapePtr(shape), C.size_t(len(shape)),
			&data, &nbytes)); err != nil {
			return err
		}
		runtime.KeepAlive(shape)
		t = Tensor{DType: dtype, Shape: append([]int64{}, shape...), Data: cBytes(data, nbytes)}
		return nil
	})
	return t, err
}

// Run runs the entry on the current inputs (every input must be set). On success the outputs
// and the state are updated; on failure nothing changes.
//
// A run can be bounded (SessionOptions.Timeout, SessionOptions.MaxLoopTrips) and stopped from
// another goroutine (Interrupt); either way it fails with CodeInterrupted and changes nothing.
func (s *Session) Run() error {
	return s.use(func(p *C.grp_session) error {
		if err := check(C.grp_session_run(p)); err != nil {
			return err
		}
		for i := range s.bound {
			b := &s.bound[i]
			b.released, b.delivered = false, b.bound
		}
		return nil
	})
}

// Output returns a copy of output i of the last successful run; it stays valid forever.
func (s *Session) Output(i int) (Tensor, error) {
	var t Tensor
	err := s.use(func(*C.grp_session) error {
		v, err := s.outputLocked(i)
		if err != nil {
			return err
		}
		buf := alignedBytes(len(v.Data))
		copy(buf, v.Data)
		t = Tensor{DType: v.DType, Shape: v.Shape, Data: buf}
		return nil
	})
	return t, err
}

// OutputView returns output i of the last successful run without copying: Data aliases the
// session's memory and is valid only until the next Run, ResetState or Close. Copy what you need
// to keep (or use Output).
func (s *Session) OutputView(i int) (Tensor, error) {
	var t Tensor
	err := s.use(func(*C.grp_session) error {
		var err error
		t, err = s.outputLocked(i)
		return err
	})
	return t, err
}

// outputLocked reads output i; s.mu must be held.
func (s *Session) outputLocked(i int) (Tensor, error) {
	if i < 0 || i >= len(s.outputs) {
		return Tensor{}, newError(CodeInvalidArgument, "output %d out of range (the entry has %d)", i, len(s.outputs))
	}
	if s.bound[i].released {
		return Tensor{}, newError(CodeInvalidArgument,
			"output %d: the memory the last run wrote it to was unbound since (BindOutput, UnbindOutput); run again to read it", i)
	}
	var dt C.grp_dtype
	var shape *C.int64_t
	var rank C.size_t
	var data unsafe.Pointer
	var nbytes C.size_t
	err := check(C.grp_session_get_output(s.ptr, C.size_t(i), &dt, &shape, &rank, &data, &nbytes))
	runtime.KeepAlive(s)
	if err != nil {
		return Tensor{}, err
	}
	return Tensor{DType: DType(dt), Shape: goShape(shape, rank), Data: cBytes(data, nbytes)}, nil
}

// ResetState forgets the state (the next run starts fresh, as a new session would) and the
// outputs of the last run. Inputs are kept.
func (s *Session) ResetState() error {
	return s.use(func(p *C.grp_session) error {
		if err := check(C.grp_session_reset_state(p)); err != nil {
			return err
		}
		for i := range s.bound {
			s.bound[i].released, s.bound[i].delivered = false, false
		}
		return nil
	})
}

// State returns a copy of the current value of state name. A state exists once a run has bound
// the symbolic dims of its shape (CodeInvalidArgument before).
func (s *Session) State(name string) (Tensor, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var t Tensor
	err := s.use(func(p *C.grp_session) error {
		var dt C.grp_dtype
		var shape *C.int64_t
		var rank C.size_t
		var data unsafe.Pointer
		var nbytes C.size_t
		if err := check(C.grp_session_get_state(p, cname, &dt, &shape, &rank, &data, &nbytes)); err != nil {
			return err
		}
		buf := alignedBytes(int(nbytes))
		copy(buf, cBytes(data, nbytes))
		t = Tensor{DType: DType(dt), Shape: goShape(shape, rank), Data: buf}
		return nil
	})
	return t, err
}

// SetState replaces state name with a copy of t (the declared dtype and rank, fixed dims
// matching; CodeType otherwise). Later runs must bind its symbolic dims to the same sizes.
func (s *Session) SetState(name string, t Tensor) error {
	raw, err := rawBytes(t.DType, t.Shape, t.Data)
	if err != nil {
		return err
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return s.use(func(p *C.grp_session) error {
		err := check(C.grp_session_set_state(p, cname, C.grp_dtype(t.DType), shapePtr(t.Shape), C.size_t(len(t.Shape)),
			sliceData(raw), C.size_t(len(raw))))
		runtime.KeepAlive(t)
		runtime.KeepAlive(raw)
		return err
	})
}

// shapePtr passes a Go shape to C for the duration of a call (int64 holds no Go pointers).
func shapePtr(shape []int64) *C.int64_t {
	if len(shape) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&shape[0]))
}

// cBytes is a slice over C memory, without copying.
func cBytes(p unsafe.Pointer, n C.size_t) []byte {
	if n == 0 || p == nil {
		return []byte{}
	}
	return unsafe.Slice((*byte)(p), int(n))
}
