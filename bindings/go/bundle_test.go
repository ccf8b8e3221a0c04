package grape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKernelBundleWriteAndUse(t *testing.T) {
	m := loadTest(t)
	path := filepath.Join(t.TempDir(), "t.grpkb")
	report, err := m.WriteKernelBundle("compute_80", path)
	if CodeOf(err) == CodeNoDevice { // no NVRTC on this machine
		t.Skipf("NVRTC cannot be loaded: %v", err)
	}
	must(t, err)
	if !strings.Contains(report, "bundle: "+path) {
		t.Fatalf("report does not name the bundle:\n%s", report)
	}
	if info, err := os.Stat(path); err != nil || info.Size() == 0 {
		t.Fatalf("bundle not written: %v", err)
	}
	must(t, UseKernelBundle(path))
	wantCode(t, func() error { _, err := m.WriteKernelBundle("sm80", path); return err }(), CodeInvalidArgument,
		"'sm80' is not a target name")
}

func TestKernelBundleBadRowCounts(t *testing.T) {
	m := loadTest(t)
	path := filepath.Join(t.TempDir(), "rows.grpkb")
	for _, bad := range []string{"0", "17", "5,x"} {
		wantCode(t, func() error { _, err := m.WriteKernelBundleRows("compute_80", bad, path); return err }(),
			CodeInvalidArgument, "is not a row count from 1 to 16")
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatalf("a bundle was written for bad row counts")
	}
}

func TestKernelBundleErrors(t *testing.T) {
	dir := t.TempDir()
	wantCode(t, UseKernelBundle(filepath.Join(dir, "missing.grpkb")), CodeIO, "missing.grpkb")
	notBundle := filepath.Join(dir, "text.grpkb")
	must(t, os.WriteFile(notBundle, []byte("not a bundle at all, just text"), 0o644))
	wantCode(t, UseKernelBundle(notBundle), CodeFormat, "text.grpkb")
	wantCode(t, UseKernelBundle(""), CodeInvalidArgument, "path: empty")
}
