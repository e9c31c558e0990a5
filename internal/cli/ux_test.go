package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMisspelledEnvIsUsageError checks that a PICASSO_* variable naming no
// setting stops every command with exit 2 and a suggestion, while a
// correct one and the library paths pass.
func TestMisspelledEnvIsUsageError(t *testing.T) {
	t.Setenv("PICASSO_TRAIN_BATCHSIZE", "1")
	code, _, errs := run(t, "version")
	if code != exitUsage || !strings.Contains(errs, "PICASSO_TRAIN_BATCHSIZE") || !strings.Contains(errs, "PICASSO_TRAIN_BATCH_SIZE") {
		t.Fatalf("exit %d, stderr %q; want exit %d naming the variable and the right one", code, errs, exitUsage)
	}
	t.Setenv("PICASSO_TRAIN_BATCHSIZE", "")
	if err := checkEnv([]string{"PICASSO_TRAIN_BATCH_SIZE=128", "PICASSO_LIBCUDA=/x", "PICASSO_FAE_SMALL_TABLE=32KiB", "HOME=/"}); err != nil {
		t.Errorf("checkEnv on valid variables: %v", err)
	}
	if err := checkEnv([]string{"PICASSO_LIBCUDAA=/x"}); err == nil || !strings.Contains(err.Error(), "did you mean PICASSO_LIBCUDA,") {
		t.Errorf("checkEnv(PICASSO_LIBCUDAA) = %v; want an error suggesting PICASSO_LIBCUDA", err)
	}
	if err := checkEnv([]string{"PICASSO_FAE_BUDGTE=1MiB"}); err == nil || !strings.Contains(err.Error(), "PICASSO_FAE_BUDGET") {
		t.Errorf("checkEnv(PICASSO_FAE_BUDGTE) = %v; want an error suggesting PICASSO_FAE_BUDGET", err)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, filepath.Join(dir, "bad.tsv"), "1\tx\n")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"gen", "--preset", "nope", "--out", filepath.Join(dir, "g")}, exitUsage},
		{[]string{"train", "--out", filepath.Join(dir, "r"), "--mode", "warp"}, exitUsage},
		{[]string{"convert", "--format", "criteo", "--in", bad, "--out", filepath.Join(dir, "c")}, exitBadData},
		{[]string{"eval", "--run", dir, "--data", dir}, exitUsage},
		{[]string{"--version"}, exitOK},
	} {
		if code, _, errs := run(t, tc.args...); code != tc.want {
			t.Errorf("picasso %s: exit %d (%s); want %d", strings.Join(tc.args, " "), code, strings.TrimSpace(errs), tc.want)
		}
	}
	_, help, _ := run(t, "--help")
	for _, want := range []string{"Exit codes", "130", "bad data"} {
		if !strings.Contains(help, want) {
			t.Errorf("picasso --help lacks %q", want)
		}
	}
}

// TestCompletions checks that every enum flag completes to its values.
func TestCompletions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gen", "--preset"}, "kaggle"},
		{[]string{"train", "--mode"}, "artifact"},
		{[]string{"train", "--device"}, "emulated"},
		{[]string{"train", "--blas"}, "openblas"},
		{[]string{"profile", "--method"}, "topk"},
		{[]string{"profile", "--sampling"}, "row-groups"},
		{[]string{"convert", "--format"}, "avazu"},
		{[]string{"convert", "--ids"}, "reindex"},
		{[]string{"bench", "--modes"}, "hybrid"},
		{[]string{"bench", "--ablate"}, "interleaving"},
		{[]string{"eval", "--split"}, "train"},
		{[]string{"predict", "--format"}, "criteo"},
		{[]string{"export", "--format"}, "onnx"},
		{[]string{"train", "--arch"}, "deepfm"},
		{[]string{"train", "--optimizer"}, "adagrad"},
		{[]string{"train", "--dense-optimizer"}, "adam"},
	} {
		_, out, _ := run(t, append(append([]string{"__complete"}, tc.args...), "")...)
		if !strings.Contains(out, tc.want+"\n") {
			t.Errorf("completion of %v: %q; want %s among the values", tc.args, out, tc.want)
		}
	}
}

