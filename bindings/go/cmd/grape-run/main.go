// Command grape-run compiles a .grp model, gives it random weights, runs one entry on generated
// inputs and prints the outputs. With no arguments it runs examples/mlp.grp at a small size:
//
//	go run ./cmd/grape-run -model ../../examples/mlp.grp -D D=32 -D H=64 -D C=10 -dim B=2
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"grape.dev/grape"
)

type assignments map[string]int64

func (a assignments) String() string { return fmt.Sprint(map[string]int64(a)) }

func (a assignments) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	v, err := strconv.ParseInt(value, 10, 64)
	if !ok || err != nil {
		return fmt.Errorf("want NAME=INTEGER, got %q", s)
	}
	a[name] = v
	return nil
}

func main() {
	defines := assignments{}
	dims := assignments{}
	model := flag.String("model", "../../examples/mlp.grp", "the .grp file")
	entry := flag.String("entry", "main", "entry point")
	seed := flag.Uint64("seed", 1, "random weights seed")
	backend := flag.String("backend", "cpu", "backend: auto, cpu, cuda")
	runs := flag.Int("runs", 1, "how many times to run")
	flag.Var(defines, "D", "const override NAME=VALUE (repeatable)")
	flag.Var(dims, "dim", "size of a symbolic input dim NAME=VALUE (repeatable; default 2)")
	flag.Parse()
	if len(defines) == 0 && strings.HasSuffix(*model, "mlp.grp") {
		defines = assignments{"D": 32, "H": 64, "C": 10}
	}
	if err := run(*model, *entry, *backend, *seed, *runs, defines, dims); err != nil {
		fmt.Fprintln(os.Stderr, "grape-run:", err)
		os.Exit(1)
	}
}

func run(path, entry, backend string, seed uint64, runs int, defines, dims assignments) error {
	fmt.Printf("libgrape %s\n", grape.Version())
	m, err := grape.LoadFile(path, &grape.LoadOptions{Defines: defines})
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.SetRandomWeights(seed); err != nil {
		return err
	}
	s, err := m.NewSession(&grape.SessionOptions{Entry: entry, Backend: backend})
	if err != nil {
		return err
	}
	defer s.Close()
	for _, in := range s.Inputs() {
		shape := make([]int64, len(in.Dims))
		for k, d := range in.Dims {
			if d < 0 {
				d = 2
				if v, ok := dims[in.DimExprs[k]]; ok {
					d = v
				}
			}
			shape[k] = d
		}
		t, err := s.InputBuffer(in.Name, in.DType, shape)
		if err != nil {
			return err
		}
		fill(t)
		fmt.Printf("input  %s: %s%v\n", in.Name, in.DType, shape)
	}
	for r := 0; r < runs; r++ {
		if err := s.Run(); err != nil {
			return err
		}
	}
	for i, info := range s.Outputs() {
		out, err := s.Output(i)
		if err != nil {
			return err
		}
		fmt.Printf("output %s: %s%v\n%s\n", info.Name, out.DType, out.Shape, format(out))
	}
	return nil
}

// fill writes deterministic values into an input buffer.
func fill(t grape.Tensor) {
	val := func(i int) float64 { return math.Sin(float64(i)*0.7) * 0.5 }
	switch t.DType {
	case grape.F32:
		v, _ := t.Float32()
		for i := range v {
			v[i] = float32(val(i))
		}
	case grape.F16, grape.BF16:
		v, _ := t.Uint16()
		for i := range v {
			if t.DType == grape.F16 {
				v[i] = grape.Float32ToF16(float32(val(i)))
			} else {
				v[i] = grape.Float32ToBF16(float32(val(i)))
			}
		}
	case grape.I32:
		v, _ := t.Int32()
		for i := range v {
			v[i] = int32(i % 7)
		}
	case grape.I64:
		v, _ := t.Int64()
		for i := range v {
			v[i] = int64(i % 7)
		}
	case grape.Bool:
		v, _ := t.Bool()
		for i := range v {
			v[i] = i%3 != 0
		}
	}
}

// format prints the elements, one row per line for rank >= 2.
func format(t grape.Tensor) string {
	var elems []string
	if f, err := t.ToFloat32(); err == nil {
		for _, x := range f {
			elems = append(elems, strconv.FormatFloat(float64(x), 'g', 5, 32))
		}
	} else if v, err := t.Int32(); err == nil {
		for _, x := range v {
			elems = append(elems, strconv.Itoa(int(x)))
		}
	} else if v, err := t.Int64(); err == nil {
		for _, x := range v {
			elems = append(elems, strconv.FormatInt(x, 10))
		}
	} else if v, err := t.Bool(); err == nil {
		for _, x := range v {
			elems = append(elems, strconv.FormatBool(x))
		}
	}
	row := len(elems)
	if len(t.Shape) >= 2 {
		row = int(t.Shape[len(t.Shape)-1])
	}
	var b strings.Builder
	for i := 0; i < len(elems); i += row {
		end := i + row
		if end > len(elems) || row == 0 {
			end = len(elems)
		}
		fmt.Fprintf(&b, "  [%s]\n", strings.Join(elems[i:end], " "))
		if row == 0 {
			break
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
