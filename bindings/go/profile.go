package grape

/*
#include <grape.h>
*/
import "C"

// KernelTime is one kernel's launches while profiling was on (Session.KernelProfile).
type KernelTime struct {
	Name     string  // the generated kernel, e.g. "decode_step_k12_matmul"
	Op       string  // the op whose result it writes, e.g. "matmul"
	Location string  // that op's source position "file:line:col", or ""
	Grid     uint32  // blocks per launch
	Block    uint32  // threads per block
	Launches int64   // launches timed, all profiled runs together
	TotalMs  float64 // their device time, summed
	Bytes    float64 // bytes one launch reads and writes, at the last run's dims
	Flops    float64 // floating-point operations of one launch's matrix products (2*M*N*K each)
}

// KernelProfile is what profiling collected: the runs profiled and every kernel launched, in
// program order.
type KernelProfile struct {
	Runs    int64
	Kernels []KernelTime
}

// SetProfiling turns per-kernel device times on for the runs that follow (CUDA backend, eager
// executor: a CUDA event pair around each launch; on also clears what was collected) or off. The
// CPU backend and the graph executor return an error with CodeUnsupported.
func (s *Session) SetProfiling(on bool) error {
	return s.use(func(p *C.grp_session) error {
		v := C.int(0)
		if on {
			v = 1
		}
		return check(C.grp_session_set_profiling(p, v))
	})
}

// KernelProfile returns what profiling has collected so far.
func (s *Session) KernelProfile() (KernelProfile, error) {
	var out KernelProfile
	err := s.use(func(p *C.grp_session) error {
		var runs C.int64_t
		var count C.size_t
		if err := check(C.grp_session_kernel_profile(p, &runs, &count)); err != nil {
			return err
		}
		out.Runs = int64(runs)
		for i := C.size_t(0); i < count; i++ {
			var k C.grp_kernel_profile // zeroed by Go
			k.struct_size = C.sizeof_grp_kernel_profile
			if err := check(C.grp_session_kernel_profile_at(p, i, &k)); err != nil {
				return err
			}
			out.Kernels = append(out.Kernels, KernelTime{
				Name: C.GoString(k.name), Op: C.GoString(k.op), Location: C.GoString(k.where),
				Grid: uint32(k.grid), Block: uint32(k.block), Launches: int64(k.launches),
				TotalMs: float64(k.total_ms), Bytes: float64(k.bytes), Flops: float64(k.flops),
			})
		}
		return nil
	})
	return out, err
}
