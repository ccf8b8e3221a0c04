package grape

import (
	"math"
	"testing"
)

func TestF16(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{5.960464477539063e-08, 0x0001}, {2.98e-08, 0}, {6.103515625e-05, 0x0400}, {1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}} {
		if got := Float32ToF16(c.f); got != c.h {
			t.Errorf("Float32ToF16(%v) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	for h := 0; h < 1<<16; h++ {
		f := F16ToFloat32(uint16(h))
		if f != f {
			continue
		}
		if back := Float32ToF16(f); back != uint16(h) {
			t.Fatalf("f16 %#04x -> %v -> %#04x", h, f, back)
		}
	}
	if !math.IsNaN(float64(F16ToFloat32(Float32ToF16(float32(math.NaN()))))) {
		t.Fatal("NaN must stay NaN")
	}
}

func TestBF16(t *testing.T) {
	if got := Float32ToBF16(1); got != 0x3f80 {
		t.Fatalf("bf16(1) = %#04x", got)
	}
	if got := BF16ToFloat32(Float32ToBF16(1 + 1.0/256)); got != 1 { // tie to even
		t.Fatalf("bf16 tie: %v", got)
	}
	for h := 0; h < 1<<16; h++ {
		f := BF16ToFloat32(uint16(h))
		if f != f {
			continue
		}
		if back := Float32ToBF16(f); back != uint16(h) {
			t.Fatalf("bf16 %#04x -> %v -> %#04x", h, f, back)
		}
	}
}

func TestTensorAccessors(t *testing.T) {
	tt, err := NewTensor(F16, []int64{2}, []uint16{0x3c00, 0xc000})
	must(t, err)
	f, err := tt.ToFloat32()
	must(t, err)
	if !equal(f, []float32{1, -2}) {
		t.Fatalf("ToFloat32 = %v", f)
	}
	if _, err := tt.Float32(); CodeOf(err) != CodeType {
		t.Fatalf("Float32 of f16: %v", err)
	}
	if _, err := NewTensor(I32, []int64{2}, []int64{1, 2}); CodeOf(err) != CodeType {
		t.Fatalf("[]int64 for i32: %v", err)
	}
	b, err := NewTensor(Bool, []int64{3}, []bool{true, false, true})
	must(t, err)
	bv, err := b.Bool()
	must(t, err)
	if !equal(bv, []bool{true, false, true}) {
		t.Fatal(bv)
	}
	// An unaligned Data is copied, not misread.
	raw := make([]byte, 13)
	raw[1] = 0x80
	raw[2], raw[3], raw[4] = 0x3f, 0, 0
	u := Tensor{DType: F32, Shape: []int64{3}, Data: raw[1:13]}
	v, err := u.Float32()
	must(t, err)
	if v[0] != float32(math.Float32frombits(0x00003f80)) {
		t.Fatalf("unaligned read %v", v)
	}
}
