package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/picasso-ctr/picasso/pkg/bench/benchtest"
	"github.com/picasso-ctr/picasso/pkg/config"
)

func TestBenchHelpDocumentsEveryFlag(t *testing.T) {
	code, out, errs := runTrainCLI(t, context.Background(), "bench", "--help")
	if code != 0 {
		t.Fatalf("bench --help exit %d: %s", code, errs)
	}
	cmd := newBenchCmd(&globals{})
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(out, "--"+f.Name) || f.Usage == "" {
			t.Errorf("bench --help does not document --%s", f.Name)
		}
	})
	for _, want := range []string{"packing", "interleaving", "report.json", "benchstat", "--prep"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench --help does not mention %s", want)
		}
	}
}

func TestBenchUsageErrors(t *testing.T) {
	dir := t.TempDir()
	layout := filepath.Join(dir, "layout")
	if err := os.MkdirAll(layout, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(layout, "manifest.json"), "{}")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--out", dir}, "--data"},
		{[]string{"bench", "--data", dir, "--out", dir, "--steps", "5", "--epochs", "1"}, "not both"},
		{[]string{"bench", "--data", dir, "--out", dir, "--repeat", "0"}, "--repeat"},
		{[]string{"bench", "--data", layout, "--out", dir}, "layout"},
	} {
		code, _, errs := run(t, tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errs, exitUsage, tc.want)
		}
	}
}

func TestBenchVariants(t *testing.T) {
	c := config.Default()
	opts := &benchOptions{modes: []string{"fae", "hybrid"}, ablate: []string{"interleaving"}, ablateModes: []string{"fae", "hybrid"}}
	vs, abl, err := benchVariants(&c, opts)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vs {
		names = append(names, v.Name+":"+v.Config.Train.Mode.String())
	}
	want := []string{"fae:fae", "hybrid:hybrid", "fae-no-interleaving:fae", "hybrid-no-interleaving:hybrid"}
	if !reflect.DeepEqual(names, want) || !reflect.DeepEqual(abl, []string{"interleaving"}) {
		t.Errorf("variants %v, ablations %v; want %v, [interleaving]", names, abl, want)
	}
	for _, bad := range []*benchOptions{
		{modes: []string{"fae", "gpu"}},
		{modes: []string{"fae", "fae"}},
		{modes: []string{"fae"}, ablate: []string{"caching"}, ablateModes: []string{"fae"}},
		{modes: []string{"fae"}, ablate: []string{"interleaving"}, ablateModes: []string{"cpu"}},
	} {
		if _, _, err := benchVariants(&c, bad); err == nil {
			t.Errorf("benchVariants(modes %v, ablate %v on %v): no error", bad.modes, bad.ablate, bad.ablateModes)
		}
	}
	vs, _, err = benchVariants(&c, &benchOptions{modes: []string{"fae"}, ablate: []string{"packing"}, ablateModes: []string{"fae"}})
	switch {
	case err != nil:
		t.Errorf("packing ablation: %v", err)
	case len(vs) != 2 || vs[1].Name != "fae-no-packing" || vs[1].Setting != "train.packing=false" || vs[1].Config.Train.Packing:
		t.Errorf("packing ablation gave %+v; want fae and fae-no-packing (train.packing=false)", vs)
	}
}

type benchReport struct {
	Environment map[string]any   `json:"environment"`
	Setup       map[string]any   `json:"setup"`
	Modes       []map[string]any `json:"modes"`
	PhaseCheck  map[string]any   `json:"phase_check"`
	Determin    bool             `json:"deterministic"`
}

func readBenchReport(t *testing.T, dir string) benchReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r benchReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	return r
}

var goBenchLine = regexp.MustCompile(`^BenchmarkTrain/mode=([a-z-]+?)(-\d+)?\t\s*(\d+)\t\s*\d+ ns/op\t\s*[0-9.]+ samples/s`)

