package grape

// #include <grape.h>
import "C"

import "fmt"

// DType is an element type; the values mirror grp_dtype in grape.h.
type DType int

const (
	F32  DType = C.GRP_F32
	F16  DType = C.GRP_F16  // IEEE half; Go holds it as uint16 bits (see Float32ToF16)
	BF16 DType = C.GRP_BF16 // bfloat16; Go holds it as uint16 bits (see Float32ToBF16)
	I32  DType = C.GRP_I32
	I64  DType = C.GRP_I64
	Bool DType = C.GRP_BOOL // one byte per element, 0 or 1 (Go's bool)
)

// Size is the number of bytes of one element, 0 for an unknown DType.
func (d DType) Size() int {
	switch d {
	case F32, I32:
		return 4
	case F16, BF16:
		return 2
	case I64:
		return 8
	case Bool:
		return 1
	}
	return 0
}

// String is the name the language uses: "f32", "f16", "bf16", "i32", "i64", "bool".
func (d DType) String() string {
	switch d {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	case I32:
		return "i32"
	case I64:
		return "i64"
	case Bool:
		return "bool"
	}
	return fmt.Sprintf("dtype(%d)", int(d))
}

// libSize and libName are the library's grp_dtype_size and grp_dtype_name, which Size and String
// mirror without a cgo call (the tests check that they agree).
func (d DType) libSize() int { return int(C.grp_dtype_size(C.grp_dtype(d))) }

func (d DType) libName() string { return C.GoString(C.grp_dtype_name(C.grp_dtype(d))) }
