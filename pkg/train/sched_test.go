package train

import (
	"cmp"
	"math"
	"testing"
)

func TestLRSchedule(t *testing.T) {
	s := LRSchedule{Base: 1, WarmupSteps: 4, DecayStart: 10, DecaySteps: 4}
	tests := []struct {
		step int64
		want float64
	}{
		{1, 0.25}, {2, 0.5}, {3, 0.75}, {4, 1}, {9, 1},
		{10, 1}, {11, 0.5625}, {12, 0.25}, {13, 0.0625}, {14, 0}, {100, 0},
	}
	for _, tt := range tests {
		if got := s.Rate(tt.step); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Rate(%d) = %v; want %v", tt.step, got, tt.want)
		}
	}
	flat := LRSchedule{Base: 0.1}
	for _, step := range []int64{1, 2, 1000} {
		if got := flat.Rate(step); got != 0.1 {
			t.Errorf("no warm-up or decay: Rate(%d) = %v; want 0.1", step, got)
		}
	}
}

// TestLRDecayFraction checks the decay over the last fraction of a run: it
// starts where the fraction says, the last step still learns, and a
// schedule with decay steps of its own keeps them.
func TestLRDecayFraction(t *testing.T) {
	s := LRSchedule{Base: 1, WarmupSteps: 2}.decayed(0.25, 16)
	if s.DecayStart != 13 || s.DecaySteps != 4 {
		t.Fatalf("decay over the last quarter of 16 steps: start %d, steps %d; want 13, 4", s.DecayStart, s.DecaySteps)
	}
	for step, want := range map[int64]float64{12: 1, 13: 1, 14: 0.5625, 16: 0.0625, 17: 0} {
		if got := s.Rate(step); math.Abs(got-want) > 1e-12 {
			t.Errorf("Rate(%d) = %v; want %v", step, got, want)
		}
	}
	if got := (LRSchedule{Base: 1}).decayed(0.3, 10); got.DecayStart != 8 || got.DecaySteps != 3 {
		t.Errorf("0.3 of 10 steps: start %d, steps %d; want 8, 3 (rounded up)", got.DecayStart, got.DecaySteps)
	}
	own := LRSchedule{Base: 1, DecayStart: 5, DecaySteps: 2}
	if got := own.decayed(0.5, 100); got != own {
		t.Errorf("a schedule with its own decay became %+v", got)
	}
	if got := (LRSchedule{Base: 1}).decayed(0, 100); got.DecaySteps != 0 {
		t.Errorf("fraction 0 decays: %+v", got)
	}
}

func TestSchedulerScripted(t *testing.T) {
	opts := SchedulerOptions{InitialRate: 50, MinRate: 1, MaxRate: 100, Patience: 4}
	tests := []struct {
		name    string
		losses  []float64
		rates   []float64 // rate after each swap
		actions []string
	}{
		{
			name:    "rise halves down to the floor",
			losses:  []float64{1, 2, 3, 4, 5, 6, 7, 8},
			rates:   []float64{50, 25, 12.5, 6.25, 3.125, 1.5625, 1, 1},
			actions: []string{"first", "halve", "halve", "halve", "halve", "halve", "halve", "halve"},
		},
		{
			name:    "four falls double, up to the ceiling",
			losses:  []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0.5, 0.25, 0.1},
			rates:   []float64{50, 50, 50, 50, 100, 100, 100, 100, 100, 100, 100, 100, 100},
			actions: []string{"first", "keep", "keep", "keep", "double", "keep", "keep", "keep", "double", "keep", "keep", "keep", "double"},
		},
		{
			name:    "a rise or a tie ends a run of falls",
			losses:  []float64{10, 9, 8, 8.5, 8, 7, 7, 6, 5, 4, 3},
			rates:   []float64{50, 50, 50, 25, 25, 25, 25, 25, 25, 25, 50},
			actions: []string{"first", "keep", "keep", "halve", "keep", "keep", "keep", "keep", "keep", "keep", "double"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewScheduler(opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range tt.losses {
				d := s.Observe(l)
				if d.RateAfter != tt.rates[i] || d.Action != tt.actions[i] || s.Rate() != tt.rates[i] {
					t.Fatalf("swap %d (loss %v): rate %v action %q; want %v %q", i+1, l, d.RateAfter, d.Action, tt.rates[i], tt.actions[i])
				}
				if d.Swap != i+1 {
					t.Fatalf("swap number %d; want %d", d.Swap, i+1)
				}
			}
		})
	}
}

