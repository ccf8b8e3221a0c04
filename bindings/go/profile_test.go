package grape

import "testing"

// Kernel profiles are measured only by the CUDA eager executor: the CPU backend says so, and its
// profile reads back empty.
func TestCPUBackendDoesNotProfileKernels(t *testing.T) {
	m := loadTest(t)
	s, err := m.NewSession(&SessionOptions{Backend: "cpu"})
	must(t, err)
	defer s.Close()
	wantCode(t, s.SetProfiling(true), CodeUnsupported, "CUDA backend")
	p, err := s.KernelProfile()
	must(t, err)
	if p.Runs != 0 || len(p.Kernels) != 0 {
		t.Fatalf("profile of a CPU session: %+v", p)
	}
}
