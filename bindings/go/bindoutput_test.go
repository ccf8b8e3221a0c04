package grape

import (
	"runtime"
	"testing"
	"unsafe"
)

// Outputs written into caller memory (BindOutput, UnbindOutput): the value lands in the bound
// memory after each successful run, OutputView aliases it there, a run whose output needs more
// than the capacity fails before executing anything, and unbinding goes back to the session's
// own memory.

const bindSource = `model b
state calls: i32[] = zeros

fn main(x: f32[B, 3]) -> (f32[B, 3], i32[]) {
  calls = calls + 1
  return x * 2.0, calls
}
`

// cMemory returns n float32s of writable host memory that is not Go memory (the session keeps
// its address): the input buffer of a session of its own, valid while that session is open.
func cMemory(t *testing.T, n int) ([]float32, uintptr) {
	t.Helper()
	m, err := LoadSource("fn main(x: f32[N]) -> f32[N] {\n  return x\n}\n", "mem.grp", nil)
	must(t, err)
	owner, err := m.NewSession(nil)
	must(t, err)
	m.Close()
	t.Cleanup(func() { owner.Close() })
	buf, err := owner.InputBuffer("x", F32, []int64{int64(n)})
	must(t, err)
	return f32s(t, buf), uintptr(unsafe.Pointer(&buf.Data[0]))
}

func TestBindOutputReceivesEachRun(t *testing.T) {
	mem, addr := cMemory(t, 6)
	m, err := LoadSource(bindSource, "b.grp", nil)
	must(t, err)
	defer m.Close()
	s := deviceSession(t, m, "cpu")
	must(t, s.BindOutput(0, addr, 24))
	must(t, s.SetInput("x", []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6}))
	must(t, s.Run())
	if !equal(mem, []float32{2, 4, 6, 8, 10, 12}) {
		t.Fatalf("bound memory = %v", mem)
	}
	// OutputView aliases the bound memory; Output copies it.
	view, err := s.OutputView(0)
	must(t, err)
	if uintptr(unsafe.Pointer(&view.Data[0])) != addr {
		t.Fatal("OutputView does not alias the bound memory")
	}
	out, err := s.Output(0)
	must(t, err)
	if !equal(f32s(t, out), []float32{2, 4, 6, 8, 10, 12}) {
		t.Fatalf("output = %v", f32s(t, out))
	}
	// The unbound output is in the session's own memory as before.
	calls, err := s.Output(1)
	must(t, err)
	if got := i32s(t, calls); !equal(got, []int32{1}) {
		t.Fatalf("calls = %v", got)
	}

	// A run that does not fit fails before executing anything.
	must(t, s.SetInput("x", []int64{3, 3}, make([]float32, 9)))
	wantCode(t, s.Run(), CodeInvalidArgument, "needs 36 bytes, but the memory bound to it holds 24")
	st, err := s.State("calls")
	must(t, err)
	if got := i32s(t, st); !equal(got, []int32{1}) {
		t.Fatalf("the failed run advanced the state to %v", got)
	}
	out, err = s.Output(0)
	must(t, err)
	if !equal(f32s(t, out), []float32{2, 4, 6, 8, 10, 12}) {
		t.Fatalf("the failed run changed the output to %v", f32s(t, out))
	}

	// Unbinding: until the next run the output is unreadable (the library would still point at
	// the memory, which the caller may free now).
	must(t, s.UnbindOutput(0))
	_, err = s.Output(0)
	wantCode(t, err, CodeInvalidArgument, "run again")
	_, err = s.OutputView(0)
	wantCode(t, err, CodeInvalidArgument, "run again")
	must(t, s.SetInput("x", []int64{1, 3}, []float32{1, 1, 1}))
	must(t, s.Run())
	out, err = s.Output(0)
	must(t, err)
	if !equal(f32s(t, out), []float32{2, 2, 2}) {
		t.Fatalf("output = %v", f32s(t, out))
	}
	if !equal(mem, []float32{2, 4, 6, 8, 10, 12}) {
		t.Fatalf("a run after unbinding wrote the memory: %v", mem)
	}
	// Unbinding what is not bound, or memory no run wrote to, leaves the outputs readable.
	must(t, s.UnbindOutput(0))
	must(t, s.BindOutput(0, addr, 24))
	must(t, s.UnbindOutput(0))
	_, err = s.Output(0)
	must(t, err)
	runtime.KeepAlive(mem)
}

func TestBindOutputErrors(t *testing.T) {
	_, addr := cMemory(t, 6)
	m, err := LoadSource(bindSource, "b.grp", nil)
	must(t, err)
	defer m.Close()
	s := deviceSession(t, m, "cpu")
	wantCode(t, s.BindOutput(2, addr, 24), CodeInvalidArgument)
	wantCode(t, s.BindOutput(-1, addr, 24), CodeInvalidArgument)
	wantCode(t, s.UnbindOutput(2), CodeInvalidArgument)
	wantCode(t, s.BindOutput(0, 0, 24), CodeInvalidArgument, "data is NULL but capacity is 24")
	wantCode(t, s.BindOutput(0, addr, -1), CodeInvalidArgument, "negative")
	// Capacity 0: only empty outputs fit.
	must(t, s.BindOutput(0, addr, 0))
	must(t, s.SetInput("x", []int64{0, 3}, []float32{}))
	must(t, s.Run())
	must(t, s.SetInput("x", []int64{1, 3}, []float32{1, 2, 3}))
	wantCode(t, s.Run(), CodeInvalidArgument)
	// ResetState forgets the outputs, bound or not.
	must(t, s.BindOutput(0, addr, 24))
	must(t, s.Run())
	must(t, s.ResetState())
	_, err = s.Output(0)
	wantCode(t, err, CodeInvalidArgument, "no outputs yet")
	s.Close()
	wantCode(t, s.BindOutput(0, addr, 24), CodeInvalidArgument, "closed")
	wantCode(t, s.UnbindOutput(0), CodeInvalidArgument, "closed")
}
