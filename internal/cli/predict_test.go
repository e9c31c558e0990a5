package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// testdataDir is the repository's testdata/ (real click-log samples).
const testdataDir = "../../testdata"

// TestPredictReproducesTrainAUC trains on generated data, then checks that
// predict and eval on the test split report exactly the run's test AUC,
// and that predict's Parquet holds every test row in order.
func TestPredictReproducesTrainAUC(t *testing.T) {
	dir := t.TempDir()
	data, runDir := filepath.Join(dir, "data"), filepath.Join(dir, "run")
	if code, _, errs := run(t, "gen", "--preset", "demo", "--rows", "6000", "--out", data, "--seed", "5", "-q"); code != 0 {
		t.Fatalf("gen exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, "train", "--data", data, "--mode", "hybrid", "--batch-size", "100", "--out", runDir, "-q"); code != 0 {
		t.Fatalf("train exit %d: %s", code, errs)
	}
	var sum struct {
		TestAUC float64 `json:"test_auc"`
	}
	readJSONFile(t, filepath.Join(runDir, "summary.json"), &sum)

	out := filepath.Join(dir, "scores.parquet")
	code, stdout, errs := run(t, "predict", "--run", runDir, "--data", data, "--out", out, "--json")
	if code != 0 {
		t.Fatalf("predict exit %d: %s", code, errs)
	}
	var res scoreResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("predict --json: %v\n%s", err, stdout)
	}
	if float64(res.AUC) != sum.TestAUC {
		t.Errorf("predict AUC %v; train's test AUC %v", res.AUC, sum.TestAUC)
	}
	spec := dataset.Spec{Train: out, Label: "label", Dense: []string{"score"}}
	ds, err := dataset.Open(&spec, out)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Rows() != res.Rows || res.Rows != 600 {
		t.Errorf("scores file has %d rows, predict reported %d; want 600", ds.Rows(), res.Rows)
	}

	code, stdout, errs = run(t, "eval", "--run", runDir, "--data", data, "--json")
	if code != 0 {
		t.Fatalf("eval exit %d: %s", code, errs)
	}
	var ev scoreResult
	if err := json.Unmarshal([]byte(stdout), &ev); err != nil {
		t.Fatal(err)
	}
	if float64(ev.AUC) != sum.TestAUC || len(ev.Calibration.Bins) != 10 {
		t.Errorf("eval AUC %v with %d bins; want %v and 10", ev.AUC, len(ev.Calibration.Bins), sum.TestAUC)
	}
	// Data with other tables is refused as bad data.
	other := filepath.Join(dir, "other")
	if code, _, errs := run(t, "gen", "--preset", "demo", "--rows", "3000", "--out", other, "--seed", "5", "--scale", "0.5", "-q"); code != 0 {
		t.Fatalf("gen exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, "eval", "--run", runDir, "--data", other); code != exitBadData || !strings.Contains(errs, "trained on") {
		t.Errorf("eval on other tables: exit %d, %q; want %d", code, errs, exitBadData)
	}
}

// TestPredictRawText converts a real Criteo sample with reindexed IDs,
// trains on it, and scores its raw text with the run's saved mapping:
// the scores must equal those of the converted Parquet.
func TestPredictRawText(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(testdataDir, "criteo-1tb-head1000.tsv")
	data, runDir := filepath.Join(dir, "criteo"), filepath.Join(dir, "run")
	if code, _, errs := run(t, "convert", "--format", "criteo", "--in", text, "--test-in", text, "--ids", "reindex", "--out", data, "-q"); code != 0 {
		t.Fatalf("convert exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, "train", "--data", data, "--mode", "cpu", "--batch-size", "64", "--out", runDir, "-q"); code != 0 {
		t.Fatalf("train exit %d: %s", code, errs)
	}
	_, a, errs := run(t, "eval", "--run", runDir, "--data", data, "--json")
	code, b, errs2 := run(t, "eval", "--run", runDir, "--data", text, "--format", "criteo", "--json")
	if code != 0 {
		t.Fatalf("eval on raw text exit %d: %s %s", code, errs, errs2)
	}
	var ra, rb scoreResult
	if err := json.Unmarshal([]byte(a), &ra); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &rb); err != nil {
		t.Fatal(err)
	}
	if ra.Rows != 1000 || ra.AUC != rb.AUC || ra.LogLoss != rb.LogLoss {
		t.Errorf("raw text: %d rows AUC %v log loss %v; converted: %d rows AUC %v log loss %v", rb.Rows, rb.AUC, rb.LogLoss, ra.Rows, ra.AUC, ra.LogLoss)
	}
	if code, _, _ := run(t, "eval", "--run", runDir, "--data", text, "--format", "avazu"); code != exitUsage {
		t.Errorf("eval --format avazu on a criteo run: exit %d; want %d", code, exitUsage)
	}
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestPredictBadCheckpoint checks that a damaged checkpoint is bad data
// (exit 3) naming the file, and that a missing run is a usage error.
func TestPredictBadCheckpoint(t *testing.T) {
	dir := t.TempDir()
	data, runDir := filepath.Join(dir, "data"), filepath.Join(dir, "run")
	if code, _, errs := run(t, "gen", "--preset", "demo", "--rows", "3000", "--out", data, "--seed", "5", "-q"); code != 0 {
		t.Fatalf("gen exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, "train", "--data", data, "--mode", "cpu", "--out", runDir, "-q"); code != 0 {
		t.Fatalf("train exit %d: %s", code, errs)
	}
	ck := filepath.Join(runDir, "checkpoint.bin")
	raw, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	raw[100] ^= 0x40
	if err := os.WriteFile(ck, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "eval", "--run", runDir, "--data", data)
	if code != exitBadData || !strings.Contains(errs, "checkpoint.bin") {
		t.Errorf("eval with a flipped bit in the checkpoint: exit %d, %q; want %d naming the file", code, errs, exitBadData)
	}
	if code, _, _ := run(t, "predict", "--run", filepath.Join(dir, "none"), "--data", data, "--out", filepath.Join(dir, "s.parquet")); code != exitUsage {
		t.Errorf("predict with a missing run: exit %d; want %d", code, exitUsage)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.parquet")); err == nil {
		t.Error("a failed predict left its output file")
	}
}
