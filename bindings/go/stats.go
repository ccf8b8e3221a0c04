package grape

/*
#include <stdlib.h>
#include <grape.h>
*/
import "C"

import (
	"strconv"
	"strings"
	"unsafe"
)

// RunStats is what the last run did (Session.LastRunStats, grape.h's grp_run_stats).
type RunStats struct {
	Kernels     int64   // kernel launches (CUDA; 0 on the CPU backend)
	HostSyncs   int64   // host synchronisations inside the run (device loop conditions)
	DeviceMs    float64 // time of the run on the device stream, measured with CUDA events
	DeviceBytes int64   // device memory held by the session
	CompileMs   float64 // building the session's kernels (NVRTC or the kernel cache)
	// The executor that ran the run: "eager" or "graph" on CUDA ("auto" before its first run),
	// "cpu" on the CPU backend.
	Executor      string
	GraphLaunches int64 // CUDA graphs launched by the run (graph executor: 1)
	Graphs        int64 // instantiated CUDA graphs the session holds
	ParamUploads  int64 // parameter-block uploads (0 when no pointer, dim or state address changed)
	// Executor "auto"'s decision for the run's shape bucket, one line ("measuring (3 of 8
	// calls)", "graph (graph 0.740 ms vs eager 0.890 ms, ...)"); "" for the other executors and
	// the CPU backend.
	AutoState    string
	GraphBytes   int64 // device memory the session's instantiated graphs took
	GraphUpdates int64 // 1 when the run rewrote its bucket's graph for new dims (no new graph)
	// Autotuning (CUDA): kernels whose launch configurations the session measured so far, kernels
	// bound now to a configuration other than the built-in heuristic's, and the host time the
	// measurements took.
	KernelsTuned   int64
	KernelsRetuned int64
	TuningMs       float64
	// Executor "mono": "decoder" when the run took the decoder plan (docs/execution.md), else
	// "general (<why not>)"; "" for the other executors and the CPU backend.
	Plan string
}

// LastRunStats reports what the last successful run did (all zero, Executor aside, before the
// first one).
func (s *Session) LastRunStats() (RunStats, error) {
	var out RunStats
	err := s.use(func(p *C.grp_session) error {
		var r C.grp_run_stats // zeroed by Go
		r.struct_size = C.sizeof_grp_run_stats
		if err := check(C.grp_session_last_run_stats(p, &r)); err != nil {
			return err
		}
		out = RunStats{
			Kernels: int64(r.kernels), HostSyncs: int64(r.host_syncs), DeviceMs: float64(r.device_ms),
			DeviceBytes: int64(r.device_bytes), CompileMs: float64(r.compile_ms), Executor: C.GoString(r.executor),
			GraphLaunches: int64(r.graph_launches), Graphs: int64(r.graphs), ParamUploads: int64(r.param_uploads),
			AutoState: C.GoString(r.auto_state), GraphBytes: int64(r.graph_bytes), GraphUpdates: int64(r.graph_updates),
			KernelsTuned: int64(r.kernels_tuned), KernelsRetuned: int64(r.kernels_retuned), TuningMs: float64(r.tuning_ms),
			Plan: C.GoString(r.plan),
		}
		return nil
	})
	return out, err
}

// AutoDecision is executor "auto"'s decision for one shape bucket (Session.AutoDecisions,
// grape.h's grp_auto_decision).
type AutoDecision struct {
	Bucket        string    // the dims it stands for, "B=2, S=3..4"; "" without symbolic dims
	Executor      string    // "eager" or "graph" once decided; "" while measuring
	Reason        string    // why, one line; "" while measuring
	Calls         int64     // calls of the bucket so far
	MeasuredCalls int64     // of those, the calls that counted towards the decision
	CallsToDecide int64     // calls the measurement takes (8); the decision holds after them
	EagerMs       []float64 // device time of each timed eager call, in call order
	GraphMs       []float64 // and of each timed graph call
	EagerMedianMs float64   // medians of those; 0 before the first
	GraphMedianMs float64
}

