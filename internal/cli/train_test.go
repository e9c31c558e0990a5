package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// runTrainCLI executes picasso in-process with ctx, so tests can interrupt it.
func runTrainCLI(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Execute(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestTrainHelpDocumentsEveryFlag(t *testing.T) {
	code, out, errs := runTrainCLI(t, context.Background(), "train", "--help")
	if code != 0 {
		t.Fatalf("train --help exit %d: %s", code, errs)
	}
	cmd := newTrainCmd(&globals{})
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(out, "--"+f.Name) || f.Usage == "" {
			t.Errorf("train --help does not document --%s", f.Name)
		}
	})
	for _, mode := range []string{"fae", "artifact", "hybrid", "device", "cpu"} {
		if !strings.Contains(out, mode) {
			t.Errorf("train --help does not describe mode %s", mode)
		}
	}
}

func readSummary(t *testing.T, run string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// genDemo generates rows rows of the demo preset into out.
func genDemo(t *testing.T, out string, rows, seed int) {
	t.Helper()
	if code, _, errs := runTrainCLI(t, context.Background(), "gen", "--preset", "demo", "--rows", strconv.Itoa(rows), "--out", out,
		"--seed", strconv.Itoa(seed)); code != 0 {
		t.Fatalf("gen exit %d: %s", code, errs)
	}
}

// TestTrainEndToEnd generates demo data, trains in cpu mode, resumes the run
// to more steps, and trains fae on a classified layout of the same data.
func TestTrainEndToEnd(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ctx := context.Background()
	genDemo(t, data, 12000, 5)
	run := filepath.Join(dir, "run-cpu")
	opt := writeFile(t, filepath.Join(dir, "adagrad.yaml"), "train:\n  optimizer: adagrad\n  learning_rate: 0.05\n")
	code, out, errs := runTrainCLI(t, ctx, "train", "--data", data, "--config", opt, "--mode", "cpu", "--batch-size", "128", "--steps", "40",
		"--eval-every", "20", "--out", run, "--quiet")
	if code != 0 {
		t.Fatalf("train exit %d: %s", code, errs)
	}
	for _, want := range []string{"test AUC", "samples/s", "moved"} {
		if !strings.Contains(out, want) {
			t.Errorf("train output lacks %q:\n%s", want, out)
		}
	}
	s := readSummary(t, run)
	if s["steps"].(float64) != 40 || s["mode"] != "cpu" {
		t.Errorf("summary: steps %v mode %v; want 40 cpu", s["steps"], s["mode"])
	}
	if auc, ok := s["test_auc"].(float64); !ok || auc < 0.55 {
		t.Errorf("test AUC %v after 40 steps; want above 0.55", s["test_auc"])
	}
	for _, f := range []string{"config.yaml", "metrics.jsonl", "checkpoint.bin"} {
		if _, err := os.Stat(filepath.Join(run, f)); err != nil {
			t.Errorf("run directory lacks %s", f)
		}
	}
	// Resume to step 60: the saved config and data paths are reused.
	if code, _, errs := runTrainCLI(t, ctx, "train", "--resume", run, "--steps", "60", "--quiet"); code != 0 {
		t.Fatalf("train --resume exit %d: %s", code, errs)
	}
	if s := readSummary(t, run); s["steps"].(float64) != 60 {
		t.Errorf("resumed run ended at step %v; want 60", s["steps"])
	}
	// Nothing left to do is a usage error.
	if code, _, _ := runTrainCLI(t, ctx, "train", "--resume", run, "--quiet"); code != exitUsage {
		t.Errorf("resume of a finished run: exit %d; want %d", code, exitUsage)
	}

	// fae on a classify layout of the same data.
	cfg := writeFile(t, filepath.Join(dir, "fae.yaml"), "fae:\n  budget: 512KiB\n  small_table: 16KiB\n")
	prof := filepath.Join(data, "profile.json")
	if code, _, errs := runTrainCLI(t, ctx, "profile", "--data", data, "--config", cfg, "--out", prof); code != 0 {
		t.Fatalf("profile exit %d: %s", code, errs)
	}
	layout := filepath.Join(dir, "fae")
	if code, _, errs := runTrainCLI(t, ctx, "classify", "--data", data, "--config", cfg, "--profile", prof, "--out", layout, "--batch-size", "128"); code != 0 {
		t.Fatalf("classify exit %d: %s", code, errs)
	}
	faeRun := filepath.Join(dir, "run-fae")
	code, out, errs = runTrainCLI(t, ctx, "train", "--data", layout, "--batch-size", "128", "--epochs", "1", "--out", faeRun, "--quiet")
	if code != 0 {
		t.Fatalf("train fae exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "swaps") || !strings.Contains(out, "hot inputs") {
		t.Errorf("fae output lacks swaps or hot inputs:\n%s", out)
	}
	s = readSummary(t, faeRun)
	if s["mode"] != "fae" || s["hot_input_share"].(float64) <= 0 || s["swaps"].(float64) < 1 {
		t.Errorf("fae summary: mode %v, hot share %v, swaps %v", s["mode"], s["hot_input_share"], s["swaps"])
	}
	// A mode that needs a layout, given raw data without one, is a usage error.
	if code, _, errs := runTrainCLI(t, ctx, "train", "--data", data, "--mode", "artifact", "--out", filepath.Join(dir, "x"), "--quiet"); code != exitUsage {
		t.Errorf("artifact without a layout: exit %d (%s); want %d", code, errs, exitUsage)
	}
}

// TestResumeLegacyAdagradEps resumes a run whose config.yaml was saved
// before train.adagrad_eps existed: it must go on with the eps of that
// time (1e-8), so that the run ends as it would have uninterrupted, not
// with today's default.
func TestResumeLegacyAdagradEps(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ctx := context.Background()
	genDemo(t, data, 6000, 4)
	if config.Default().Train.AdagradEps == legacyAdagradEps {
		t.Fatal("the default eps is the legacy one: this test cannot tell them apart")
	}
	args := func(out string, steps string, extra ...string) []string {
		return append([]string{"train", "--data", data, "--mode", "cpu", "--batch-size", "64", "--steps", steps,
			"--learning-rate", "0.05", "--out", out, "--quiet"}, extra...)
	}
	whole := filepath.Join(dir, "whole")
	if code, _, errs := runTrainCLI(t, ctx, args(whole, "30", "--adagrad-eps", "1e-8")...); code != 0 {
		t.Fatalf("train exit %d: %s", code, errs)
	}
	today := filepath.Join(dir, "today")
	if code, _, errs := runTrainCLI(t, ctx, args(today, "30")...); code != 0 {
		t.Fatalf("train exit %d: %s", code, errs)
	}
	old := filepath.Join(dir, "old")
	if code, _, errs := runTrainCLI(t, ctx, args(old, "15", "--adagrad-eps", "1e-8")...); code != 0 {
		t.Fatalf("train exit %d: %s", code, errs)
	}
	cfg := filepath.Join(old, "config.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "adagrad_eps") {
			kept = append(kept, line)
		}
	}
	if len(kept) != strings.Count(string(b), "\n") {
		t.Fatalf("config.yaml has no adagrad_eps line to remove:\n%s", b)
	}
	writeFile(t, cfg, strings.Join(kept, "\n"))
	if code, _, errs := runTrainCLI(t, ctx, "train", "--resume", old, "--steps", "30", "--quiet"); code != 0 {
		t.Fatalf("train --resume exit %d: %s", code, errs)
	}
	w, o, d := readSummary(t, whole), readSummary(t, old), readSummary(t, today)
	if o["test_logloss"] != w["test_logloss"] || o["test_auc"] != w["test_auc"] {
		t.Errorf("resumed legacy run: log loss %v, AUC %v; the uninterrupted run at eps 1e-8: %v, %v", o["test_logloss"], o["test_auc"], w["test_logloss"], w["test_auc"])
	}
	if d["test_logloss"] == w["test_logloss"] {
		t.Errorf("today's default eps trained the same log loss %v as 1e-8: the comparison above proves nothing", d["test_logloss"])
	}
}

// TestTrainInterruptWritesCheckpoint cancels a run once it has trained a
// few steps and checks that it stops with the interrupted exit code and a
// checkpoint that a resumed run continues from.
func TestTrainInterruptWritesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	genDemo(t, data, 4000, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := filepath.Join(dir, "run")
	go func() {
		// Cancel once the first metrics line shows that training runs.
		for ctx.Err() == nil {
			if st, err := os.Stat(filepath.Join(run, "metrics.jsonl")); err == nil && st.Size() > 0 {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	code, out, errs := runTrainCLI(t, ctx, "train", "--data", data, "--mode", "hybrid", "--batch-size", "64", "--steps", "100000000",
		"--log-every", "1", "--out", run, "--quiet")
	if code != exitInterrupted {
		t.Fatalf("interrupted train: exit %d (%s); want %d", code, errs, exitInterrupted)
	}
	if !strings.Contains(out, "--resume") {
		t.Errorf("interrupted train does not say how to resume:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(run, "checkpoint.bin")); err != nil {
		t.Fatalf("no checkpoint after the interrupt: %v", err)
	}
	code, _, errs = runTrainCLI(t, context.Background(), "train", "--resume", run, "--steps", "300", "--quiet")
	if code != 0 {
		t.Fatalf("resume exit %d: %s", code, errs)
	}
	if s := readSummary(t, run); s["steps"].(float64) != 300 || s["mode"] != "hybrid" {
		t.Errorf("resumed run: steps %v mode %v; want 300 hybrid", s["steps"], s["mode"])
	}
	want, err := os.ReadFile(filepath.Join(run, train.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	// Killed after its last checkpoint, before its summary: --resume
	// writes the summary, the same but for the time taken.
	if err := os.Remove(filepath.Join(run, train.SummaryFile)); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runTrainCLI(t, context.Background(), "train", "--resume", run, "--quiet")
	if code != 0 {
		t.Fatalf("resume at the last step without a summary: exit %d: %s", code, errs)
	}
	s, w := readSummary(t, run), map[string]any{}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"steps", "test_auc", "test_logloss", "samples"} {
		if fmt.Sprint(s[k]) != fmt.Sprint(w[k]) {
			t.Errorf("summary written on resume: %s = %v; the run's own: %v", k, s[k], w[k])
		}
	}
	if code, _, errs := runTrainCLI(t, context.Background(), "train", "--resume", run, "--quiet"); code != exitUsage || !strings.Contains(errs, "already at step") {
		t.Errorf("resume of a finished run: exit %d, %q; want a usage error", code, errs)
	}
	// A summary of an earlier end (steps 200, the checkpoint at 300) is
	// not this end's: --resume writes the new one.
	w["steps"] = 200.0
	old, _ := json.Marshal(w)
	if err := os.WriteFile(filepath.Join(run, train.SummaryFile), old, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runTrainCLI(t, context.Background(), "train", "--resume", run, "--quiet"); code != 0 {
		t.Fatalf("resume at the last step with an older summary: exit %d: %s", code, errs)
	}
	if s := readSummary(t, run); s["steps"].(float64) != 300 {
		t.Errorf("summary after that resume: steps %v; want 300", s["steps"])
	}
}
