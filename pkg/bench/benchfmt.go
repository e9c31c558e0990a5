package bench

import (
	"fmt"
	"io"
	"strings"
)

// BenchName is the benchmark name of a variant, as Go's testing package
// would print it with GOMAXPROCS procs.
func BenchName(variant string, procs int) string {
	name := "BenchmarkTrain/mode=" + strings.ReplaceAll(variant, " ", "_")
	if procs > 1 {
		name += fmt.Sprintf("-%d", procs)
	}
	return name
}

// WriteBenchHeader writes the configuration lines that start Go benchmark
// output (benchstat groups results by them).
func WriteBenchHeader(w io.Writer, env Environment) {
	fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: github.com/picasso-ctr/picasso\n", env.OS, env.Arch)
	if env.CPU != "" {
		fmt.Fprintf(w, "cpu: %s\n", env.CPU)
	}
}

// BenchLine formats a run as a Go benchmark result: N is the number of
// steps and ns/op the time per step without test evaluations, followed by
// the throughput, the bytes each step moved host→device and device→host,
// and the final test AUC.
func BenchLine(variant string, procs int, r *RunRecord) string {
	s := r.Summary
	steps := float64(max(s.Steps, 1))
	line := fmt.Sprintf("%s\t%8d\t%14.0f ns/op\t%12.1f samples/s\t%12.0f h2d-B/op\t%12.0f d2h-B/op",
		BenchName(variant, procs), s.Steps, r.NsPerStep(), r.TrainSamplesPerS(), float64(s.BytesH2D)/steps, float64(s.BytesD2H)/steps)
	if auc := float64(s.TestAUC); auc == auc {
		line += fmt.Sprintf("\t%10.6f test-auc", auc)
	}
	return line
}
