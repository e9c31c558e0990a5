package train

import (
	"fmt"
	"math"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// TestPackingOffMatchesPacked trains the same runs with the embedding
// kernels packed (one call over all tables) and unpacked (one call per
// table) and checks that the losses and every parameter agree bit for bit:
// packing changes only the speed. The cases cover one-hot and multi-hot
// bags, tables shared by features, Adagrad's state and the hot table of fae
// mode.
func TestPackingOffMatchesPacked(t *testing.T) {
	for _, tc := range []struct {
		mode         Mode
		opt          string
		multi, share bool
	}{
		{ModeCPU, "sgd", false, false},
		{ModeCPU, "adagrad", true, true},
		{ModeHybrid, "sgd", true, false},
		{ModeFAE, "adagrad", true, false},
		{ModeFAE, "sgd", false, true},
	} {
		t.Run(fmt.Sprintf("%s/%s/multi=%v/shared=%v", tc.mode, tc.opt, tc.multi, tc.share), func(t *testing.T) {
			d := newFAEData(t, tc.multi, tc.share, 900, 64)
			var runs [2]*Trainer
			var sums [2]*Summary
			var losses [2][]float64
			for i, packing := range []bool{true, false} {
				c := testOptions(tc.mode, 64)
				c.Optimizer = Optimizer(tc.opt)
				c.Unpacked = !packing
				c.Steps = 12
				c.EvalEvery = 5
				tr := mustTrainer(t, c.with(newBackend(t, 2), Data{Layout: d.layout, Test: d.test}))
				if split := tr.place.state().store().split; (split == nil) != packing {
					t.Fatalf("packing %v: the master's store splits per table: %v", packing, split != nil)
				}
				tr.onStep = func(int64, *dataset.Batch, bool) { losses[i] = append(losses[i], tr.st.Interval.LossSum) }
				sums[i] = mustRun(t, tr)
				runs[i] = tr
			}
			p, u := runs[0], runs[1]
			pp, pe, pa := weights(t, p)
			up, ue, ua := weights(t, u)
			if err := sameFloats(up, pp); err != nil {
				t.Errorf("MLP weights: unpacked differs from packed: %v", err)
			}
			if err := sameFloats(ue, pe); err != nil {
				t.Errorf("embedding tables: unpacked differs from packed: %v", err)
			}
			if err := sameFloats(ua, pa); err != nil {
				t.Errorf("embedding accumulators: unpacked differs from packed: %v", err)
			}
			if ph := p.place.state().hot; ph != nil {
				uh := u.place.state().hot
				if err := sameFloats(fetchAll(t, uh.t.Backend(), uh.t.W), fetchAll(t, ph.t.Backend(), ph.t.W)); err != nil {
					t.Errorf("hot table: unpacked differs from packed: %v", err)
				}
			}
			for k := range losses[0] {
				if math.Float64bits(losses[0][k]) != math.Float64bits(losses[1][k]) {
					t.Errorf("step %d: loss sum of the interval %v unpacked, %v packed", k+1, losses[1][k], losses[0][k])
				}
			}
			if a, b := float64(sums[1].TrainLoss), float64(sums[0].TrainLoss); math.Float64bits(a) != math.Float64bits(b) {
				t.Errorf("train loss %v unpacked, %v packed", a, b)
			}
			if a, b := float64(sums[1].TestAUC), float64(sums[0].TestAUC); math.Float64bits(a) != math.Float64bits(b) {
				t.Errorf("test AUC %v unpacked, %v packed", a, b)
			}
		})
	}
}

// TestPrefetchZero runs every mode with prefetch 0 (reading on the training
// goroutine, not overlapped with compute) and checks that it trains the same
// weights as with reading ahead.
func TestPrefetchZero(t *testing.T) {
	d := newFAEData(t, true, false, 900, 64)
	raw := writeData(t, &d.spec, d.rows, t.TempDir(), 256)
	for _, mode := range []Mode{ModeCPU, ModeHybrid, ModeDevice, ModeFAE, ModeArtifact} {
		for _, source := range []string{"layout", "raw"} {
			if source == "raw" && (mode == ModeFAE || mode == ModeArtifact) {
				continue // these modes read the layout
			}
			t.Run(string(mode)+"/"+source, func(t *testing.T) {
				var params [2][]float32
				for i, depth := range []int{0, 3} {
					c := testOptions(mode, 64)
					c.Prefetch = depth
					c.Steps = 20
					data := Data{Layout: d.layout, Test: d.test}
					if source == "raw" {
						data = Data{Train: raw, Test: d.test}
					}
					tr := mustTrainer(t, c.with(newBackend(t, 1), data))
					sum := mustRun(t, tr)
					if sum.Steps != 20 {
						t.Fatalf("prefetch %d: trained %d steps; want 20", depth, sum.Steps)
					}
					params[i], _, _ = weights(t, tr)
				}
				if err := sameFloats(params[0], params[1]); err != nil {
					t.Errorf("prefetch 0 and 3 trained different weights: %v", err)
				}
			})
		}
	}
}
