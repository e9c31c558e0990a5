package hybridhash

import (
	"context"
	"testing"
)

// TestSweep: on a Zipf trace the sweep's hit ratios grow with the size,
// stay within 3 points of the oracle's, and the oracle's equal the true
// top-k mass within sampling error.
func TestSweep(t *testing.T) {
	draw, _ := zipf(50000, 1.05, 9)
	var steps []Step
	for range 300 {
		s := Step{make([]int64, 512), make([]int64, 256)}
		for i := range s[0] {
			s[0][i] = draw()
		}
		for i := range s[1] {
			s[1][i] = draw() % 100
		}
		steps = append(steps, s)
	}
	trace := func(fn func(Step) error) error {
		for _, s := range steps {
			if err := fn(s); err != nil {
				return err
			}
		}
		return nil
	}
	res, err := Sweep(context.Background(), trace, SweepOptions{Tables: 2, HotRows: []int{100, 500, 2000}, WarmupIters: 20,
		FlushIters: 40, SketchWidth: 1 << 16, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 300 || res.Lookups != 300*768 {
		t.Fatalf("sweep saw %d steps, %d lookups; want 300, %d", res.Steps, res.Lookups, 300*768)
	}
	prev := 0.0
	for _, r := range res.Rows {
		t.Logf("k %d: hit %.4f (oracle %.4f), unique %.4f (oracle %.4f)", r.HotRows, r.HitRatio, r.OracleHitRatio, r.UniqueHitRatio, r.OracleUniqueHitRatio)
		if r.HitRatio < prev {
			t.Errorf("k %d: hit ratio %.4f below the smaller size's %.4f", r.HotRows, r.HitRatio, prev)
		}
		prev = r.HitRatio
		if r.HitRatio > r.OracleHitRatio+0.01 || r.HitRatio < r.OracleHitRatio-0.03 {
			t.Errorf("k %d: hit ratio %.4f; want within 3 points below the oracle's %.4f", r.HotRows, r.HitRatio, r.OracleHitRatio)
		}
	}
}
