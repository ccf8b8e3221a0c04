package grape

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

type stTensor struct {
	name  string
	dtype string // safetensors dtype: "F16", "F32"
	shape []int64
	data  []byte
}

// safetensors serialises tensors in the safetensors format.
func safetensors(ts ...stTensor) []byte {
	header := map[string]any{}
	var body []byte
	for _, t := range ts {
		header[t.name] = map[string]any{"dtype": t.dtype, "shape": t.shape, "data_offsets": []int{len(body), len(body) + len(t.data)}}
		body = append(body, t.data...)
	}
	h, _ := json.Marshal(header)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), body...)
}

func f16Bytes(v []float32) []byte {
	out := make([]byte, 0, 2*len(v))
	for _, f := range v {
		out = binary.LittleEndian.AppendUint16(out, Float32ToF16(f))
	}
	return out
}

func seq(n int, scale, offset float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i%5)*scale + offset
	}
	return v
}

// The mlp example with known weights, against the same computation in Go.
func TestMLPWithWeightsFromMemory(t *testing.T) {
	const B, D, H, C = 2, 4, 8, 3
	m, err := LoadFile(filepath.Join(repoRoot(t), "examples", "mlp.grp"),
		&LoadOptions{Defines: map[string]int64{"D": D, "H": H, "C": C}})
	must(t, err)
	defer m.Close()
	ws, err := m.Weights()
	must(t, err)
	want := []WeightInfo{{"fc1.weight", F16, []int64{H, D}}, {"fc1.bias", F16, []int64{H}},
		{"fc2.weight", F16, []int64{C, H}}, {"fc2.bias", F16, []int64{C}}}
	if !reflect.DeepEqual(ws, want) {
		t.Fatalf("Weights() = %v, want %v", ws, want)
	}
	w1, b1, w2, b2 := seq(H*D, 0.125, -0.25), seq(H, 0.25, -0.5), seq(C*H, -0.125, 0.25), seq(C, 0.5, 0)
	st := safetensors(
		stTensor{"fc1.weight", "F16", []int64{H, D}, f16Bytes(w1)}, stTensor{"fc1.bias", "F16", []int64{H}, f16Bytes(b1)},
		stTensor{"fc2.weight", "F16", []int64{C, H}, f16Bytes(w2)}, stTensor{"fc2.bias", "F16", []int64{C}, f16Bytes(b2)},
		stTensor{"extra", "F32", []int64{1}, make([]byte, 4)})

	wantCode(t, m.SetWeightsMemory(st[:len(st)-7], "cut.safetensors"), CodeFormat, "cut.safetensors")
	wrong := safetensors(stTensor{"fc1.weight", "F16", []int64{D, H}, f16Bytes(w1)}, stTensor{"fc1.bias", "F16", []int64{H}, f16Bytes(b1)},
		stTensor{"fc2.weight", "F16", []int64{C, H}, f16Bytes(w2)}, stTensor{"fc2.bias", "F16", []int64{C}, f16Bytes(b2)})
	wantCode(t, m.SetWeightsMemory(wrong, ""), CodeFormat, "fc1.weight")
	if m.HasWeights() {
		t.Fatal("rejected weights must not count as set")
	}
	must(t, m.SetWeightsMemory(st, "mlp.safetensors"))

	x := seq(B*D, 0.5, -1)
	s, err := m.NewSession(nil)
	must(t, err)
	defer s.Close()
	if in := s.Inputs()[0]; in.DType != F16 || in.DimExprs[0] != "B" || !reflect.DeepEqual(in.Dims, []int64{-1, D}) {
		t.Fatalf("input x = %+v", in)
	}
	xh := make([]uint16, len(x))
	for i, f := range x {
		xh[i] = Float32ToF16(f)
	}
	must(t, s.SetInput("x", []int64{B, D}, xh))
	must(t, s.Run())
	out, err := s.Output(0)
	must(t, err)
	if out.DType != F16 || !reflect.DeepEqual(out.Shape, []int64{B, C}) {
		t.Fatalf("output %v", out)
	}
	got, err := out.ToFloat32()
	must(t, err)
	for b := 0; b < B; b++ {
		h := make([]float64, H)
		for j := 0; j < H; j++ {
			a := float64(b1[j])
			for k := 0; k < D; k++ {
				a += float64(x[b*D+k]) * float64(w1[j*D+k])
			}
			h[j] = 0.5 * a * (1 + math.Erf(a/math.Sqrt2))
		}
		for c := 0; c < C; c++ {
			y := float64(b2[c])
			for j := 0; j < H; j++ {
				y += h[j] * float64(w2[c*H+j])
			}
			if math.Abs(float64(got[b*C+c])-y) > 0.02*math.Max(1, math.Abs(y)) {
				t.Fatalf("out[%d,%d] = %v, want %v", b, c, got[b*C+c], y)
			}
		}
	}

	// The same weights from a file.
	path := filepath.Join(t.TempDir(), "mlp.safetensors")
	must(t, os.WriteFile(path, st, 0o644))
	m2, err := LoadFile(filepath.Join(repoRoot(t), "examples", "mlp.grp"),
		&LoadOptions{Defines: map[string]int64{"D": D, "H": H, "C": C}})
	must(t, err)
	defer m2.Close()
	wantCode(t, m2.SetWeightsFile(path+".missing"), CodeIO)
	must(t, m2.SetWeightsFile(path))
	s2, err := m2.NewSession(nil)
	must(t, err)
	defer s2.Close()
	must(t, s2.SetInput("x", []int64{B, D}, xh))
	must(t, s2.Run())
	out2, err := s2.Output(0)
	must(t, err)
	if !reflect.DeepEqual(out2.Data, out.Data) {
		t.Fatal("weights from a file and from memory differ")
	}
}

// Sessions keep the weights they were created with.
func TestWeightsSnapshot(t *testing.T) {
	m := loadMLP(t)
	x := mlpInput(1, 8)
	s, err := m.NewSession(nil)
	must(t, err)
	defer s.Close()
	must(t, s.SetInput("x", []int64{1, 8}, x))
	must(t, s.Run())
	before, err := s.Output(0)
	must(t, err)
	must(t, m.SetRandomWeights(2))
	must(t, s.Run())
	after, err := s.Output(0)
	must(t, err)
	if !reflect.DeepEqual(before.Data, after.Data) {
		t.Fatal("an existing session saw new weights")
	}
	if reflect.DeepEqual(runMLP(t, m, x), func() []uint16 { v, _ := before.Uint16(); return v }()) {
		t.Fatal("a new session did not see the new weights")
	}
}
