package grape

import "C"

import "unsafe"

//export grapeGoBuildProgress
func grapeGoBuildProgress(user unsafe.Pointer, done, total C.size_t) {
	buildProgressMu.Lock()
	f := buildProgressFn
	buildProgressMu.Unlock()
	if f != nil {
		f(int(done), int(total))
	}
}
