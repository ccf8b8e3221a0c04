//go:build !grape_pkgconfig

package grape

// By default the package links the libgrape.so built inside this repository, in build-go/ at the
// repository root (bindings/go/test.sh builds it; see README.md). The rpath lets test binaries and
// commands find it without LD_LIBRARY_PATH. Build with -tags grape_pkgconfig to link an installed
// libgrape through pkg-config instead.

/*
#cgo CFLAGS: -I${SRCDIR}/../../capi/include
#cgo LDFLAGS: -L${SRCDIR}/../../build-go/lib -lgrape -Wl,-rpath,${SRCDIR}/../../build-go/lib
*/
import "C"
