package grape

/*
#include <stdint.h>
#include <stdlib.h>
#include <grape.h>

// Device addresses and CUDA streams cross as uintptr_t: they are not Go memory, and Go never
// dereferences them (an unsafe.Pointer made from a uintptr is what go vet warns about).
static grp_error* grape_go_bind_input(grp_session* s, const char* name, grp_dtype dtype,
                                      const int64_t* shape, size_t rank, uintptr_t data,
                                      size_t nbytes) {
	return grp_session_bind_input(s, name, dtype, shape, rank, (const void*)data, nbytes);
}
static grp_error* grape_go_bind_output(grp_session* s, size_t i, uintptr_t data, size_t capacity) {
	return grp_session_bind_output(s, i, (void*)data, capacity);
}
static grp_error* grape_go_set_stream(grp_session* s, uintptr_t stream) {
	return grp_session_set_stream(s, (void*)stream);
}
static grp_error* grape_go_input_device_buffer(grp_session* s, const char* name, grp_dtype dtype,
                                               const int64_t* shape, size_t rank, uintptr_t* data,
                                               size_t* nbytes) {
	void* p = NULL;
	grp_error* e = grp_session_input_device_buffer(s, name, dtype, shape, rank, &p, nbytes);
	*data = (uintptr_t)p;
	return e;
}
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// DeviceBuffer is input memory a session allocated on its GPU (Session.InputDeviceBuffer): a
// device address (a CUdeviceptr, what cudaMalloc returns) and its size in bytes. It is not host
// memory: hand Ptr to CUDA (a copy, a kernel argument), never dereference it or make a slice over
// it. The session owns the memory: it stays valid until the input is set, bound or allocated
// again, or the session is closed (keep the *Session reachable, runtime.KeepAlive(s), while the
// device may still use it).
type DeviceBuffer struct {
	Ptr    uintptr // the device address; 0 for an empty tensor
	NBytes int     // product(Shape) * DType.Size()
	DType  DType
	Shape  []int64
}

// InputDeviceBuffer is InputBuffer in device memory: the session allocates input name as a
// zero-filled dtype tensor of shape on its GPU and returns its device address, for the caller to
// fill on the device (cudaMemcpy, its own kernels: on the session's stream, see SetStream, or
// synchronised before Run); the kernels read it in place. CUDA backend only: the CPU backend
// returns an error with CodeUnsupported. The dtype, rank and fixed dims must be the declared ones
// (CodeType otherwise).
func (s *Session) InputDeviceBuffer(name string, dtype DType, shape []int64) (DeviceBuffer, error) {
	n, err := numElements(shape)
	if err != nil {
		return DeviceBuffer{}, err
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var b DeviceBuffer
	err = s.use(func(p *C.grp_session) error {
		var data C.uintptr_t
		var nbytes C.size_t
		if err := check(C.grape_go_input_device_buffer(p, cname, C.grp_dtype(dtype), shapePtr(shape),
			C.size_t(len(shape)), &data, &nbytes)); err != nil {
			return err
		}
		runtime.KeepAlive(shape)
		if int(nbytes) != n*dtype.Size() || (n > 0 && data == 0) {
			return newError(CodeInternal, "InputDeviceBuffer %q: libgrape returned %d bytes at %#x for %s%v",
				name, int(nbytes), uintptr(data), dtype, shape)
		}
		b = DeviceBuffer{Ptr: uintptr(data), NBytes: int(nbytes), DType: dtype, Shape: append([]int64{}, shape...)}
		return nil
	})
	return b, err
}

// BindInputDevice binds memory at address data as input name, a dtype tensor of shape, without
// copying it on the host (grp_session_bind_input). On the CUDA backend data may be device memory
// of the session's GPU (cudaMalloc, cuMemAlloc, another session's InputDeviceBuffer), which the
// kernels read in place (an entry that updates the input in place gets a device-to-device copy at
// the start of each run instead); it may also be C host memory, on both backends (copied to the
// device at the start of each run on CUDA). The library tells the two apart
// (cuPointerGetAttributes). Device memory of another GPU, or any device memory on the CPU backend,
// is CodeInvalidArgument; the dtype, rank and fixed dims must be the declared ones (CodeType
// otherwise).
//
// The session keeps the address, so the caller guarantees, as for unsafe code: data points to
// product(shape) * dtype.Size() bytes (it may be 0 only when that is 0) that are not Go memory
// (cgo forbids C keeping Go pointers: use C.malloc or device memory), and that memory stays valid,
// and is not written during Run, until the input is set, bound or allocated again or the session
// is closed. The session never writes to it.
func (s *Session) BindInputDevice(name string, dtype DType, shape []int64, data uintptr) error {
	n, err := numElements(shape)
	if err != nil {
		return err
	}
	size := dtype.Size() // numElements bounds n so that n*size fits
	if size == 0 {
		return newError(CodeInvalidArgument, "unknown dtype %d", int(dtype))
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return s.use(func(p *C.grp_session) error {
		err := check(C.grape_go_bind_input(p, cname, C.grp_dtype(dtype), shapePtr(shape), C.size_t(len(shape)),
			C.uintptr_t(data), C.size_t(n*size)))
		runtime.KeepAlive(shape)
		return err
	})
}

// SetStream issues the runs that follow on the caller's CUDA stream, a CUstream / cudaStream_t
// given as its address (grp_session_set_stream): each run is queued after the work the caller
// queued on that stream before Run (a kernel filling a device input, say), and Run still returns
// only when the run is complete. 0 goes back to the session's own stream. The stream must belong
// to the session's GPU, in its primary context (the one the CUDA runtime uses), and must not be
// destroyed until the session is given another stream or closed. The CPU backend has no streams:
// 0 is accepted, anything else is CodeUnsupported.
func (s *Session) SetStream(stream uintptr) error {
	return s.use(func(p *C.grp_session) error {
		return check(C.grape_go_set_stream(p, C.uintptr_t(stream)))
	})
}

// BindOutput binds capacity bytes of memory at address data as the destination of output i
// (grp_session_bind_output): after each successful Run the output's value is in that memory, and
// OutputView aliases it there (Output copies it). A Run whose output needs more than capacity
// bytes fails with CodeInvalidArgument before executing anything. On the CPU backend the result
// is copied into the memory once per run. Data 0 (with capacity 0) unbinds, as UnbindOutput.
// Errors: CodeInvalidArgument for i out of range, data 0 with a non-zero capacity, or a negative
// capacity.
//
// The session keeps the address, so the caller guarantees, as for unsafe code: data points to
// capacity bytes of host memory that is not Go memory (cgo forbids C keeping Go pointers: use
// C.malloc, say), readable and writable from any thread; that memory stays valid until output i
// is unbound or bound again or the session is closed, nothing else accesses it during Run, and
// nothing writes it while an OutputView of it is in use.
func (s *Session) BindOutput(i int, data uintptr, capacity int) error {
	if capacity < 0 {
		return newError(CodeInvalidArgument, "output %d: negative capacity %d", i, capacity)
	}
	return s.bindOutput(i, data, capacity)
}

// UnbindOutput makes output i go back to the session's own memory (grp_session_bind_output with
// NULL). Until the next run, Output and OutputView of i are CodeInvalidArgument errors when the
// last run had delivered the output into the memory unbound now (the library would still point
// there, and the caller may free it).
func (s *Session) UnbindOutput(i int) error {
	return s.bindOutput(i, 0, 0)
}

func (s *Session) bindOutput(i int, data uintptr, capacity int) error {
	if i < 0 {
		return newError(CodeInvalidArgument, "output %d out of range (the entry has %d)", i, len(s.outputs))
	}
	return s.use(func(p *C.grp_session) error {
		if err := check(C.grape_go_bind_output(p, C.size_t(i), C.uintptr_t(data), C.size_t(capacity))); err != nil {
			return err
		}
		b := &s.bound[i] // the library checked i
		b.released = b.released || b.delivered
		b.delivered = false
		b.bound = data != 0
		return nil
	})
}
