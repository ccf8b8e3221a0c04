package grape

import (
	"path/filepath"
	"sync"
	"testing"
)

// No test of this package runs in parallel, so the process-wide count is this test's alone.
func TestBuildProgressCountsTheKernelsOfABundle(t *testing.T) {
	var mu sync.Mutex
	calls, lastDone, lastTotal := 0, 0, 0
	SetBuildProgress(func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		lastDone, lastTotal = done, total
	})
	defer SetBuildProgress(nil)
	m := loadTest(t)
	path := filepath.Join(t.TempDir(), "p.grpkb")
	_, err := m.WriteKernelBundle("compute_80", path)
	if CodeOf(err) == CodeNoDevice { // no NVRTC on this machine
		t.Skipf("NVRTC cannot be loaded: %v", err)
	}
	must(t, err)
	mu.Lock()
	if lastTotal == 0 || lastDone != lastTotal || calls < lastTotal {
		t.Fatalf("%d calls, the last (%d, %d): want a last call with done == total > 0", calls, lastDone, lastTotal)
	}
	before := calls
	mu.Unlock()
	SetBuildProgress(nil)
	_, err = m.WriteKernelBundle("compute_80", path)
	must(t, err)
	mu.Lock()
	defer mu.Unlock()
	if calls != before {
		t.Fatalf("called %d times after removal", calls-before)
	}
}
