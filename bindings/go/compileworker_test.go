package grape

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// An executable that cannot start leaves the build in this process with the same kernels; this
// test binary is no worker.
func TestCompileWorkerThatCannotStartChangesNoKernel(t *testing.T) {
	if _, ok := RunCompileWorkerIfAsked(); ok {
		t.Fatal("the test binary was taken for a compile worker")
	}
	m := loadTest(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "threads.grpkb"), filepath.Join(dir, "missing.grpkb")
	_, err := m.WriteKernelBundle("compute_80", a)
	if CodeOf(err) == CodeNoDevice {
		t.Skipf("NVRTC cannot be loaded: %v", err)
	}
	must(t, err)
	must(t, SetCompileWorker("/nonexistent/grape"))
	_, err = m.WriteKernelBundle("compute_80", b)
	must(t, SetCompileWorker(""))
	must(t, err)
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if len(da) == 0 || !bytes.Equal(da, db) {
		t.Fatalf("the bundles differ (%d and %d bytes)", len(da), len(db))
	}
	wantCode(t, SetCompileWorker("bad\x00path"), CodeInvalidArgument, "NUL byte")
}
