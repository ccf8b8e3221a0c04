package grape

import (
	"os"
	"path/filepath"
	"testing"
)

// The on-disk kernel cache (KernelCacheInfo, ClearKernelCache) in a folder of this test's own,
// named by $GRAPE_CACHE_DIR.
func TestKernelCacheInfoAndClear(t *testing.T) {
	root := t.TempDir()
	t.Setenv("GRAPE_CACHE_DIR", root) // os.Setenv also sets the C environment under cgo

	// The folder "kernels" is created when missing.
	info, err := KernelCacheInfo()
	must(t, err)
	dir := filepath.Join(root, "kernels")
	if info != (CacheInfo{Directory: dir}) {
		t.Fatalf("empty cache: %+v", info)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("the cache folder was not created: %v", err)
	}

	// Entries (*.grpk) count, with their size; other files do not.
	write := func(name string, n int) {
		must(t, os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o600))
	}
	write("0123.grpk", 100)
	write("4567.grpk", 28)
	write("89ab.grpk.tmp.XYZ123", 5)
	write("notes.txt", 12)
	info, err = KernelCacheInfo()
	must(t, err)
	if info.Entries != 2 || info.Bytes != 128 {
		t.Fatalf("cache with two entries: %+v", info)
	}

	// Clearing deletes the entries and leftover temporary files; the folder and the rest stay.
	must(t, ClearKernelCache())
	info, err = KernelCacheInfo()
	must(t, err)
	if info.Entries != 0 || info.Bytes != 0 {
		t.Fatalf("cleared cache: %+v", info)
	}
	for name, want := range map[string]bool{"0123.grpk": false, "89ab.grpk.tmp.XYZ123": false, "notes.txt": true} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Fatalf("%s: exists %v, want %v", name, err == nil, want)
		}
	}
	must(t, ClearKernelCache()) // clearing an empty cache is fine

	// A cache that cannot be created (its parent is a file): CodeIO from both.
	file := filepath.Join(root, "a-file")
	must(t, os.WriteFile(file, []byte("x"), 0o600))
	t.Setenv("GRAPE_CACHE_DIR", file)
	_, err = KernelCacheInfo()
	wantCode(t, err, CodeIO)
	wantCode(t, ClearKernelCache(), CodeIO)
}