// TestJSONOutputs checks that gen, convert, train, classify verify and
// version print one JSON document with their figures under --json.
func TestJSONOutputs(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	decode := func(name, out string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("%s --json: %v\n%s", name, err, out)
		}
		return m
	}
	code, out, errs := run(t, "gen", "--preset", "demo", "--rows", "4000", "--out", data, "--seed", "2", "--json", "-q")
	if code != 0 {
		t.Fatalf("gen: %d %s", code, errs)
	}
	m := decode("gen", out)
	if m["train_rows"].(float64) != 3600 || m["click_rate"].(float64) <= 0 || m["oracle_auc"].(float64) <= 0.5 {
		t.Errorf("gen --json: %v", m)
	}
	code, out, errs = run(t, "convert", "--format", "avazu", "--in", filepath.Join(testdataDir, "avazu-sample100.csv"), "--out", filepath.Join(dir, "av"), "--json", "-q")
	if code != 0 {
		t.Fatalf("convert: %d %s", code, errs)
	}
	if m = decode("convert", out); m["train_rows"].(float64) != 100 || len(m["distinct_values"].([]any)) == 0 {
		t.Errorf("convert --json: %v", m)
	}
	code, out, errs = run(t, "train", "--data", data, "--mode", "cpu", "--out", filepath.Join(dir, "run"), "--json", "-q")
	if code != 0 {
		t.Fatalf("train: %d %s", code, errs)
	}
	if m = decode("train", out); m["test_auc"] == nil || m["steps"].(float64) < 1 {
		t.Errorf("train --json: %v", m)
	}
	cfg := writeFile(t, filepath.Join(dir, "fae.yaml"), "fae:\n  budget: 256KiB\n  small_table: 8KiB\n")
	prof := filepath.Join(dir, "profile.json")
	if code, _, errs := run(t, "profile", "--data", data, "--config", cfg, "--out", prof, "-q"); code != 0 {
		t.Fatalf("profile: %d %s", code, errs)
	}
	if code, _, errs := run(t, "classify", "--data", data, "--config", cfg, "--profile", prof, "--out", filepath.Join(dir, "fae"), "-q"); code != 0 {
		t.Fatalf("classify: %d %s", code, errs)
	}
	code, out, errs = run(t, "classify", "verify", filepath.Join(dir, "fae"), "--data", data, "--json")
	if code != 0 {
		t.Fatalf("verify: %d %s", code, errs)
	}
	if m = decode("classify verify", out); m["ok"] != true {
		t.Errorf("classify verify --json: %v", m)
	}
	_, out, _ = run(t, "version", "--json")
	if m = decode("version", out); m["version"] != Version {
		t.Errorf("version --json: %v", m)
	}
}

// TestAllHotWarns checks the warning for data whose every input is hot.
func TestAllHotWarns(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if code, _, errs := run(t, "gen", "--preset", "demo", "--rows", "4000", "--out", data, "--seed", "2", "-q"); code != 0 {
		t.Fatalf("gen: %d %s", code, errs)
	}
	prof := filepath.Join(dir, "profile.json")
	code, _, errs := run(t, "profile", "--data", data, "--out", prof, "-q")
	if code != 0 || !strings.Contains(errs, "warning: 100.0% of inputs are hot") {
		t.Fatalf("profile at the default budget: exit %d, stderr %q; want the all-hot warning", code, errs)
	}
	code, _, errs = run(t, "classify", "--data", data, "--profile", prof, "--out", filepath.Join(dir, "fae"), "-q")
	if code != 0 || !strings.Contains(errs, "classify: warning: 100.0% of inputs are hot") {
		t.Fatalf("classify: exit %d, stderr %q; want the all-hot warning", code, errs)
	}
	code, _, errs = run(t, "profile", "--data", data, "--out", prof, "--budget", "64KiB", "-q")
	if code != exitUsage || !strings.Contains(errs, "fae.small_table") || !strings.Contains(errs, "configs/demo.yaml") {
		t.Fatalf("profile with a budget below the whole tables: exit %d, stderr %q; want exit 2 naming fae.small_table and configs/demo.yaml", code, errs)
	}
}