// AutoDecisions returns executor "auto"'s decisions, one per shape bucket in the order of their
// first runs (docs/execution.md, "Selective execution"); none for the other executors and on the
// CPU backend.
func (s *Session) AutoDecisions() ([]AutoDecision, error) {
	var out []AutoDecision
	err := s.use(func(p *C.grp_session) error {
		var count C.size_t
		if err := check(C.grp_session_auto_decisions(p, &count)); err != nil {
			return err
		}
		out = make([]AutoDecision, 0, int(count))
		for i := C.size_t(0); i < count; i++ {
			var d C.grp_auto_decision // zeroed by Go
			d.struct_size = C.sizeof_grp_auto_decision
			if err := check(C.grp_session_auto_decision_at(p, i, &d)); err != nil {
				return err
			}
			out = append(out, AutoDecision{
				Bucket: C.GoString(d.bucket), Executor: C.GoString(d.executor), Reason: C.GoString(d.reason),
				Calls: int64(d.calls), MeasuredCalls: int64(d.measured_calls), CallsToDecide: int64(d.calls_to_decide),
				EagerMs: goFloats(d.eager_ms, d.eager_count), GraphMs: goFloats(d.graph_ms, d.graph_count),
				EagerMedianMs: float64(d.eager_median_ms), GraphMedianMs: float64(d.graph_median_ms),
			})
		}
		return nil
	})
	return out, err
}

// goFloats copies a C array of doubles.
func goFloats(p *C.double, n C.size_t) []float64 {
	out := make([]float64, int(n))
	if n > 0 {
		copy(out, unsafe.Slice((*float64)(unsafe.Pointer(p)), int(n)))
	}
	return out
}

// CompileKernels generates the CUDA kernels of every entry and compiles each with NVRTC for every
// target of archs, a comma-separated list of "sm_NN" (cubin) or "compute_NN" (PTX only) names,
// e.g. "sm_80,sm_90" (grp_model_compile_kernels): an ahead-of-time check that every kernel
// compiles. Needs the NVRTC library, not a GPU; the kernel cache is neither read nor written. It
// returns a short report: the targets, each entry with its number of kernels, the total number of
// compiles. Errors: CodeInvalidArgument for an archs list that is empty, malformed or names a
// target this NVRTC cannot compile for; CodeNoDevice when no NVRTC library can be loaded;
// CodeInternal when a kernel fails to compile or compiles with warnings (the message lists each,
// with its entry, kernel, op and file:line:col).
func (m *Model) CompileKernels(archs string) (string, error) {
	carchs := C.CString(archs)
	defer C.free(unsafe.Pointer(carchs))
	var text string
	err := m.use(func(p *C.grp_model) error {
		var out *C.char
		if err := check(C.grp_model_compile_kernels(p, carchs, &out)); err != nil {
			return err
		}
		text = C.GoString(out)
		C.grp_free(unsafe.Pointer(out))
		return nil
	})
	return text, err
}

// CacheInfo describes the on-disk kernel cache (KernelCacheInfo).
type CacheInfo struct {
	// The folder "kernels" of $GRAPE_CACHE_DIR, else of $XDG_CACHE_HOME/grape, else of
	// $HOME/.cache/grape.
	Directory string
	Entries   int64 // cache entries in it
	Bytes     int64 // their size on disk
}

// KernelCacheInfo reports where the kernel cache of this process lives and what it holds
// (grp_cache_info); the folder is created (mode 0700) when missing. CodeIO when it cannot be placed
// or created.
func KernelCacheInfo() (CacheInfo, error) {
	var out *C.char
	if err := check(C.grp_cache_info(&out)); err != nil {
		return CacheInfo{}, err
	}
	text := C.GoString(out)
	C.grp_free(unsafe.Pointer(out))
	// "directory: DIR\nentries: N\nbytes: B\n"
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			fields[k] = v
		}
	}
	entries, err1 := strconv.ParseInt(fields["entries"], 10, 64)
	bytes, err2 := strconv.ParseInt(fields["bytes"], 10, 64)
	dir, ok := fields["directory"]
	if !ok || err1 != nil || err2 != nil {
		return CacheInfo{}, newError(CodeInternal, "grp_cache_info returned text this package cannot read: %q", text)
	}
	return CacheInfo{Directory: dir, Entries: entries, Bytes: bytes}, nil
}

// ClearKernelCache deletes every entry of the kernel cache (and leftover temporary files); the
// folder and anything else in it stay (grp_cache_clear). CodeIO when the folder cannot be placed,
// created or listed, or an entry cannot be deleted.
func ClearKernelCache() error {
	return check(C.grp_cache_clear())
}
