package train

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestValidationBestAndEarlyStop trains with a validation set evaluated
// every few steps: the best log loss and its step match the recorded
// evaluations, best.bin is written, and a learning rate high enough to
// make the loss worsen stops the run early with the best model kept.
func TestValidationBestAndEarlyStop(t *testing.T) {
	d := newFAEData(t, false, false, 1500, 64)
	be := newBackend(t, 2)
	for _, tc := range []struct {
		name      string
		lr        float64
		earlyStop int
	}{
		{"plain", 0.1, 0},
		{"diverging", 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testOptions(ModeCPU, 64)
			c.Epochs = 3
			c.EvalEvery = 5
			c.LR.Base = tc.lr
			c.EarlyStop = tc.earlyStop
			dir := t.TempDir()
			valid := writeData(t, &d.spec, d.rows[:2], t.TempDir(), 100)
			tr := mustTrainer(t, c.with(be, Data{Train: writeData(t, &d.spec, d.rows, t.TempDir(), 100), Valid: valid, Test: d.test}).in(dir))
			sum := mustRun(t, tr)
			if len(sum.Valids) == 0 || sum.BestValidLogLoss == nil {
				t.Fatalf("no validation results: %+v", sum)
			}
			best, step := sum.Valids[0].LogLoss, sum.Valids[0].Step
			for _, v := range sum.Valids[1:] {
				if v.LogLoss < best {
					best, step = v.LogLoss, v.Step
				}
			}
			if *sum.BestValidLogLoss != best || sum.BestStep != step {
				t.Errorf("best %v at step %d; the evaluations give %v at %d", *sum.BestValidLogLoss, sum.BestStep, best, step)
			}
			if _, err := os.Stat(filepath.Join(dir, BestFile)); err != nil {
				t.Errorf("no best model: %v", err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			var onDisk Summary
			if err := json.Unmarshal(raw, &onDisk); err != nil || onDisk.BestStep != sum.BestStep {
				t.Errorf("summary.json best step %d (%v); want %d", onDisk.BestStep, err, sum.BestStep)
			}
			full := int64(3 * tr.StepsPerEpoch())
			if tc.earlyStop == 0 {
				if sum.StoppedEarly || sum.Steps != full {
					t.Errorf("trained %d of %d steps, stopped early %v; want all", sum.Steps, full, sum.StoppedEarly)
				}
				return
			}
			if !sum.StoppedEarly || sum.Steps >= full {
				t.Fatalf("trained %d of %d steps, stopped early %v; want an early stop", sum.Steps, full, sum.StoppedEarly)
			}
			n := len(sum.Valids)
			if n < tc.earlyStop+1 || sum.Valids[n-1].Step != sum.Steps {
				t.Errorf("%d validations, the last at step %d of %d", n, sum.Valids[n-1].Step, sum.Steps)
			}
			for _, v := range sum.Valids[n-tc.earlyStop:] {
				if v.LogLoss < best || v.Step == sum.BestStep {
					t.Errorf("validation at step %d (log loss %v) counted as no better than %v", v.Step, v.LogLoss, best)
				}
			}
		})
	}
}
