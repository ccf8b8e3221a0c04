package grape

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

const dtypeSource = `model d

fn sel(c: bool[N], a: i64[N], b: i64[N]) -> (i64[N], bool[N]) {
  return where(c, a, b), not(c)
}

fn widen(x: bf16[N], y: f16[N]) -> (f32[N], f32[N]) {
  return cast(x, f32), cast(y, f32)
}
`

func TestDTypes(t *testing.T) {
	m, err := LoadSource(dtypeSource, "d.grp", nil)
	must(t, err)
	defer m.Close()

	s := newSession(t, m, "sel")
	must(t, s.SetInput("c", []int64{3}, []bool{true, false, true}))
	must(t, s.SetInput("a", []int64{3}, []int64{1 << 40, 2, 3}))
	must(t, s.SetInput("b", []int64{3}, []int64{-1, -2, -3}))
	must(t, s.Run())
	o0, err := s.Output(0)
	must(t, err)
	v, err := o0.Int64()
	must(t, err)
	if !equal(v, []int64{1 << 40, -2, 3}) {
		t.Fatalf("where = %v", v)
	}
	o1, err := s.OutputView(1)
	must(t, err)
	b, err := o1.Bool()
	must(t, err)
	if !equal(b, []bool{false, true, false}) {
		t.Fatalf("not = %v", b)
	}

	// []uint16 takes the input's declared dtype: bf16 for x, f16 for y.
	w := newSession(t, m, "widen")
	must(t, w.SetInput("x", []int64{2}, []uint16{Float32ToBF16(1.5), Float32ToBF16(-3)}))
	must(t, w.SetInput("y", []int64{2}, []uint16{Float32ToF16(0.25), Float32ToF16(-8)}))
	must(t, w.Run())
	x, err := w.Output(0)
	must(t, err)
	y, err := w.Output(1)
	must(t, err)
	if !equal(f32s(t, x), []float32{1.5, -3}) || !equal(f32s(t, y), []float32{0.25, -8}) {
		t.Fatalf("widen = %v %v", f32s(t, x), f32s(t, y))
	}
}

func TestEmptyTensors(t *testing.T) {
	s := newSession(t, loadTest(t), "main")
	must(t, s.SetInput("x", []int64{0}, []float32{}))
	must(t, s.SetInput("y", []int64{0}, []float32(nil)))
	must(t, s.Run())
	out, err := s.Output(0)
	must(t, err)
	if !reflect.DeepEqual(out.Shape, []int64{0}) || len(out.Data) != 0 {
		t.Fatalf("empty output %v", out)
	}
}

// A rejected run changes nothing: the previous outputs stay readable.
func TestFailedRunKeepsOutputs(t *testing.T) {
	s := newSession(t, loadTest(t), "main")
	must(t, s.SetInput("x", []int64{2}, []float32{1, 2}))
	must(t, s.SetInput("y", []int64{2}, []float32{1, 1}))
	must(t, s.Run())
	must(t, s.SetInput("y", []int64{3}, []float32{1, 1, 1}))
	if err := s.Run(); err == nil {
		t.Fatal("mismatched N must fail")
	}
	out, err := s.Output(0)
	must(t, err)
	if got := f32s(t, out); !equal(got, []float32{3, 5}) {
		t.Fatalf("outputs after a failed run = %v", got)
	}
}

func TestNPY(t *testing.T) {
	dir := t.TempDir()
	in, err := NewTensor(I32, []int64{2, 3}, []int32{1, 2, 3, 4, 5, -6})
	must(t, err)
	path := filepath.Join(dir, "a.npy")
	must(t, WriteNPY(path, in))
	back, err := ReadNPY(path)
	must(t, err)
	if !reflect.DeepEqual(back, in) {
		t.Fatalf("npy round trip: %v %v", back, in)
	}
	_, err = ReadNPY(filepath.Join(dir, "missing.npy"))
	wantCode(t, err, CodeIO)
	must(t, os.WriteFile(filepath.Join(dir, "bad.npy"), []byte("not npy"), 0o644))
	_, err = ReadNPY(filepath.Join(dir, "bad.npy"))
	wantCode(t, err, CodeFormat, "bad.npy")
}
