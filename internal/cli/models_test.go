package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainModels trains every model for a few steps with a validation
// split from the CLI, and checks the usage errors of the model and
// optimizer settings.
func TestTrainModels(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ctx := context.Background()
	genDemo(t, data, 12000, 7)
	valid := filepath.Join(data, "test")
	for _, arch := range []string{"dcn", "dlrm", "wdl", "deepfm"} {
		run := filepath.Join(dir, "run-"+arch)
		code, _, errs := runTrainCLI(t, ctx, "train", "--data", data, "--arch", arch, "--mode", "cpu", "--batch-size", "128",
			"--steps", "60", "--eval-every", "20", "--valid", valid, "--out", run, "--quiet")
		if code != 0 {
			t.Fatalf("%s: train exit %d: %s", arch, code, errs)
		}
		s := readSummary(t, run)
		if auc, ok := s["test_auc"].(float64); !ok || auc < 0.6 {
			t.Errorf("%s: test AUC %v after 60 steps; want above 0.6", arch, s["test_auc"])
		}
		if v, ok := s["valids"].([]any); !ok || len(v) != 3 {
			t.Errorf("%s: validations %v; want 3 (steps 20, 40, 60)", arch, s["valids"])
		}
		if s["best_step"] == nil || s["best_valid_logloss"] == nil {
			t.Errorf("%s: summary lacks the best validation step: %v", arch, s)
		}
		if _, err := os.Stat(filepath.Join(run, "best.bin")); err != nil {
			t.Errorf("%s: no best model: %v", arch, err)
		}
	}
	for _, bad := range [][]string{
		{"--arch", "xdeepfm"},
		{"--optimizer", "adam"},
		{"--dense-optimizer", "lamb"},
		{"--early-stop", "2"},
		{"--weight-decay", "-1"},
	} {
		args := append([]string{"train", "--data", data, "--mode", "cpu", "--steps", "2", "--out", filepath.Join(dir, "bad"), "--quiet"}, bad...)
		if code, _, errs := runTrainCLI(t, ctx, args...); code != exitUsage {
			t.Errorf("train %v: exit %d (%s); want %d", bad, code, errs, exitUsage)
		}
	}
}

// TestConfigListFromEnv sets a list setting from the environment, in both
// spellings a shell user would try, and rejects a list that is not one.
func TestConfigListFromEnv(t *testing.T) {
	for _, v := range []string{"512,256,1", "[512, 256, 1]"} {
		t.Setenv("PICASSO_MODEL_DEEP_MLP", v)
		code, out, errs := runTrainCLI(t, context.Background(), "config", "show")
		if code != 0 || !strings.Contains(out, "deep_mlp:\n    - 512\n    - 256\n    - 1\n") {
			t.Errorf("PICASSO_MODEL_DEEP_MLP=%q: exit %d (%s):\n%s", v, code, errs, out)
		}
	}
	t.Setenv("PICASSO_MODEL_DEEP_MLP", "a,1")
	if code, _, errs := runTrainCLI(t, context.Background(), "config", "show"); code != exitUsage || !strings.Contains(errs, "model.deep_mlp") {
		t.Errorf("PICASSO_MODEL_DEEP_MLP=a,1: exit %d (%s); want %d naming the key", code, errs, exitUsage)
	}
}

// TestTrainLayoutWithValid: --valid is used when --data is a classify
// layout (the layout's data section replaced it, so no validation ran and
// --early-stop failed for want of validation data).
func TestTrainLayoutWithValid(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	genDemo(t, data, 8000, 9)
	prof := filepath.Join(data, "profile.json")
	if code, _, errs := run(t, "profile", "--data", data, "--out", prof, "--budget", "4MiB", "-q"); code != 0 {
		t.Fatalf("profile: exit %d: %s", code, errs)
	}
	fae := filepath.Join(data, "fae")
	if code, _, errs := run(t, "classify", "--data", data, "--profile", prof, "--out", fae, "-q"); code != 0 {
		t.Fatalf("classify: exit %d: %s", code, errs)
	}
	out := filepath.Join(dir, "run")
	code, _, errs := runTrainCLI(t, context.Background(), "train", "--data", fae, "--mode", "fae", "--steps", "40", "--eval-every", "20",
		"--valid", filepath.Join(data, "test"), "--early-stop", "5", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("train on a layout with --valid: exit %d: %s", code, errs)
	}
	if v, ok := readSummary(t, out)["valids"].([]any); !ok || len(v) != 2 {
		t.Errorf("validations %v; want 2 (steps 20 and 40)", readSummary(t, out)["valids"])
	}
}
