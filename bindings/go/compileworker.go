package grape

/*
#include <stdlib.h>
#include <grape.h>
*/
import "C"

import (
	"os"
	"strings"
	"unsafe"
)

// SetCompileWorker names the executable that serves NVRTC compile workers
// (grp_set_compile_worker, grape.h): builds of several kernels then compile in worker processes of
// it, which is faster on many cores; "" unsets it (compiles on threads, unless
// $GRAPE_COMPILE_WORKER names one). The path of an installed `grape`, or this program's own
// executable when its main starts with RunCompileWorkerIfAsked. CodeInvalidArgument for a path
// with a NUL byte.
func SetCompileWorker(path string) error {
	if path == "" {
		C.grp_set_compile_worker(nil)
		return nil
	}
	if strings.IndexByte(path, 0) >= 0 {
		return newError(CodeInvalidArgument, "compile worker path %q contains a NUL byte", path)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	C.grp_set_compile_worker(cpath)
	return nil
}

// RunCompileWorkerIfAsked serves the build that started this process when it was started as a
// compile worker (os.Args[1] is C.GRP_COMPILE_WORKER_ARG) and returns its exit status and true;
// main should then exit with it at once. Otherwise it returns 0, false (grp_compile_worker_main).
func RunCompileWorkerIfAsked() (int, bool) {
	if len(os.Args) < 2 || os.Args[1] != C.GRP_COMPILE_WORKER_ARG {
		return 0, false
	}
	argv := make([]*C.char, len(os.Args)+1)
	for i, a := range os.Args {
		argv[i] = C.CString(a)
		defer C.free(unsafe.Pointer(argv[i]))
	}
	// argv lives in Go memory and holds only C pointers: cgo allows passing it.
	return int(C.grp_compile_worker_main(C.int(len(os.Args)), &argv[0])), true
}
