package grape

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestSyntaxErrorHasLocation(t *testing.T) {
	src := "model b\nfn main(x: f32[N]) -> f32[N] {\n  return x +* 2.0\n}\n"
	_, err := LoadSource(src, "bad.grp", nil)
	wantCode(t, err, CodeSyntax, "bad.grp:3:")
	var e *Error
	if !errors.As(fmt.Errorf("wrapped: %w", err), &e) {
		t.Fatal("not an *Error")
	}
	if e.File != "bad.grp" || e.Line != 3 || e.Column < 1 {
		t.Fatalf("location = %s:%d:%d, want bad.grp:3:col", e.File, e.Line, e.Column)
	}
	if want := fmt.Sprintf("bad.grp:%d:%d", e.Line, e.Column); !strings.Contains(e.Message, want) {
		t.Fatalf("message %q lacks %q", e.Message, want)
	}
}

func TestTypeErrorAndLoadErrors(t *testing.T) {
	_, err := LoadSource("model b\nfn main(x: f32[N], y: f16[N]) -> f32[N] {\n  return x + y\n}\n", "ty.grp", nil)
	wantCode(t, err, CodeType, "ty.grp:3:")
	_, err = LoadSource("model b\nfn main(x: f32[N]) -> f32[N] {\n  return x +* 2.0\n}\n", "", nil)
	wantCode(t, err, CodeSyntax, "<source>:3:")
	_, err = LoadFile(filepath.Join(t.TempDir(), "missing.grp"), nil)
	wantCode(t, err, CodeIO, "missing.grp")
	_, err = LoadFile(filepath.Join(repoRoot(t), "examples", "mlp.grp"), &LoadOptions{Defines: map[string]int64{"NOPE": 1}})
	wantCode(t, err, CodeInvalidArgument, "NOPE")
}

func TestInputErrors(t *testing.T) {
	m := loadTest(t)
	s := newSession(t, m, "main")
	// Wrong dtype, wrong rank: reported by the library.
	wantCode(t, s.SetInput("x", []int64{3}, []int32{1, 2, 3}), CodeType)
	wantCode(t, s.SetInput("x", []int64{3, 1}, []float32{1, 2, 3}), CodeType)
	wantCode(t, s.SetInput("nope", []int64{3}, []float32{1, 2, 3}), CodeInvalidArgument)
	// Length against shape: checked before calling C.
	wantCode(t, s.SetInput("x", []int64{4}, []float32{1, 2, 3}), CodeInvalidArgument, "needs 4")
	wantCode(t, s.SetInput("x", []int64{-1}, []float32{}), CodeInvalidArgument, "negative")
	wantCode(t, s.SetInput("x", []int64{3}, []float64{1, 2, 3}), CodeInvalidArgument, "float64")
	wantCode(t, s.SetInputTensor("x", Tensor{DType: F32, Shape: []int64{3}, Data: make([]byte, 11)}), CodeInvalidArgument)

	// Not every input set: Run fails and the session stays usable.
	must(t, s.SetInput("x", []int64{3}, []float32{1, 2, 3}))
	wantCode(t, s.Run(), CodeInvalidArgument, "missing input 'y'")
	_, err := s.Output(0)
	wantCode(t, err, CodeInvalidArgument) // no successful run yet
	_, err = s.Output(1)
	wantCode(t, err, CodeInvalidArgument, "out of range")
	// Symbolic dims that disagree across inputs.
	must(t, s.SetInput("y", []int64{2}, []float32{1, 2}))
	wantCode(t, s.Run(), CodeType, "N")
	must(t, s.SetInput("y", []int64{3}, []float32{1, 1, 1}))
	must(t, s.Run())
	out, err := s.Output(0)
	must(t, err)
	if got := f32s(t, out); !equal(got, []float32{3, 5, 7}) {
		t.Fatalf("after rejected calls: %v", got)
	}
	// A fixed dim of the wrong size.
	fixed, err := LoadSource("model f\nconst K = 4\nfn main(x: f32[K]) -> f32[K] {\n  return x\n}\n", "f.grp",
		&LoadOptions{Defines: map[string]int64{"K": 2}})
	must(t, err)
	defer fixed.Close()
	fs := newSession(t, fixed, "")
	if d := fs.Inputs()[0].Dims; !equal(d, []int64{2}) {
		t.Fatalf("-D K=2 gives dims %v", d)
	}
	wantCode(t, fs.SetInput("x", []int64{4}, []float32{1, 2, 3, 4}), CodeType)
	must(t, fs.SetInput("x", []int64{2}, []float32{1, 2}))
}

func TestSessionErrors(t *testing.T) {
	m := loadTest(t)
	_, err := m.NewSession(&SessionOptions{Entry: "nope"})
	wantCode(t, err, CodeInvalidArgument, "nope")
	_, err = m.NewSession(&SessionOptions{Executor: "graph", Backend: "cpu"})
	wantCode(t, err, CodeUnsupported)
	// Shape buckets and the graph memory budget are checked on every backend.
	_, err = m.NewSession(&SessionOptions{Backend: "cpu", Buckets: "B=16,8"})
	wantCode(t, err, CodeInvalidArgument, "B=16,8")
	_, err = m.NewSession(&SessionOptions{Backend: "cpu", GraphMemoryBytes: -1})
	wantCode(t, err, CodeInvalidArgument)
	ok, err := m.NewSession(&SessionOptions{Backend: "cpu", Buckets: "B=exact", GraphMemoryBytes: 1 << 20})
	must(t, err)
	ok.Close()
	if !BackendAvailable("cuda") {
		_, err = m.NewSession(&SessionOptions{Backend: "cuda"})
		wantCode(t, err, CodeNoDevice)
	}
	if !BackendAvailable("cpu") {
		t.Fatal("the CPU backend must be available")
	}

	mlp, err := LoadFile(filepath.Join(repoRoot(t), "examples", "mlp.grp"), &LoadOptions{Defines: map[string]int64{"D": 4, "H": 8, "C": 2}})
	must(t, err)
	defer mlp.Close()
	if mlp.HasWeights() {
		t.Fatal("mlp declares weights and none are set")
	}
	_, err = mlp.NewSession(nil)
	wantCode(t, err, CodeInvalidArgument)
}
