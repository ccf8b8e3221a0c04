package grape

import (
	"fmt"
	"unsafe"
)

// maxElements bounds a shape so that its byte count fits any int64 comfortably.
const maxElements = int64(1) << 50

// Tensor is a dense tensor in C order, its elements little-endian in Data.
//
// A Tensor returned by Output, State or NewTensor owns its Data (a Go copy). One returned by
// OutputView or InputBuffer aliases memory owned by the session: see those methods for how long
// it stays valid.
type Tensor struct {
	DType DType
	Shape []int64
	Data  []byte
}

// NewTensor returns a tensor holding a copy of data, which must be the slice type of dtype:
// []float32 (F32), []uint16 (F16 and BF16 bits), []int32 (I32), []int64 (I64), []bool (Bool), or
// []byte with the raw little-endian bytes of any dtype. Its length must match shape.
func NewTensor(dtype DType, shape []int64, data any) (Tensor, error) {
	raw, err := rawBytes(dtype, shape, data)
	if err != nil {
		return Tensor{}, err
	}
	buf := alignedBytes(len(raw))
	copy(buf, raw)
	return Tensor{DType: dtype, Shape: append([]int64{}, shape...), Data: buf}, nil
}

// NumElements is the product of the shape (1 for a scalar).
func (t Tensor) NumElements() int {
	n, _ := numElements(t.Shape)
	return n
}

// Float32 returns the elements of an F32 tensor. The slice shares t.Data's memory (so it is
// valid as long as t is, and writes go through); when t.Data is not 4-byte aligned, which never
// happens for tensors from this package, it is a copy.
func (t Tensor) Float32() ([]float32, error) { return viewAs[float32](t, F32) }

// Int32 returns the elements of an I32 tensor, sharing memory as Float32 does.
func (t Tensor) Int32() ([]int32, error) { return viewAs[int32](t, I32) }

// Int64 returns the elements of an I64 tensor, sharing memory as Float32 does.
func (t Tensor) Int64() ([]int64, error) { return viewAs[int64](t, I64) }

// Bool returns the elements of a Bool tensor, sharing memory as Float32 does.
func (t Tensor) Bool() ([]bool, error) {
	if t.DType != Bool {
		return nil, newError(CodeType, "tensor is %s, not bool", t.DType)
	}
	for _, b := range t.Data {
		if b > 1 { // Go requires a bool byte to be 0 or 1
			return nil, newError(CodeFormat, "bool tensor holds byte %d", b)
		}
	}
	return viewAs[bool](t, Bool)
}

// Uint16 returns the bits of an F16 or BF16 tensor, sharing memory as Float32 does.
func (t Tensor) Uint16() ([]uint16, error) {
	if t.DType != F16 && t.DType != BF16 {
		return nil, newError(CodeType, "tensor is %s, not f16 or bf16", t.DType)
	}
	return viewAs[uint16](t, t.DType)
}

// ToFloat32 returns a new []float32 with the elements of an F32, F16 or BF16 tensor converted
// (exactly).
func (t Tensor) ToFloat32() ([]float32, error) {
	switch t.DType {
	case F32:
		v, err := t.Float32()
		if err != nil {
			return nil, err
		}
		return append([]float32{}, v...), nil
	case F16, BF16:
		v, err := t.Uint16()
		if err != nil {
			return nil, err
		}
		conv := F16ToFloat32
		if t.DType == BF16 {
			conv = BF16ToFloat32
		}
		out := make([]float32, len(v))
		for i, h := range v {
			out[i] = conv(h)
		}
		return out, nil
	}
	return nil, newError(CodeType, "tensor is %s, not a float dtype", t.DType)
}

func (t Tensor) String() string {
	return fmt.Sprintf("%s%v (%d bytes)", t.DType, t.Shape, len(t.Data))
}

type element interface {
	float32 | int32 | int64 | uint16 | bool | byte
}

func viewAs[T element](t Tensor, want DType) ([]T, error) {
	if t.DType != want {
		return nil, newError(CodeType, "tensor is %s, not %s", t.DType, want)
	}
	size := int(unsafe.Sizeof(*new(T)))
	n, err := numElements(t.Shape)
	if err != nil {
		return nil, err
	}
	if len(t.Data) != n*size {
		return nil, newError(CodeInvalidArgument, "tensor %s has %d bytes, its shape needs %d", t.DType, len(t.Data), n*size)
	}
	if n == 0 {
		return []T{}, nil
	}
	p := unsafe.Pointer(&t.Data[0])
	if uintptr(p)%uintptr(size) == 0 {
		return unsafe.Slice((*T)(p), n), nil
	}
	out := make([]T, n)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), n*size), t.Data)
	return out, nil
}

// numElements is the product of shape, checked: no negative dim, no overflow of a byte count.
func numElements(shape []int64) (int, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, newError(CodeInvalidArgument, "negative dim in shape %v", shape)
		}
		if d != 0 && n > maxElements/d {
			return 0, newError(CodeInvalidArgument, "shape %v is too large", shape)
		}
		n *= d
	}
	return int(n), nil
}

// rawBytes checks that data is dtype's slice type with the element count of shape, and returns
// its bytes without copying (a view of the caller's slice).
func rawBytes(dtype DType, shape []int64, data any) ([]byte, error) {
	n, err := numElements(shape)
	if err != nil {
		return nil, err
	}
	size := dtype.Size()
	if size == 0 {
		return nil, newError(CodeInvalidArgument, "unknown dtype %d", int(dtype))
	}
	var p unsafe.Pointer
	var length int
	switch d := data.(type) {
	case []byte:
		if len(d) != n*size {
			return nil, newError(CodeInvalidArgument, "%d bytes for %s%v, which needs %d", len(d), dtype, shape, n*size)
		}
		return d, nil
	case []float32:
		p, length, err = sliceData(d), len(d), wantDType(dtype, "[]float32", F32)
	case []uint16:
		p, length, err = sliceData(d), len(d), wantDType(dtype, "[]uint16", F16, BF16)
	case []int32:
		p, length, err = sliceData(d), len(d), wantDType(dtype, "[]int32", I32)
	case []int64:
		p, length, err = sliceData(d), len(d), wantDType(dtype, "[]int64", I64)
	case []bool:
		p, length, err = sliceData(d), len(d), wantDType(dtype, "[]bool", Bool)
	default:
		return nil, newError(CodeInvalidArgument, "unsupported data type %T", data)
	}
	if err != nil {
		return nil, err
	}
	if length != n {
		return nil, newError(CodeInvalidArgument, "%d elements for shape %v, which needs %d", length, shape, n)
	}
	if n == 0 {
		return []byte{}, nil
	}
	return unsafe.Slice((*byte)(p), n*size), nil
}

func wantDType(dtype DType, goType string, allowed ...DType) error {
	for _, a := range allowed {
		if dtype == a {
			return nil
		}
	}
	return newError(CodeType, "%s data for a %s tensor", goType, dtype)
}

func sliceData[T element](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// alignedBytes allocates n bytes aligned for any element type (8 bytes).
func alignedBytes(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	words := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
}
