package grape

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// Many goroutines, each with its own sessions of one shared model, running many times.
func TestConcurrentSessions(t *testing.T) {
	const goroutines, runs = 16, 100
	m := loadTest(t)
	mlp := loadMLP(t)
	x := mlpInput(2, 8)
	ref := runMLP(t, mlp, x)

	// grape.h: setting weights is thread-safe; sessions snapshot them. The same seed again keeps
	// every result equal to ref.
	stop := make(chan struct{})
	reweighed := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				reweighed <- nil
				return
			default:
			}
			if err := mlp.SetRandomWeights(1); err != nil {
				reweighed <- err
				return
			}
		}
	}()

	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			if err := hammer(m, mlp, g, runs, x, ref); err != nil {
				errs <- fmt.Errorf("goroutine %d: %w", g, err)
			}
		}(g)
	}
	wg.Wait()
	close(stop)
	must(t, <-reweighed)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func hammer(m, mlp *Model, g, runs int, x []uint16, ref []uint16) error {
	main, err := m.NewSession(nil)
	if err != nil {
		return err
	}
	defer main.Close()
	acc, err := m.NewSession(&SessionOptions{Entry: "accumulate"})
	if err != nil {
		return err
	}
	defer acc.Close()
	ms, err := mlp.NewSession(nil)
	if err != nil {
		return err
	}
	defer func() { ms.Close() }() // ms is replaced below
	if err := ms.SetInput("x", []int64{2, 8}, x); err != nil {
		return err
	}
	for r := 0; r < runs; r++ {
		n := 1 + (g+r)%5
		xs, ys := make([]float32, n), make([]float32, n)
		for i := range xs {
			xs[i], ys[i] = float32(g*1000+r), float32(i)
		}
		if err := main.SetInput("x", []int64{int64(n)}, xs); err != nil {
			return err
		}
		if err := main.SetInput("y", []int64{int64(n)}, ys); err != nil {
			return err
		}
		if err := main.Run(); err != nil {
			return err
		}
		out, err := main.OutputView(0)
		if err != nil {
			return err
		}
		v, err := out.Float32()
		if err != nil {
			return err
		}
		for i := range v {
			if want := 2*xs[i] + ys[i]; v[i] != want || len(v) != n {
				return fmt.Errorf("run %d: out[%d] = %v, want %v", r, i, v[i], want)
			}
		}

		if err := acc.SetInput("x", []int64{1}, []float32{float32(g)}); err != nil {
			return err
		}
		if err := acc.Run(); err != nil {
			return err
		}
		calls, err := acc.Output(1)
		if err != nil {
			return err
		}
		c, _ := calls.Int32()
		if c[0] != int32(r+1) {
			return fmt.Errorf("run %d: calls = %d", r, c[0])
		}

		if r%25 == 24 { // a fresh session, created while weights are being set
			ms.Close()
			if ms, err = mlp.NewSession(nil); err != nil {
				return err
			}
			if err := ms.SetInput("x", []int64{2, 8}, x); err != nil {
				return err
			}
		}
		if r%10 == 0 || r%25 == 24 {
			if err := ms.Run(); err != nil {
				return err
			}
			o, err := ms.Output(0)
			if err != nil {
				return err
			}
			bits, _ := o.Uint16()
			if !equal(bits, ref) {
				return fmt.Errorf("run %d: mlp output differs from the serial run", r)
			}
		}
	}
	st, err := acc.State("acc")
	if err != nil {
		return err
	}
	v, _ := st.Float32()
	if v[0] != float32(g*runs) {
		return fmt.Errorf("state acc = %v, want %v", v[0], g*runs)
	}
	return nil
}

// One session shared by goroutines: its mutex serialises the calls.
func TestSharedSessionIsSerialised(t *testing.T) {
	const goroutines, runs = 8, 50
	s := newSession(t, loadTest(t), "accumulate")
	must(t, s.SetInput("x", []int64{1}, []float32{1}))
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < runs; r++ {
				if err := s.Run(); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Output(1); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	calls, err := s.State("calls")
	must(t, err)
	if got := i32s(t, calls)[0]; got != goroutines*runs {
		t.Fatalf("calls = %d, want %d", got, goroutines*runs)
	}
}

func loadMLP(t testing.TB) *Model {
	t.Helper()
	m, err := LoadFile(filepath.Join(repoRoot(t), "examples", "mlp.grp"),
		&LoadOptions{Defines: map[string]int64{"D": 8, "H": 16, "C": 4}})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	must(t, m.SetRandomWeights(1))
	return m
}

func mlpInput(b, d int) []uint16 {
	x := make([]uint16, b*d)
	for i := range x {
		x[i] = Float32ToF16(float32(i%7) * 0.25)
	}
	return x
}

func runMLP(t testing.TB, m *Model, x []uint16) []uint16 {
	t.Helper()
	s, err := m.NewSession(nil)
	must(t, err)
	defer s.Close()
	must(t, s.SetInput("x", []int64{int64(len(x) / 8), 8}, x))
	must(t, s.Run())
	out, err := s.Output(0)
	must(t, err)
	bits, err := out.Uint16()
	must(t, err)
	return bits
}
