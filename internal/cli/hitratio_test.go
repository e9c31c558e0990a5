package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHybridHashCLI trains mode hybridhash on raw generated data with a
// host budget far below its tables (rows spill to disk), resumes it, and
// runs hitratio on the same data.
func TestHybridHashCLI(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ctx := context.Background()
	genDemo(t, data, 12000, 5)
	run := filepath.Join(dir, "run-hh")
	code, out, errs := runTrainCLI(t, ctx, "train", "--data", data, "--mode", "hybridhash", "--batch-size", "128", "--steps", "40",
		"--hh-device-budget", "256KiB", "--hh-host-budget", "64KiB", "--hh-warmup", "5", "--hh-flush-iters", "10", "--out", run, "--quiet")
	if code != 0 {
		t.Fatalf("train exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "hybridhash: hit ratio") {
		t.Errorf("train output lacks the hit ratio:\n%s", out)
	}
	s := readSummary(t, run)
	h, ok := s["hybridhash"].(map[string]any)
	if !ok || h["disk_bytes_written"].(float64) == 0 || h["disk_only_rows"].(float64) == 0 {
		t.Fatalf("summary's hybridhash figures %v; want disk traffic and rows on disk only", s["hybridhash"])
	}
	if code, _, errs := runTrainCLI(t, ctx, "train", "--resume", run, "--steps", "60", "--quiet"); code != 0 {
		t.Fatalf("train --resume exit %d: %s", code, errs)
	}
	if s := readSummary(t, run); s["steps"].(float64) != 60 {
		t.Errorf("resumed run ended at step %v; want 60", s["steps"])
	}
	table := filepath.Join(dir, "hit.json")
	code, out, errs = runTrainCLI(t, ctx, "hitratio", "--data", data, "--batch-size", "128", "--warmup", "5", "--flush-iters", "10",
		"--fractions", "0.01,0.1", "--out", table)
	if code != 0 {
		t.Fatalf("hitratio exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "oracle") {
		t.Errorf("hitratio output lacks the oracle column:\n%s", out)
	}
	var res struct {
		Rows []struct {
			HitRatio       float64 `json:"hit_ratio"`
			OracleHitRatio float64 `json:"oracle_hit_ratio"`
		} `json:"rows"`
	}
	b, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 {
		t.Fatalf("hitratio wrote %d rows; want 2", len(res.Rows))
	}
	// --json prints that table; the batch size comes from the
	// configuration as train's does (here PICASSO_TRAIN_BATCH_SIZE).
	t.Setenv("PICASSO_TRAIN_BATCH_SIZE", "256")
	code, out, errs = runTrainCLI(t, ctx, "hitratio", "--data", data, "--warmup", "5", "--flush-iters", "10", "--fractions", "0.01,0.1", "--json")
	var js struct {
		Steps int64 `json:"steps"`
		Rows  []any `json:"rows"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &js) != nil || len(js.Rows) != 2 {
		t.Fatalf("hitratio --json: exit %d, stdout %q, stderr %q; want the table as JSON", code, out, errs)
	}
	var txt struct {
		Steps int64 `json:"steps"`
	}
	if err := json.Unmarshal(b, &txt); err != nil || js.Steps*2 != txt.Steps && js.Steps*2 != txt.Steps+1 {
		t.Errorf("hitratio at PICASSO_TRAIN_BATCH_SIZE=256: %d mini-batches; at --batch-size 128: %d; want half", js.Steps, txt.Steps)
	}
	// A trace no longer than the warm-up measures nothing, and says so.
	code, _, errs = runTrainCLI(t, ctx, "hitratio", "--data", data, "--warmup", "100000", "--fractions", "0.1", "--json")
	if code != 0 || !strings.Contains(errs, "nothing was measured") {
		t.Errorf("hitratio with a warm-up past the trace: exit %d, stderr %q; want a warning", code, errs)
	}
}
