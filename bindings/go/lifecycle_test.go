package grape

import (
	"runtime"
	"testing"
	"time"
)

func TestDoubleCloseAndUseAfterClose(t *testing.T) {
	m, err := LoadSource(testSource, "t.grp", nil)
	must(t, err)
	s, err := m.NewSession(nil)
	must(t, err)
	must(t, s.Close())
	must(t, s.Close())
	wantCode(t, s.Run(), CodeInvalidArgument, "closed")
	_, err = s.Output(0)
	wantCode(t, err, CodeInvalidArgument, "closed")
	wantCode(t, s.SetInput("x", []int64{1}, []float32{1}), CodeInvalidArgument, "closed")
	must(t, m.Close())
	must(t, m.Close())
	_, err = m.NewSession(nil)
	wantCode(t, err, CodeInvalidArgument, "closed")
	wantCode(t, m.SetRandomWeights(1), CodeInvalidArgument, "closed")
	if m.Entries() != nil {
		t.Fatal("Entries of a closed model must be nil")
	}
}

// grape.h: a model may be destroyed while its sessions live on.
func TestSessionOutlivesModel(t *testing.T) {
	m, err := LoadSource(testSource, "t.grp", nil)
	must(t, err)
	s, err := m.NewSession(&SessionOptions{Entry: "accumulate"})
	must(t, err)
	defer s.Close()
	must(t, m.Close())
	runtime.GC()
	must(t, s.SetInput("x", []int64{2}, []float32{1, 2}))
	must(t, s.Run())
	must(t, s.Run())
	out, err := s.Output(0)
	must(t, err)
	if got := f32s(t, out); !equal(got, []float32{2, 4}) {
		t.Fatalf("acc = %v", got)
	}
}

// Handles dropped without Close are released by their finalizers.
func TestFinalizers(t *testing.T) {
	before := finalized.Load()
	const n = 20
	func() {
		for i := 0; i < n; i++ {
			m, err := LoadSource(testSource, "t.grp", nil)
			must(t, err)
			s, err := m.NewSession(nil)
			must(t, err)
			must(t, s.SetInput("x", []int64{1}, []float32{1}))
			must(t, s.SetInput("y", []int64{1}, []float32{1}))
			must(t, s.Run())
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for finalized.Load()-before < 2*n && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := finalized.Load() - before; got < 2*n {
		t.Fatalf("%d of %d handles finalized", got, 2*n)
	}
}
