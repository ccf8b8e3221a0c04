package grape

import (
	"runtime"
	"testing"
	"unsafe"
)

// Device memory and caller streams (InputDeviceBuffer, BindInputDevice, SetStream): what the CPU
// backend answers, which every machine can check, and, where CUDA is available, device memory
// read in place.

const deviceSource = `model d
fn main(x: f32[B, 3]) -> f32[B, 3] {
  return x * 2.0
}
`

func deviceSession(t *testing.T, m *Model, backend string) *Session {
	t.Helper()
	s, err := m.NewSession(&SessionOptions{Backend: backend})
	if err != nil {
		t.Fatalf("NewSession(%s): %v", backend, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func loadDevice(t *testing.T) *Model {
	t.Helper()
	m, err := LoadSource(deviceSource, "d.grp", nil)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

func TestInputDeviceBufferIsUnsupportedOnTheCPU(t *testing.T) {
	s := deviceSession(t, loadDevice(t), "cpu")
	_, err := s.InputDeviceBuffer("x", F32, []int64{2, 3})
	wantCode(t, err, CodeUnsupported, "device memory is for sessions on the CUDA backend; this one runs on the CPU")
	// The type is checked first, as for InputBuffer.
	_, err = s.InputDeviceBuffer("x", I32, []int64{2, 3})
	wantCode(t, err, CodeType)
	_, err = s.InputDeviceBuffer("nope", F32, []int64{2, 3})
	wantCode(t, err, CodeInvalidArgument)
	_, err = s.InputDeviceBuffer("x", F32, []int64{-1, 3})
	wantCode(t, err, CodeInvalidArgument, "negative")
	// Nothing was set: the input is still missing, and the session still works.
	wantCode(t, s.Run(), CodeInvalidArgument)
	must(t, s.SetInput("x", []int64{1, 3}, []float32{1, 2, 3}))
	must(t, s.Run())
	out, err := s.Output(0)
	must(t, err)
	if got := f32s(t, out); !equal(got, []float32{2, 4, 6}) {
		t.Fatalf("output = %v", got)
	}
	s.Close()
	_, err = s.InputDeviceBuffer("x", F32, []int64{2, 3})
	wantCode(t, err, CodeInvalidArgument, "closed")
}

func TestCPUSessionsAcceptOnlyTheNullStream(t *testing.T) {
	s := deviceSession(t, loadDevice(t), "cpu")
	must(t, s.SetStream(0))
	// The CPU backend refuses any other stream without using it.
	wantCode(t, s.SetStream(0x1000), CodeUnsupported, "set_stream: the CPU backend has no streams; only NULL is accepted")
	must(t, s.SetInput("x", []int64{1, 3}, []float32{1, 2, 3}))
	must(t, s.Run())
	must(t, s.SetStream(0))
	s.Close()
	wantCode(t, s.SetStream(0), CodeInvalidArgument, "closed")
}

func TestBindInputDeviceOfHostMemoryIsReadInPlaceOnTheCPU(t *testing.T) {
	m := loadDevice(t)
	// Host memory that is not Go memory (the session keeps the address): another session's input
	// buffer, valid while that session is open and its input "x" is not replaced.
	owner := deviceSession(t, m, "cpu")
	buf, err := owner.InputBuffer("x", F32, []int64{2, 3})
	must(t, err)
	xs := f32s(t, buf)
	copy(xs, []float32{1, 2, 3, 4, 5, 6})
	addr := uintptr(unsafe.Pointer(&buf.Data[0]))

	s := deviceSession(t, m, "cpu")
	must(t, s.BindInputDevice("x", F32, []int64{2, 3}, addr))
	must(t, s.Run())
	out, err := s.Output(0)
	must(t, err)
	if got := f32s(t, out); !equal(got, []float32{2, 4, 6, 8, 10, 12}) {
		t.Fatalf("output = %v", got)
	}
	// The session keeps the address: a change between runs is seen by the next run.
	xs[0] = 10
	must(t, s.Run())
	out, err = s.Output(0)
	must(t, err)
	if got := f32s(t, out)[0]; got != 20 {
		t.Fatalf("output[0] = %v after the change, want 20", got)
	}

	// Checked like SetInput: type, shape, a null address for non-empty data.
	wantCode(t, s.BindInputDevice("x", I32, []int64{2, 3}, addr), CodeType)
	wantCode(t, s.BindInputDevice("x", F32, []int64{2, 4}, addr), CodeType)
	wantCode(t, s.BindInputDevice("x", F32, []int64{2, 3}, 0), CodeInvalidArgument)
	wantCode(t, s.BindInputDevice("x", F32, []int64{-1, 3}, addr), CodeInvalidArgument, "negative")
	wantCode(t, s.BindInputDevice("x", DType(99), []int64{2, 3}, addr), CodeInvalidArgument, "dtype")
	// An empty tensor may be 0.
	must(t, s.BindInputDevice("x", F32, []int64{0, 3}, 0))
	must(t, s.Run())
	out, err = s.Output(0)
	must(t, err)
	if len(out.Shape) != 2 || out.Shape[0] != 0 {
		t.Fatalf("output shape = %v, want [0 3]", out.Shape)
	}
	// Setting the input again drops the binding.
	must(t, s.SetInput("x", []int64{1, 3}, []float32{1, 1, 1}))
	must(t, s.Run())
	out, err = s.Output(0)
	must(t, err)
	if got := f32s(t, out); !equal(got, []float32{2, 2, 2}) {
		t.Fatalf("output = %v", got)
	}
	runtime.KeepAlive(owner)
}

// Device memory for real: one CUDA session's device input buffer, bound into another CUDA session
// (read in place) and refused by a CPU session. Skipped without CUDA.
func TestDeviceMemoryOnCUDA(t *testing.T) {
	if !BackendAvailable("cuda") {
		t.Skip("no CUDA backend")
	}
	m := loadDevice(t)
	owner := deviceSession(t, m, "cuda")
	buf, err := owner.InputDeviceBuffer("x", F32, []int64{2, 3})
	must(t, err)
	if buf.NBytes != 24 || buf.Ptr == 0 || buf.DType != F32 || !equal(buf.Shape, []int64{2, 3}) {
		t.Fatalf("buffer = %+v", buf)
	}
	// Zero-filled.
	must(t, owner.Run())
	out, err := owner.Output(0)
	must(t, err)
	if got := f32s(t, out); !equal(got, make([]float32, 6)) {
		t.Fatalf("output = %v, want zeros", got)
	}
	must(t, owner.SetStream(0))

	reader := deviceSession(t, m, "cuda")
	must(t, reader.BindInputDevice("x", F32, []int64{2, 3}, buf.Ptr))
	must(t, reader.Run())
	out, err = reader.Output(0)
	must(t, err)
	if got := f32s(t, out); !equal(got, make([]float32, 6)) {
		t.Fatalf("output = %v, want zeros", got)
	}
	reader.Close()

	cpu := deviceSession(t, m, "cpu")
	wantCode(t, cpu.BindInputDevice("x", F32, []int64{2, 3}, buf.Ptr), CodeInvalidArgument,
		"this session runs on the CPU backend")
	runtime.KeepAlive(owner)
}
