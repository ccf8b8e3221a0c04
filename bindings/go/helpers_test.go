package grape

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// testSource exercises arithmetic, a loop with break, and state.
const testSource = `model t

# The states' dim is M, not N: see TestUnusedStateDoesNotBindDims.
state acc: f32[M] = zeros
state calls: i32[] = zeros

fn main(x: f32[N], y: f32[N]) -> f32[N] {
  return x * 2.0 + y
}

fn count(n: i32[]) -> i32[] {
  var i = 0
  var s = 0
  while true max 1000 {
    if i >= n { break }
    s = s + i
    i = i + 1
  }
  return s
}

fn accumulate(x: f32[M]) -> (f32[M], i32[]) {
  acc = acc + x
  calls = calls + 1
  return acc, calls
}
`

func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func loadTest(t testing.TB) *Model {
	t.Helper()
	m, err := LoadSource(testSource, "t.grp", nil)
	if err != nil {
		t.Fatalf("LoadSource: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func newSession(t testing.TB, m *Model, entry string) *Session {
	t.Helper()
	s, err := m.NewSession(&SessionOptions{Entry: entry})
	if err != nil {
		t.Fatalf("NewSession(%q): %v", entry, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCode(t testing.TB, err error, code Code, contains ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", code)
	}
	if CodeOf(err) != code {
		t.Fatalf("got %v, want code %v", err, code)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Fatalf("error %q does not contain %q", err, c)
		}
	}
}

func f32s(t testing.TB, tensor Tensor) []float32 {
	t.Helper()
	v, err := tensor.Float32()
	must(t, err)
	return v
}

func i32s(t testing.TB, tensor Tensor) []int32 {
	t.Helper()
	v, err := tensor.Int32()
	must(t, err)
	return v
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