// TestInterruptedSaysSo: a command stopped by Ctrl-C (its context
// cancelled) exits 130 and says it was interrupted, not "context
// canceled", and leaves no output behind.
func TestInterruptedSaysSo(t *testing.T) {
	out := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, _, errs := runTrainCLI(t, ctx, "gen", "--preset", "demo", "--rows", "20000", "--out", out, "--quiet")
	if code != exitInterrupted || !strings.Contains(errs, "interrupted") || strings.Contains(errs, "context canceled") {
		t.Errorf("gen with a cancelled context: exit %d, stderr %q; want exit %d saying it was interrupted", code, errs, exitInterrupted)
	}
	if _, err := os.Stat(filepath.Join(out, "dataset.yaml")); err == nil {
		t.Errorf("an interrupted gen wrote %s", filepath.Join(out, "dataset.yaml"))
	}
}

// TestClassifyWithOtherDataProfile: a profile made from other data (other
// table sizes) is a usage error that says so and what to do, not an
// internal mismatch with exit 1.
func TestClassifyWithOtherDataProfile(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, g := range [][]string{{"--out", a}, {"--out", b, "--scale", "0.5"}} {
		if code, _, errs := run(t, append([]string{"gen", "--preset", "demo", "--rows", "4000", "-q"}, g...)...); code != 0 {
			t.Fatalf("gen %v: exit %d: %s", g, code, errs)
		}
	}
	prof := filepath.Join(a, "profile.json")
	if code, _, errs := run(t, "profile", "--data", a, "--out", prof, "-q"); code != 0 {
		t.Fatalf("profile: exit %d: %s", code, errs)
	}
	code, _, errs := run(t, "classify", "--data", b, "--profile", prof, "--out", filepath.Join(dir, "fae"), "-q")
	if code != exitUsage || !strings.Contains(errs, "made from other data") || !strings.Contains(errs, "profile this data") || strings.Contains(errs, "logger") {
		t.Errorf("classify with another data's profile: exit %d, stderr %q; want exit %d saying the profile is of other data and what to do", code, errs, exitUsage)
	}
}

// TestConfigErrorsNameTheirSource: an unknown key or a value of the wrong
// type names the config file that holds it, and a bad PICASSO_* value the
// variable; values the decoder used to bend without a word (a fraction
// for a whole number, true for a number, one number for a list) are
// refused.
func TestConfigErrorsNameTheirSource(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "good.yaml"), "train:\n  batch_size: 64\n")
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", "train:\n  batch_sise: 64\n", "unknown key(s) in train: batch_sise"},
		{"unknown section", "trian:\n  epochs: 1\n", "unknown top-level key(s): trian"},
		{"fraction", "train:\n  batch_size: 64.5\n", "'train.batch_size' is 64.5, not a whole number"},
		{"bool for a number", "train:\n  threads: true\n", "'train.threads' is true, not a number"},
		{"number for a list", "model:\n  bottom_mlp: 512\n", "'model.bottom_mlp' is 512, not a list"},
		{"bad mode", "train:\n  mode: fea\n", `'train.mode': mode "fea" is not one of`},
		{"two bad choices", "train:\n  mode: fea\n  blas: nope\n", `is not one of [fae artifact hybrid device cpu hybridhash]; 'train.blas'`},
	} {
		bad := writeFile(t, filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml"), tc.yaml)
		code, _, errs := run(t, "--config", good, "--config", bad, "config", "show")
		if code != exitUsage || !strings.Contains(errs, "config "+bad+": ") || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d naming %s and saying %q", tc.name, code, errs, exitUsage, bad, tc.want)
		}
	}
	dotted := writeFile(t, filepath.Join(dir, "dotted.yaml"), "train.batch_size: 77\n") // keys as viper reads them
	if code, out, errs := run(t, "--config", dotted, "config", "show"); code != 0 || !strings.Contains(out, "batch_size: 77") {
		t.Errorf("dotted key: exit %d, stdout %q, stderr %q; want batch_size 77", code, out, errs)
	}
	neg := writeFile(t, filepath.Join(dir, "neg.yaml"), "train:\n  batch_size: -3\n")
	if code, _, errs := run(t, "--config", neg, "config", "show"); code != exitUsage || !strings.Contains(errs, "batch_size: must be > 0") || strings.Contains(errs, "micro_batches") {
		t.Errorf("negative batch size: exit %d, stderr %q; want one error, about batch_size", code, errs)
	}
	t.Setenv("PICASSO_TRAIN_BATCH_SIZE", "lots")
	code, _, errs := run(t, "config", "show")
	if code != exitUsage || !strings.Contains(errs, `PICASSO_TRAIN_BATCH_SIZE="lots"`) {
		t.Errorf("bad PICASSO_TRAIN_BATCH_SIZE: exit %d, stderr %q; want exit %d naming the variable and its value", code, errs, exitUsage)
	}
}

