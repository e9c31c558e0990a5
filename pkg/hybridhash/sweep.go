package hybridhash

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// Step is one mini-batch's IDs, per table.
type Step [][]int64

// SweepOptions configures Sweep.
type SweepOptions struct {
	// Tables is the number of tables of every Step.
	Tables int
	// HotRows lists the hot-store sizes (k) to compare; when empty,
	// Fractions of the trace's distinct keys are used.
	HotRows   []int
	Fractions []float64
	// WarmupIters, FlushIters, DecayIters, SketchWidth and Seed are the
	// caches' (see Options).
	WarmupIters, FlushIters, DecayIters int64
	SketchWidth                         int
	Seed                                uint64
	// Dir is a scratch directory for the caches' disk tiers (which a sweep
	// does not fill: it moves no rows).
	Dir string
}

// SweepRow is one hot-store size's hit ratios over the steps after
// warm-up: HybridHash's, and the oracle's that keeps the top-k keys by their
// true count over the whole trace (it knows the future; no cache of k rows
// that is filled from past counts does better on a stationary trace).
type SweepRow struct {
	HotRows              int     `json:"hot_rows"`
	HotShare             float64 `json:"hot_share"` // HotRows over the distinct keys
	HitRatio             float64 `json:"hit_ratio"`
	UniqueHitRatio       float64 `json:"unique_hit_ratio"`
	OracleHitRatio       float64 `json:"oracle_hit_ratio"`
	OracleUniqueHitRatio float64 `json:"oracle_unique_hit_ratio"`
}

// SweepResult is a sweep's table and the trace's size.
type SweepResult struct {
	Steps    int64      `json:"steps"`
	Lookups  int64      `json:"lookups"`
	Distinct int64      `json:"distinct"`
	Rows     []SweepRow `json:"rows"`
}

// Sweep measures the hit ratio of the hot store against its size (the
// shape of PICASSO's Table VI). It replays the trace twice (trace calls fn
// with every step in order): first to count every key exactly (the
// oracle, whose memory grows with the distinct keys, unlike a Cache's),
// then through one Cache per size, refreshed as in training.
func Sweep(ctx context.Context, trace func(fn func(Step) error) error, o SweepOptions) (*SweepResult, error) {
	if o.Tables < 1 || o.FlushIters < 1 || o.WarmupIters < 0 || len(o.HotRows) == 0 && len(o.Fractions) == 0 || o.Dir == "" {
		return nil, fmt.Errorf("hybridhash: sweep of %d tables, flush every %d, warm-up %d, %d sizes, %d fractions, dir %q: %w",
			o.Tables, o.FlushIters, o.WarmupIters, len(o.HotRows), len(o.Fractions), o.Dir, ErrInvalidOptions)
	}
	counts := map[Key]int64{}
	res := &SweepResult{}
	err := trace(func(s Step) error {
		if len(s) != o.Tables {
			return fmt.Errorf("hybridhash: sweep: step %d has %d tables; want %d: %w", res.Steps, len(s), o.Tables, ErrInvalidOptions)
		}
		for t, ids := range s {
			for _, id := range ids {
				counts[Key{Table: int32(t), ID: id}]++
			}
			res.Lookups += int64(len(ids))
		}
		res.Steps++
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	res.Distinct = int64(len(counts))
	keys := make([]Key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		if ca, cb := counts[a], counts[b]; ca != cb {
			if ca > cb {
				return -1
			}
			return 1
		}
		return a.Compare(b)
	})
	rank := make(map[Key]int, len(keys))
	for i, k := range keys {
		rank[k] = i
	}
	clear(counts)
	sizes := slices.Clone(o.HotRows)
	if len(sizes) == 0 {
		for _, f := range o.Fractions {
			sizes = append(sizes, max(1, int(math.Round(f*float64(len(keys))))))
		}
	}
	caches := make([]*Cache, len(sizes))
	defer func() {
		for _, c := range caches {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i, k := range sizes {
		c, err := New(Options{Tables: o.Tables, Dim: 1, Width: 1, Bounds: make([]float64, o.Tables), Seed: o.Seed,
			HotRows: k, HostBytes: 1 << 16, DiskDir: filepath.Join(o.Dir, fmt.Sprintf("sweep-%d", i)),
			WarmupIters: o.WarmupIters, FlushIters: o.FlushIters, DecayIters: o.DecayIters, SketchWidth: o.SketchWidth})
		if err != nil {
			return nil, err
		}
		caches[i] = c
	}
	type tally struct{ look, hit, uniq, uhit int64 }
	oracle := make([]tally, len(sizes))
	var out []int32
	var misses []int64
	step := int64(0)
	seen := map[Key]bool{}
	err = trace(func(s Step) error {
		measure := step >= o.WarmupIters
		for _, c := range caches {
			if c.RefreshDue() {
				c.Refresh()
			}
			c.Reset()
			for t, ids := range s {
				out = slices.Grow(out[:0], len(ids))[:len(ids)]
				misses = c.Resolve(t, ids, out, misses[:0], measure)
				if !measure { // warm-up: count without measuring
					for _, id := range ids {
						c.cnt.Add(Key{Table: int32(t), ID: id})
					}
				}
			}
			c.EndStep()
		}
		if measure {
			clear(seen)
			for t, ids := range s {
				for _, id := range ids {
					k := Key{Table: int32(t), ID: id}
					r := rank[k]
					first := !seen[k]
					seen[k] = true
					for i, size := range sizes {
						ot := &oracle[i]
						ot.look++
						if first {
							ot.uniq++
						}
						if r < size {
							ot.hit++
							if first {
								ot.uhit++
							}
						}
					}
				}
			}
		}
		step++
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	for i, c := range caches {
		st := c.Stats()
		ot := oracle[i]
		res.Rows = append(res.Rows, SweepRow{HotRows: sizes[i], HotShare: float64(sizes[i]) / float64(max(1, res.Distinct)),
			HitRatio: st.HitRatio(), UniqueHitRatio: st.UniqueHitRatio(),
			OracleHitRatio: ratio(ot.hit, ot.look), OracleUniqueHitRatio: ratio(ot.uhit, ot.uniq)})
	}
	var errs []error
	for i, c := range caches {
		errs = append(errs, c.Close())
		caches[i] = nil
		errs = append(errs, os.RemoveAll(filepath.Join(o.Dir, fmt.Sprintf("sweep-%d", i))))
	}
	return res, errors.Join(errs...)
}
