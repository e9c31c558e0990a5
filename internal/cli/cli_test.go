package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/config"
)

// run executes picasso in-process and returns its exit code and output.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, filepath.Join(dir, "a.yaml"), "train:\n  batch_size: 64\n  learning_rate: 0.5\nfae:\n  budget: 64MiB\n")
	b := writeFile(t, filepath.Join(dir, "b.yaml"), "train:\n  batch_size: 128\n")
	t.Setenv("PICASSO_TRAIN_LEARNING_RATE", "0.25")
	code, out, errs := run(t, "config", "show", "--config", a, "--config", b, "--json")
	if code != 0 {
		t.Fatalf("config show exit %d: %s", code, errs)
	}
	for _, want := range []string{`"batch_size": 128`, `"learning_rate": 0.25`, `"budget": "64MiB"`} {
		if !strings.Contains(out, want) {
			t.Errorf("config show output lacks %s:\n%s", want, out)
		}
	}
}

func TestConfigUnknownKey(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, filepath.Join(dir, "a.yaml"), "train:\n  batch_sise: 64\n")
	code, _, errs := run(t, "config", "show", "--config", a)
	if code != exitUsage || !strings.Contains(errs, "batch_sise") {
		t.Fatalf("exit %d, stderr %q; want exit %d naming batch_sise", code, errs, exitUsage)
	}
}

// TestConfigBadAdagradEps checks that an Adagrad eps outside (0, 1] is a
// usage error naming the key, from a file and from the flag.
func TestConfigBadAdagradEps(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"0", "-1e-3", "2"} {
		a := writeFile(t, filepath.Join(dir, "a.yaml"), "train:\n  adagrad_eps: "+v+"\n")
		code, _, errs := run(t, "config", "show", "--config", a)
		if code != exitUsage || !strings.Contains(errs, "train.adagrad_eps") {
			t.Errorf("adagrad_eps %s: exit %d, stderr %q; want exit %d naming train.adagrad_eps", v, code, errs, exitUsage)
		}
	}
	code, _, errs := run(t, "train", "--data", dir, "--out", filepath.Join(dir, "r"), "--adagrad-eps", "0")
	if code != exitUsage || !strings.Contains(errs, "train.adagrad_eps") {
		t.Errorf("--adagrad-eps 0: exit %d, stderr %q; want exit %d naming train.adagrad_eps", code, errs, exitUsage)
	}
}

func TestPipelineDemo(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if code, _, errs := run(t, "gen", "--preset", "demo", "--rows", "20000", "--out", data, "--seed", "3"); code != 0 {
		t.Fatalf("gen exit %d: %s", code, errs)
	}
	cfg := writeFile(t, filepath.Join(dir, "fae.yaml"), "fae:\n  budget: 512KiB\n  small_table: 16KiB\n")
	prof := filepath.Join(data, "profile.json")
	code, out, errs := run(t, "profile", "--data", data, "--config", cfg, "--out", prof)
	if code != 0 {
		t.Fatalf("profile exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "hot inputs") {
		t.Errorf("profile summary lacks the hot input share:\n%s", out)
	}
	fae := filepath.Join(dir, "fae")
	if code, _, errs := run(t, "classify", "--data", data, "--config", cfg, "--profile", prof, "--out", fae, "--batch-size", "128"); code != 0 {
		t.Fatalf("classify exit %d: %s", code, errs)
	}
	if code, out, errs := run(t, "classify", "verify", fae, "--data", data); code != 0 {
		t.Fatalf("verify exit %d: %s %s", code, out, errs)
	}
	// A second classify into the same directory is refused.
	if code, _, _ := run(t, "classify", "--data", data, "--config", cfg, "--profile", prof, "--out", fae); code == 0 {
		t.Fatal("classify over an existing layout succeeded without --force")
	}
	// Shuffled through bucket files instead of memory, the layout's
	// mini-batches are the same bytes.
	spilled := filepath.Join(dir, "fae-spilled")
	if code, _, errs := run(t, "classify", "--data", data, "--config", cfg, "--profile", prof, "--out", spilled, "--batch-size", "128", "--shuffle-memory", "0"); code != 0 {
		t.Fatalf("classify --shuffle-memory 0 exit %d: %s", code, errs)
	}
	for _, class := range []string{"hot", "cold"} {
		files, _ := filepath.Glob(filepath.Join(fae, class, "*.parquet"))
		if len(files) == 0 {
			t.Fatalf("no %s files in %s", class, fae)
		}
		for _, f := range files {
			a, _ := os.ReadFile(f)
			b, err := os.ReadFile(filepath.Join(spilled, class, filepath.Base(f)))
			if err != nil || !bytes.Equal(a, b) {
				t.Fatalf("%s/%s differs between the in-memory and the file shuffle (%v)", class, filepath.Base(f), err)
			}
		}
	}
}

func TestBadFlagIsUsageError(t *testing.T) {
	code, _, errs := run(t, "gen", "--no-such-flag")
	if code != exitUsage || !strings.Contains(errs, "no-such-flag") {
		t.Fatalf("exit %d, stderr %q; want exit %d naming the flag", code, errs, exitUsage)
	}
}

// TestShippedConfigs loads every model config in configs/ as a user would
// (config show --config FILE): each must decode with no unknown key, pass
// validation and carry its model and its rates through.
func TestShippedConfigs(t *testing.T) {
	files, err := filepath.Glob("../../configs/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("configs/: %v, %d files", err, len(files))
	}
	for _, f := range files {
		if strings.HasSuffix(f, "-columns.yaml") { // convert --columns, not a config
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, out, errs := run(t, "config", "show", "--config", f, "--json")
			if code != 0 {
				t.Fatalf("config show --config %s: exit %d: %s", f, code, errs)
			}
			var got config.Config
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			m, err := readConfigFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := config.Default()
			if v, ok := m["model"].(map[string]any)["arch"]; ok {
				want.Model.Arch = v.(string)
			}
			tr, _ := m["train"].(map[string]any)
			for key, dst := range map[string]*float64{"learning_rate": &want.Train.LearningRate, "decay_fraction": &want.Train.DecayFraction, "adagrad_eps": &want.Train.AdagradEps} {
				if v, ok := tr[key]; ok {
					*dst = toFloat(t, v)
				}
			}
			if got.Model.Arch != want.Model.Arch || got.Train.LearningRate != want.Train.LearningRate || got.Train.DecayFraction != want.Train.DecayFraction ||
				got.Train.AdagradEps != want.Train.AdagradEps {
				t.Errorf("arch %q, learning rate %v, decay fraction %v, Adagrad eps %v; the file says %q, %v, %v, %v",
					got.Model.Arch, got.Train.LearningRate, got.Train.DecayFraction, got.Train.AdagradEps,
					want.Model.Arch, want.Train.LearningRate, want.Train.DecayFraction, want.Train.AdagradEps)
			}
		})
	}
}

func toFloat(t *testing.T, v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	}
	t.Fatalf("%v (%T) is not a number", v, v)
	return 0
}