// TestBenchEndToEnd benches four modes and one ablation for one epoch of a
// small demo dataset, twice, and checks the report, the charts, the
// benchmark lines, and that the second bench reuses the preparation and
// reproduces bytes and AUC exactly.
func TestBenchEndToEnd(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if code, _, errs := run(t, "gen", "--preset", "demo", "--rows", "12000", "--out", data, "--seed", "2"); code != 0 {
		t.Fatalf("gen exit %d: %s", code, errs)
	}
	cfg := writeFile(t, filepath.Join(dir, "bench.yaml"), "model:\n  embedding_dim: 8\n  bottom_mlp: [16, 8]\n  top_mlp: [16, 1]\n"+
		"fae:\n  budget: 256KiB\n  small_table: 16KiB\ntrain:\n  optimizer: sgd\n  learning_rate: 0.1\n")
	out := filepath.Join(dir, "bench")
	args := []string{"bench", "--data", data, "--config", cfg, "--out", out, "--batch-size", "128", "--epochs", "1",
		"--modes", "fae,hybrid,cpu,artifact", "--ablate", "interleaving", "--test-rows", "600", "--quiet"}
	code, stdout, errs := run(t, append(args, "--repeat", "2")...)
	if code != 0 {
		t.Fatalf("bench exit %d: %s", code, errs)
	}

	// Benchmark lines: one per variant and repeat, N = steps.
	var lines int
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "Benchmark") {
			if !goBenchLine.MatchString(l) {
				t.Errorf("benchmark line not in Go's format: %q", l)
			}
			lines++
		}
	}
	if lines != 10 {
		t.Errorf("%d benchmark lines on stdout; want 10 (5 variants × 2 repeats):\n%s", lines, stdout)
	}
	if b, err := os.ReadFile(filepath.Join(out, "bench.txt")); err != nil || !strings.Contains(string(b), "BenchmarkTrain/mode=fae-no-interleaving") {
		t.Errorf("bench.txt: %v; want the benchmark lines", err)
	}

	r := readBenchReport(t, out)
	names := []string{"fae", "hybrid", "cpu", "artifact", "fae-no-interleaving"}
	if len(r.Modes) != len(names) {
		t.Fatalf("report.json has %d modes; want %v", len(r.Modes), names)
	}
	steps := r.Setup["steps"].(float64)
	if spe := r.Setup["steps_per_epoch"].(float64); steps != spe || steps < 50 {
		t.Errorf("setup: %v steps, %v per epoch; want one epoch of at least 50 steps", steps, spe)
	}
	for i, m := range r.Modes {
		if m["name"] != names[i] {
			t.Errorf("modes[%d] is %v; want %s", i, m["name"], names[i])
		}
		for _, k := range []string{"mode", "steps", "samples", "seconds", "samples_per_s", "phase_seconds", "bytes_h2d", "bytes_d2h",
			"test_auc", "test_logloss", "oracle_auc", "evals", "hot_input_share", "speedup_vs_hybrid", "bytes_ratio_vs_hybrid", "runs"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s lacks %q", names[i], k)
			}
		}
		if m["steps"].(float64) != steps || len(m["runs"].([]any)) != 2 {
			t.Errorf("%s: %v steps, %d runs; want %v and 2", names[i], m["steps"], len(m["runs"].([]any)), steps)
		}
		if auc, ok := m["test_auc"].(float64); !ok || auc < 0.54 {
			t.Errorf("%s test AUC %v after one epoch; want above 0.54", names[i], m["test_auc"])
		}
		if len(m["evals"].([]any)) < 4 {
			t.Errorf("%s has %d evaluations; want checkpoints at every quarter", names[i], len(m["evals"].([]any)))
		}
		if sp, ok := m["speedup_vs_hybrid"].(float64); !ok || sp <= 0 {
			t.Errorf("%s speedup_vs_hybrid %v; want a positive number", names[i], m["speedup_vs_hybrid"])
		}
	}
	byName := map[string]map[string]any{}
	for _, m := range r.Modes {
		byName[m["name"].(string)] = m
	}
	if h := byName["hybrid"]; h["speedup_vs_hybrid"] != 1.0 || h["bytes_ratio_vs_hybrid"] != 1.0 {
		t.Errorf("hybrid vs itself: speedup %v, bytes ratio %v; want 1, 1", h["speedup_vs_hybrid"], h["bytes_ratio_vs_hybrid"])
	}
	if c := byName["cpu"]; c["bytes_h2d"] != 0.0 || c["bytes_ratio_vs_hybrid"] != 0.0 {
		t.Errorf("cpu moved %v bytes (ratio %v); want 0", c["bytes_h2d"], c["bytes_ratio_vs_hybrid"])
	}
	if f := byName["fae"]; f["bytes_ratio_vs_hybrid"].(float64) >= 1 || f["swaps"].(float64) < 1 || f["hot_input_share"].(float64) <= 0 {
		t.Errorf("fae: bytes ratio %v, swaps %v, hot share %v; want fewer bytes than hybrid, swaps and hot inputs",
			f["bytes_ratio_vs_hybrid"], f["swaps"], f["hot_input_share"])
	}
	if rh, ok := byName["fae"]["rate_history"].([]any); !ok || len(rh) < 2 {
		t.Errorf("fae rate_history %v; want the start and at least one swap", byName["fae"]["rate_history"])
	}
	if !r.Determin {
		t.Errorf("repeats of a deterministic bench differ: %v", r.Modes)
	}
	for _, k := range []string{"cpu", "cores", "gpu", "picasso_version", "go_version", "backend", "command"} {
		if _, ok := r.Environment[k]; !ok {
			t.Errorf("environment lacks %q", k)
		}
	}
	if cmd := r.Environment["command"].(string); !strings.HasPrefix(cmd, "picasso bench") && !strings.Contains(cmd, " picasso bench") ||
		!strings.Contains(cmd, "--epochs 1") || !strings.Contains(cmd, "--modes fae,hybrid,cpu,artifact") {
		t.Errorf("environment.command = %q; want the bench command line", cmd)
	}
	for _, png := range []string{"throughput.svg", "phases.svg", "bytes.svg", "auc.svg", "rate.svg"} {
		benchtest.CheckChart(t, filepath.Join(out, png))
	}
	if md, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.Contains(string(md), "## Time per phase") {
		t.Errorf("report.md: %v", err)
	}

	// A second bench reuses the preparation and reproduces bytes and AUC.
	code, _, errs = run(t, append(args, "--repeat", "1")...)
	if code != 0 {
		t.Fatalf("second bench exit %d: %s", code, errs)
	}
	r2 := readBenchReport(t, out)
	reused, _ := r2.Setup["reused"].(map[string]any)
	if reused["profile"] != true || reused["classify"] != true {
		t.Errorf("second bench reused %v; want profile and classify", reused)
	}
	for i, m := range r2.Modes {
		for _, k := range []string{"bytes_h2d", "bytes_d2h", "test_auc", "test_logloss", "swaps"} {
			if m[k] != r.Modes[i][k] {
				t.Errorf("%s %s: %v on the rerun, %v before; want identical", m["name"], k, m[k], r.Modes[i][k])
			}
		}
	}
}

