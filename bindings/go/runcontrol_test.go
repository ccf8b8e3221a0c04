package grape

import (
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Bounded and interrupted runs (SessionOptions.MaxLoopTrips and Timeout, Session.Interrupt), the
// backend a session runs on, and what a run reports (LastRunStats, AutoDecisions).

// spinSource is a device loop without `max`: n trips (about a microsecond each on the CPU).
const spinSource = `model spin
fn main(n: i32[]) -> i32[] {
  var i = 0
  while i < n {
    i = i + 1
  }
  return i
}
`

func loadSpin(t *testing.T) *Model {
	t.Helper()
	m, err := LoadSource(spinSource, "spin.grp", nil)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

func spinSession(t *testing.T, m *Model, opts *SessionOptions) *Session {
	t.Helper()
	s, err := m.NewSession(opts)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func spinOutput(t *testing.T, s *Session) int32 {
	t.Helper()
	out, err := s.Output(0)
	must(t, err)
	return i32s(t, out)[0]
}

func TestMaxLoopTripsCapsLoopsWithoutMax(t *testing.T) {
	m := loadSpin(t)
	s := spinSession(t, m, &SessionOptions{MaxLoopTrips: 10})
	must(t, s.SetInput("n", nil, []int32{10}))
	must(t, s.Run())
	if got := spinOutput(t, s); got != 10 {
		t.Fatalf("output = %d", got)
	}
	// One trip past the cap: CodeType on the CPU, naming the loop and the cap.
	must(t, s.SetInput("n", nil, []int32{11}))
	err := s.Run()
	wantCode(t, err, CodeType, "ran 10 trips without stopping")
	if e := err.(*Error); e.Line == 0 {
		t.Fatalf("the error has no position: %+v", e)
	}
	if got := spinOutput(t, s); got != 10 {
		t.Fatalf("the failed run changed the output to %d", got)
	}
	_, err = m.NewSession(&SessionOptions{MaxLoopTrips: -1})
	wantCode(t, err, CodeInvalidArgument)
}

func TestTimeoutInterruptsARunAndChangesNothing(t *testing.T) {
	m := loadSpin(t)
	s := spinSession(t, m, &SessionOptions{MaxLoopTrips: math.MaxInt64, Timeout: 50 * time.Millisecond})
	must(t, s.SetInput("n", nil, []int32{3}))
	must(t, s.Run())
	must(t, s.SetInput("n", nil, []int32{math.MaxInt32}))
	start := time.Now()
	wantCode(t, s.Run(), CodeInterrupted, "longer than its timeout of 0.05 s")
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the run took %v", d)
	}
	if got := spinOutput(t, s); got != 3 {
		t.Fatalf("output = %d after the stopped run", got)
	}
	must(t, s.SetInput("n", nil, []int32{5}))
	must(t, s.Run())
	if got := spinOutput(t, s); got != 5 {
		t.Fatalf("output = %d", got)
	}
	_, err := m.NewSession(&SessionOptions{Timeout: -time.Second})
	wantCode(t, err, CodeInvalidArgument, "timeout")
}

func TestInterruptStopsARunFromAnotherGoroutine(t *testing.T) {
	m := loadSpin(t)
	// The timeout only keeps a broken Interrupt from hanging the test; its message differs.
	s := spinSession(t, m, &SessionOptions{MaxLoopTrips: math.MaxInt64, Timeout: time.Minute})
	must(t, s.SetInput("n", nil, []int32{2}))
	must(t, s.Run())
	// With no run in progress an interrupt has no effect: the next run clears it.
	s.Interrupt()
	must(t, s.Run())

	must(t, s.SetInput("n", nil, []int32{math.MaxInt32}))
	var done atomic.Bool
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for !done.Load() { // until the run has started and seen it
			time.Sleep(5 * time.Millisecond)
			s.Interrupt() // does not wait for Run, which holds the session's mutex
		}
	}()
	err := s.Run()
	done.Store(true)
	<-stopped
	wantCode(t, err, CodeInterrupted, "the run was interrupted")
	if got := spinOutput(t, s); got != 2 {
		t.Fatalf("output = %d after the interrupted run", got)
	}
	must(t, s.SetInput("n", nil, []int32{7}))
	must(t, s.Run())
	if got := spinOutput(t, s); got != 7 {
		t.Fatalf("output = %d", got)
	}
	s.Close()
	s.Interrupt() // a no-op on a closed session
}

func TestBackendAndFallbackReason(t *testing.T) {
	m := loadSpin(t)
	cpu := spinSession(t, m, &SessionOptions{Backend: "cpu"})
	if cpu.Backend() != "cpu" || cpu.FallbackReason() != "" {
		t.Fatalf("cpu session: backend %q, fallback %q", cpu.Backend(), cpu.FallbackReason())
	}
	auto := spinSession(t, m, &SessionOptions{Backend: "auto"})
	if BackendAvailable("cuda") {
		if auto.Backend() != "cuda" || auto.FallbackReason() != "" {
			t.Fatalf("auto session: backend %q, fallback %q", auto.Backend(), auto.FallbackReason())
		}
	} else if auto.Backend() != "cpu" || auto.FallbackReason() == "" {
		t.Fatalf("auto session without CUDA: backend %q, fallback %q", auto.Backend(), auto.FallbackReason())
	}
}

func TestLastRunStatsOnTheCPU(t *testing.T) {
	m := loadSpin(t)
	s := spinSession(t, m, &SessionOptions{Backend: "cpu"})
	before, err := s.LastRunStats()
	must(t, err)
	if before.Executor != "cpu" || before.Kernels != 0 || before.Graphs != 0 {
		t.Fatalf("before the first run: %+v", before)
	}
	must(t, s.SetInput("n", nil, []int32{100}))
	must(t, s.Run())
	after, err := s.LastRunStats()
	must(t, err)
	// The CPU backend launches no kernels and holds no graphs; "auto" has nothing to say.
	if after.Executor != "cpu" || after.Kernels != 0 || after.GraphLaunches != 0 || after.Graphs != 0 ||
		after.GraphBytes != 0 || after.AutoState != "" || after.KernelsTuned != 0 || after.KernelsRetuned != 0 ||
		after.TuningMs != 0 {
		t.Fatalf("after a run: %+v", after)
	}
	s.Close()
	_, err = s.LastRunStats()
	wantCode(t, err, CodeInvalidArgument, "closed")
}

func TestAutoDecisionsAreEmptyOnTheCPU(t *testing.T) {
	m := loadSpin(t)
	s := spinSession(t, m, &SessionOptions{Backend: "cpu"})
	d, err := s.AutoDecisions()
	must(t, err)
	if len(d) != 0 {
		t.Fatalf("decisions before a run: %+v", d)
	}
	must(t, s.SetInput("n", nil, []int32{1}))
	for i := 0; i < 3; i++ {
		must(t, s.Run())
	}
	d, err = s.AutoDecisions()
	must(t, err)
	if len(d) != 0 {
		t.Fatalf("decisions on the CPU: %+v", d)
	}
	s.Close()
	_, err = s.AutoDecisions()
	wantCode(t, err, CodeInvalidArgument, "closed")
}

func TestInputIndex(t *testing.T) {
	s := newSession(t, loadTest(t), "")
	for want, name := range []string{"x", "y"} {
		i, err := s.InputIndex(name)
		must(t, err)
		if i != want {
			t.Fatalf("InputIndex(%q) = %d, want %d", name, i, want)
		}
	}
	_, err := s.InputIndex("z")
	wantCode(t, err, CodeInvalidArgument, "z")
	s.Close()
	_, err = s.InputIndex("x")
	wantCode(t, err, CodeInvalidArgument, "closed")
}

func TestCompilerLimits(t *testing.T) {
	src := "fn main(x: f32[4]) -> f32[4] {\n  return x * 2.0 + 1.0\n}\n"
	_, err := LoadSource(src, "l.grp", &LoadOptions{Limits: map[string]uint64{"max_ops": 1}})
	wantCode(t, err, CodeType, "(the max_ops limit)")
	if e := err.(*Error); e.File != "l.grp" || e.Line != 2 {
		t.Fatalf("position %s:%d", e.File, e.Line)
	}
	m, err := LoadSource(src, "l.grp", &LoadOptions{Limits: map[string]uint64{"max_ops": 1000, "max_call_depth": 8},
		Defines: map[string]int64{}})
	must(t, err)
	m.Close()
	_, err = LoadSource(src, "l.grp", &LoadOptions{Limits: map[string]uint64{"max_nope": 1}})
	wantCode(t, err, CodeInvalidArgument, "unknown limit 'max_nope'")
}

func TestCompileKernels(t *testing.T) {
	m, err := LoadSource("fn main(x: f32[4]) -> f32[4] {\n  return x * 2.0 + 1.0\n}\n"+
		"fn other(x: f32[4]) -> f32[4] {\n  return x - 1.0\n}\n", "k.grp", nil)
	must(t, err)
	defer m.Close()
	// Bad target lists are refused before NVRTC is needed.
	_, err = m.CompileKernels("")
	wantCode(t, err, CodeInvalidArgument)
	_, err = m.CompileKernels("sm80")
	wantCode(t, err, CodeInvalidArgument, "'sm80' is not a target name")
	report, err := m.CompileKernels("compute_80")
	if CodeOf(err) == CodeNoDevice {
		t.Skipf("NVRTC cannot be loaded: %v", err)
	}
	must(t, err)
	if !strings.HasPrefix(report, "targets: compute_80\n") || !strings.Contains(report, "  main: ") ||
		!strings.Contains(report, "  other: ") || !strings.Contains(report, "in 2 entries") {
		t.Fatalf("report:\n%s", report)
	}
	m.Close()
	_, err = m.CompileKernels("compute_80")
	wantCode(t, err, CodeInvalidArgument, "closed")
}

func TestDTypesAgreeWithTheLibrary(t *testing.T) {
	for _, d := range []DType{F32, F16, BF16, I32, I64, Bool} {
		if d.Size() != d.libSize() || d.String() != d.libName() {
			t.Fatalf("%v: Go says %d %q, the library %d %q", d, d.Size(), d.String(), d.libSize(), d.libName())
		}
	}
	if d := DType(99); d.libSize() != 0 || d.libName() != "" || d.Size() != 0 {
		t.Fatalf("an unknown dtype: %d %q", d.libSize(), d.libName())
	}
}
