package hybridhash

import (
	"testing"
)

// BenchmarkResolve measures a training step's ID resolution and counting
// on a Zipf trace with a warm hot set (the cost per ID looked up).
func BenchmarkResolve(b *testing.B) {
	draw, _ := zipf(1_000_000, 1.05, 4)
	o := Options{Tables: 1, Dim: 4, Width: 5, Bounds: []float64{0.1}, Seed: 1, HotRows: 100_000,
		HostBytes: 1 << 20, DiskDir: b.TempDir(), WarmupIters: 10, FlushIters: 1 << 40}
	c, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const batch = 4096
	steps := make([][]int64, 64)
	for s := range steps {
		steps[s] = make([]int64, batch)
		for i := range steps[s] {
			steps[s][i] = draw()
		}
	}
	out := make([]int32, batch)
	var misses []int64
	for s := range 11 {
		c.Resolve(0, steps[s%len(steps)], out, nil, true)
		c.Reset()
		c.EndStep()
		if c.RefreshDue() {
			c.Refresh()
		}
	}
	b.ResetTimer()
	for i := range b.N {
		misses = c.Resolve(0, steps[i%len(steps)], out, misses[:0], true)
		c.Reset()
		c.EndStep()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/id")
}