// TestBenchInterrupt cancels a bench during its first run: it stops with
// the interrupt exit code, says no report was written, and writes none.
func TestBenchInterrupt(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if code, _, errs := run(t, "gen", "--preset", "demo", "--rows", "6000", "--out", data, "--seed", "4"); code != 0 {
		t.Fatalf("gen exit %d: %s", code, errs)
	}
	cfg := writeFile(t, filepath.Join(dir, "bench.yaml"), "model:\n  embedding_dim: 8\n  bottom_mlp: [16, 8]\n  top_mlp: [16, 1]\nfae:\n  budget: 256KiB\n  small_table: 16KiB\n")
	out := filepath.Join(dir, "bench")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once the first run has written its first metrics line.
		for ctx.Err() == nil {
			if st, err := os.Stat(filepath.Join(out, "runs", "fae", "r1", "metrics.jsonl")); err == nil && st.Size() > 0 {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	code, _, errs := runTrainCLI(t, ctx, "bench", "--data", data, "--config", cfg, "--out", out, "--batch-size", "64",
		"--steps", "10000000", "--log-every", "1", "--ablate", "none", "--quiet")
	if code != exitInterrupted || !strings.Contains(errs, "no report written") {
		t.Errorf("interrupted bench: exit %d, stderr %q; want exit %d saying no report was written", code, errs, exitInterrupted)
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err == nil {
		t.Errorf("an interrupted bench wrote report.json")
	}
}