func TestSchedulerStateRoundTrip(t *testing.T) {
	opts := SchedulerOptions{InitialRate: 50, MinRate: 1, MaxRate: 100, Patience: 2}
	a, _ := NewScheduler(opts)
	b, _ := NewScheduler(opts)
	a.Observe(3)
	a.Observe(2)
	b.SetState(a.State())
	for _, l := range []float64{1, 0.5, 0.7} {
		da, db := a.Observe(l), b.Observe(l)
		if da != db {
			t.Fatalf("restored scheduler decided %+v; original %+v", db, da)
		}
	}
}

func TestSchedulerValidate(t *testing.T) {
	for _, o := range []SchedulerOptions{
		{InitialRate: 50, MinRate: 0, MaxRate: 100, Patience: 4},
		{InitialRate: 50, MinRate: 1, MaxRate: 101, Patience: 4},
		{InitialRate: 0.5, MinRate: 1, MaxRate: 100, Patience: 4},
		{InitialRate: 50, MinRate: 1, MaxRate: 100, Patience: 0},
	} {
		if _, err := NewScheduler(o); err == nil {
			t.Errorf("NewScheduler(%+v) succeeded; want an error", o)
		}
	}
}

func TestPhaseLen(t *testing.T) {
	tests := []struct {
		rate  float64
		total int
		want  int
	}{
		{50, 10, 5}, {50, 11, 6}, {100, 7, 7}, {1, 300, 3}, {1, 5, 1}, {12.5, 8, 1}, {3.125, 1000, 32}, {50, 0, 0},
	}
	for _, tt := range tests {
		if got := phaseLen(tt.rate, tt.total); got != tt.want {
			t.Errorf("phaseLen(%v, %d) = %d; want %d", tt.rate, tt.total, got, tt.want)
		}
	}
}

// TestDecayFractionReachesTrainer checks that a trainer decays both rates
// over the last fraction of the steps it will run, counted from the data.
func TestDecayFractionReachesTrainer(t *testing.T) {
	d := newFAEData(t, false, false, 640, 64)
	o := testOptions(ModeCPU, 64)
	o.Epochs = 2
	o.DenseOptimizer, o.DenseLR = OptAdam, LRSchedule{Base: 0.01}
	o.DecayFraction = 0.25
	tr := mustTrainer(t, o.with(newBackend(t, 1), Data{Layout: d.layout, Test: d.test}))
	if tr.total < 8 {
		t.Fatalf("%d steps; the test needs more", tr.total)
	}
	n := int64(math.Ceil(0.25 * float64(tr.total)))
	for name, s := range map[string]LRSchedule{"embeddings": tr.lr, "MLPs": tr.denseLR} {
		if s.DecayStart != tr.total-n+1 || s.DecaySteps != n {
			t.Errorf("%s: decay from step %d over %d; want from %d over %d (the last quarter of %d)", name, s.DecayStart, s.DecaySteps, tr.total-n+1, n, tr.total)
		}
	}
	if tr.denseLR.Base != 0.01 || tr.lr.Base != o.LR.Base {
		t.Errorf("base rates changed: %v, %v", tr.lr.Base, tr.denseLR.Base)
	}
}

// TestAdagradEpsReachesStep trains one Adagrad step at two values of
// AdagradEps and checks each touched row against the row-wise update
// row -= lr·g/(sqrt(acc)+eps): after one step acc = mean(g²), so the
// change has the root mean square lr·s/(s+eps), s = sqrt(acc).
func TestAdagradEpsReachesStep(t *testing.T) {
	d := newFAEData(t, false, false, 640, 64)
	for _, eps := range []float64{0, 2e-4} {
		o := testOptions(ModeCPU, 64)
		o.Optimizer, o.Steps, o.AdagradEps = OptAdagrad, 1, eps
		tr := mustTrainer(t, o.with(newBackend(t, 1), Data{Layout: d.layout, Test: d.test}))
		_, before, _ := weights(t, tr)
		mustRun(t, tr)
		_, after, acc := weights(t, tr)
		dim := o.Model.Dim
		if len(acc) != len(after)/dim {
			t.Fatalf("%d accumulators for %d rows", len(acc), len(after)/dim)
		}
		want := cmp.Or(eps, adagradEps)
		touched := 0
		for r, a := range acc {
			if a == 0 {
				continue
			}
			touched++
			var ss float64
			for j := r * dim; j < (r+1)*dim; j++ {
				dv := float64(after[j] - before[j])
				ss += dv * dv
			}
			s := math.Sqrt(float64(a))
			got, exp := math.Sqrt(ss/float64(dim)), o.LR.Base*s/(s+want)
			if math.Abs(got-exp) > 1e-3*exp+1e-7 {
				t.Fatalf("eps %v: row %d moved by %.6g (rms); want lr·s/(s+eps) = %.6g (s = %.3g)", eps, r, got, exp, s)
			}
		}
		if touched == 0 {
			t.Fatalf("eps %v: no row was updated", eps)
		}
	}
}
