package grape

/*
#include <grape.h>
// Defined by the //export below (a file with //export may only declare C functions).
extern void grapeGoBuildProgress(void* user, size_t done, size_t total);
static void grape_set_go_build_progress(int on) {
	grp_set_build_progress(on ? (grp_build_progress_fn)grapeGoBuildProgress : NULL, NULL);
}
*/
import "C"

import "sync"

var (
	buildProgressMu sync.Mutex
	buildProgressFn func(done, total int)
)

// SetBuildProgress calls f(done, total) as kernel builds (NVRTC) progress: sessions created on
// the CUDA backend and WriteKernelBundle; kernels from the kernel cache or a bundle count too,
// and builds running at once add up into one count (grp_set_build_progress, grape.h). f runs on
// the building threads while Grape holds a lock: it must return quickly and must not call into
// Grape. Process-wide; nil removes it.
func SetBuildProgress(f func(done, total int)) {
	// Grape calls back holding its own lock, and the callback takes buildProgressMu: so
	// buildProgressMu is never held while calling into Grape (no lock-order inversion).
	if f != nil {
		buildProgressMu.Lock()
		buildProgressFn = f
		buildProgressMu.Unlock()
		C.grape_set_go_build_progress(1)
		return
	}
	C.grape_set_go_build_progress(0)
	buildProgressMu.Lock()
	buildProgressFn = nil
	buildProgressMu.Unlock()
}