// TestArgumentErrorsAreUsage: a wrong number of arguments, a word no
// command takes and a grouping command given an unknown subcommand exit 2
// with a pointer to --help (they exited 1, or printed help and exited 0).
func TestArgumentErrorsAreUsage(t *testing.T) {
	for _, args := range [][]string{
		{"nosuchcmd"},
		{"gen", "--out", "x", "extra"},
		{"classify", "verify"},
		{"classify", "verify", "a", "b"},
		{"profile", "merge", "--out", "x"},
		{"completion", "tcsh"},
		{"config", "bogus"},
	} {
		code, _, errs := run(t, args...)
		if code != exitUsage || !strings.Contains(errs, "--help'") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d pointing at --help", args, code, errs, exitUsage)
		}
	}
	if code, out, _ := run(t, "--help"); code != 0 || !strings.Contains(out, "picasso [command]") || strings.Contains(out, "picasso [flags]") {
		t.Errorf("picasso --help: exit %d; want the usage line of a command of commands:\n%s", code, out)
	}
	if code, out, _ := run(t, "config"); code != 0 || !strings.Contains(out, "show") {
		t.Errorf("config alone: exit %d, stdout %q; want its help", code, out)
	}
}

// TestMissingDataSaysSo: a command that needs data, run without --data,
// says --data is required (not "data.train: no training data path").
func TestMissingDataSaysSo(t *testing.T) {
	for _, args := range [][]string{{"profile", "--out", "p.json"}, {"classify", "--profile", "p.json", "--out", "f"}} {
		code, _, errs := run(t, args...)
		if code != exitUsage || !strings.Contains(errs, "--data is required") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying --data is required", args, code, errs, exitUsage)
		}
	}
}

// TestDataDirWithoutConfigSaysSo: a data directory whose dataset.yaml is
// gone (gen --force removes it before it replaces the splits one after the
// other, and writes it last) is refused with what to do, not with "data:
// no dense or sparse columns" alone, and gen --force removes the old one
// before anything else.
func TestDataDirWithoutConfigSaysSo(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if code, _, errs := run(t, "gen", "--preset", "demo", "--rows", "3000", "--out", data, "-q"); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errs)
	}
	if err := os.Remove(filepath.Join(data, datasetFile)); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "profile", "--data", data, "--out", filepath.Join(data, "p.json"))
	if code != exitUsage || !strings.Contains(errs, "has no dataset.yaml") || !strings.Contains(errs, "run it again") {
		t.Errorf("profile on a data directory without dataset.yaml: exit %d, stderr %q; want exit %d saying so", code, errs, exitUsage)
	}
}

// TestProfileMergeFlags: merge, which reads no data, runs on counts files
// and has no --sample-rate (it had one, ignored).
func TestProfileMergeFlags(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if code, _, errs := run(t, "gen", "--preset", "demo", "--rows", "3000", "--out", data, "-q"); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errs)
	}
	prof := filepath.Join(data, "profile.json")
	if code, _, errs := run(t, "profile", "--data", data, "--out", prof, "-q"); code != 0 {
		t.Fatalf("profile: exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, "profile", "merge", "--out", filepath.Join(data, "m.json"), "-q", filepath.Join(data, "profile.counts")); code != 0 {
		t.Errorf("profile merge: exit %d: %s", code, errs)
	}
	if code, _, _ := run(t, "profile", "merge", "--sample-rate", "5", "--out", filepath.Join(data, "m.json"), filepath.Join(data, "profile.counts")); code != exitUsage {
		t.Errorf("profile merge --sample-rate: exit %d; want %d (no such flag)", code, exitUsage)
	}
}
