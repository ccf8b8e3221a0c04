package grape

/*
#include <stdlib.h>
#include <grape.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// ReadNPY reads a .npy file (numpy dtypes <f4 <f2 <i4 <i8 |b1, C order) into a Go tensor.
// Errors: CodeIO (cannot open or read), CodeFormat (malformed or unsupported).
func ReadNPY(path string) (Tensor, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var t *C.grp_tensor
	if err := check(C.grp_tensor_read_npy(cpath, &t)); err != nil {
		return Tensor{}, err
	}
	defer C.grp_tensor_destroy(t)
	n := C.grp_tensor_nbytes(t)
	buf := alignedBytes(int(n))
	copy(buf, cBytes(unsafe.Pointer(C.grp_tensor_data(t)), n))
	return Tensor{DType: DType(C.grp_tensor_dtype(t)), Shape: goShape(C.grp_tensor_shape(t), C.grp_tensor_rank(t)), Data: buf}, nil
}

// WriteNPY writes t as a .npy file (version 1.0, C order), atomically. BF16 has no numpy dtype
// and is written as float32 (exactly).
func WriteNPY(path string, t Tensor) error {
	raw, err := rawBytes(t.DType, t.Shape, t.Data)
	if err != nil {
		return err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	err = check(C.grp_npy_write(cpath, C.grp_dtype(t.DType), shapePtr(t.Shape), C.size_t(len(t.Shape)),
		sliceData(raw), C.size_t(len(raw))))
	runtime.KeepAlive(t)
	runtime.KeepAlive(raw)
	return err
}
