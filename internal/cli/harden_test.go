package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// TestOutputsNeverHurt checks the output rules on one small dataset: an
// existing run is refused without --force and replaced with it; --out may
// not be (or contain) an input; a second writer of one --out is refused
// while the first holds it; --resume works for data given by a relative path.
func TestOutputsNeverHurt(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ctx := context.Background()
	genDemo(t, "data", 6000, 5)
	trainArgs := []string{"train", "--data", "data", "--mode", "cpu", "--batch-size", "128", "--quiet"}
	if code, _, errs := runTrainCLI(t, ctx, append(trainArgs, "--steps", "10", "--out", "run")...); code != 0 {
		t.Fatalf("train exit %d: %s", code, errs)
	}

	t.Run("existing run is refused", func(t *testing.T) {
		code, _, errs := runTrainCLI(t, ctx, append(trainArgs, "--steps", "20", "--out", "run")...)
		if code != exitUsage || !strings.Contains(errs, "--force") {
			t.Fatalf("train over a finished run: exit %d, stderr %q; want %d naming --force", code, errs, exitUsage)
		}
		if s := readSummary(t, "run"); s["steps"].(float64) != 10 {
			t.Fatalf("refused train changed the run: steps %v; want 10", s["steps"])
		}
	})

	t.Run("resume with a relative data path", func(t *testing.T) {
		if code, _, errs := runTrainCLI(t, ctx, "train", "--resume", "run", "--steps", "15", "--quiet"); code != 0 {
			t.Fatalf("train --resume exit %d: %s", code, errs)
		}
		if s := readSummary(t, "run"); s["steps"].(float64) != 15 {
			t.Fatalf("resumed run at step %v; want 15", s["steps"])
		}
	})

	t.Run("force replaces the run whole", func(t *testing.T) {
		code, _, errs := runTrainCLI(t, ctx, append(trainArgs, "--steps", "5", "--out", "run", "--force")...)
		if code != 0 {
			t.Fatalf("train --force exit %d: %s", code, errs)
		}
		if s := readSummary(t, "run"); s["steps"].(float64) != 5 {
			t.Fatalf("replaced run: steps %v; want 5", s["steps"])
		}
		left, _ := filepath.Glob(".run.old-*")
		if len(left) != 0 {
			t.Fatalf("train --force left %v behind", left)
		}
	})

	t.Run("out is an input", func(t *testing.T) {
		cases := [][]string{
			append(trainArgs, "--steps", "5", "--out", "data", "--force"),
			append(trainArgs, "--steps", "5", "--out", ".", "--force"),
			{"classify", "--data", "data", "--profile", "p.json", "--out", "data", "--force"},
			{"classify", "--data", "data", "--profile", "p.json", "--out", "data/train", "--force"},
			{"profile", "--data", "data", "--out", "data/train"},
		}
		for _, args := range cases {
			code, _, errs := runTrainCLI(t, ctx, args...)
			if code != exitUsage || !strings.Contains(errs, "input") {
				t.Errorf("%v: exit %d, stderr %q; want %d naming the input", args, code, errs, exitUsage)
			}
		}
		if _, err := os.Stat(filepath.Join("data", "train", "part-00000.parquet")); err != nil {
			t.Fatalf("the input was touched: %v", err)
		}
	})

	t.Run("profile pair mismatch", func(t *testing.T) {
		cfg := writeFile(t, "fae.yaml", "fae:\n  budget: 512KiB\n  small_table: 16KiB\n")
		for _, p := range []string{"p1.json", "p2.json"} {
			seed := map[string]string{"p1.json": "1", "p2.json": "2"}[p]
			if code, _, errs := runTrainCLI(t, ctx, "profile", "--data", "data", "--config", cfg, "--seed", seed, "--out", p); code != 0 {
				t.Fatalf("profile exit %d: %s", code, errs)
			}
		}
		a, err := os.ReadFile("p1.counts")
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile("p2.counts")
		if err != nil {
			t.Fatal(err)
		}
		if string(a) == string(b) {
			t.Fatal("profiles with seeds 1 and 2 wrote the same counts; the test needs two different ones")
		}
		// The same seed gives the same counts, byte for byte.
		if code, _, errs := runTrainCLI(t, ctx, "profile", "--data", "data", "--config", cfg, "--seed", "1", "--out", "p3.json"); code != 0 {
			t.Fatalf("profile exit %d: %s", code, errs)
		}
		if c, err := os.ReadFile("p3.counts"); err != nil || string(c) != string(a) {
			t.Errorf("a second profile with seed 1 wrote other counts (%d bytes, first %d; err %v); want the same bytes", len(c), len(a), err)
		}
		// A kill between the two renames of a new profile leaves new counts
		// beside the old profile.json.
		writeFile(t, "p1.counts", string(b))
		code, _, errs := runTrainCLI(t, ctx, "classify", "--data", "data", "--config", cfg, "--profile", "p1.json", "--out", "fae-mixed")
		if code != exitBadData || !strings.Contains(errs, "p1.counts") {
			t.Fatalf("classify with a mismatched pair: exit %d, stderr %q; want %d naming p1.counts", code, errs, exitBadData)
		}
	})

	t.Run("leftovers of killed runs", func(t *testing.T) {
		left := []string{"data2/.train.tmp-1/part-00000.parquet", "data2/.test.tmp-2/x", ".fae2.tmp-3/hot/x", ".fae2.tmp-4.old/x",
			".q.json.tmp-5", ".q.counts.tmp-6", "run/.checkpoint.bin.tmp-7", ".run.old-8/summary.json"}
		for _, p := range left {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, p, "old")
		}
		cfg := writeFile(t, "fae2.yaml", "fae:\n  budget: 512KiB\n  small_table: 16KiB\n")
		for _, args := range [][]string{
			{"gen", "--preset", "demo", "--rows", "2000", "--out", "data2"},
			{"profile", "--data", "data", "--config", cfg, "--out", "q.json"},
			{"classify", "--data", "data", "--config", cfg, "--profile", "q.json", "--out", "fae2", "--batch-size", "128"},
			append(trainArgs, "--steps", "3", "--out", "run", "--force"),
		} {
			if code, _, errs := runTrainCLI(t, ctx, args...); code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, errs)
			}
		}
		for _, p := range []string{"data2/.train.tmp-1", "data2/.test.tmp-2", ".fae2.tmp-3", ".fae2.tmp-4.old",
			".q.json.tmp-5", ".q.counts.tmp-6", "run/.checkpoint.bin.tmp-7", ".run.old-8"} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("leftover %s survived the next run: Stat = %v", p, err)
			}
		}
	})

	t.Run("locked output", func(t *testing.T) {
		release, err := lockOutput("test", "run2")
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		for _, args := range [][]string{
			append(trainArgs, "--steps", "5", "--out", "run2"),
			{"gen", "--preset", "demo", "--rows", "1000", "--out", "run2"},
			{"classify", "--data", "data", "--profile", "p.json", "--out", "run2"},
			{"profile", "--data", "data", "--out", "run2"},
		} {
			code, _, errs := runTrainCLI(t, ctx, args...)
			if code == 0 || !strings.Contains(errs, "another picasso process") {
				t.Errorf("%v while run2 is locked: exit %d, stderr %q; want a failure naming the other process", args, code, errs)
			}
		}
		if _, err := os.Stat(filepath.Join("run2", "summary.json")); err == nil {
			t.Fatal("a refused train wrote run2")
		}
	})
}

// TestMemoryEstimateRefuses: sizes that cannot fit are refused before any
// allocation, with the figure and the setting to change; the default
// configuration passes.
func TestMemoryEstimateRefuses(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	data := filepath.Join(dir, "data")
	genDemo(t, data, 3000, 5)
	cases := []struct {
		args    []string
		env     string
		setting string
	}{
		{[]string{"train", "--data", data, "--mode", "cpu", "--steps", "1", "--batch-size", "100000000000"}, "", "batch_size"},
		{[]string{"train", "--data", data, "--mode", "cpu", "--steps", "1"}, "1000000000000", "train.prefetch"},
		{[]string{"classify", "--data", data, "--profile", "p.json", "--batch-size", "100000000000"}, "", "--batch-size"},
	}
	for i, c := range cases {
		if c.env != "" {
			t.Setenv("PICASSO_TRAIN_PREFETCH", c.env)
		}
		args := append(c.args, "--out", filepath.Join(dir, fmt.Sprintf("out%d", i)), "--quiet")
		code, _, errs := runTrainCLI(t, ctx, args...)
		if code != exitUsage || !strings.Contains(errs, "memory") || !strings.Contains(errs, c.setting) || !strings.Contains(errs, "iB") {
			t.Errorf("%v: exit %d, stderr %q; want %d naming the memory figure and %s", args, code, errs, exitUsage, c.setting)
		}
		t.Setenv("PICASSO_TRAIN_PREFETCH", "4")
	}
	parts := trainMemory(mustDefaultWithTable(1e12))
	if err := checkMemory("train", parts, 64<<30); err == nil || !strings.Contains(err.Error(), "embedding table") {
		t.Errorf("checkMemory of a 1e12-row table = %v; want a refusal naming the embedding table", err)
	}
	if err := checkMemory("train", trainMemory(mustDefaultWithTable(1000)), 1<<30); err != nil {
		t.Errorf("checkMemory of the default config with a 1000-row table = %v; want nil", err)
	}
}

func mustDefaultWithTable(rows int64) *config.Config {
	c := config.Default()
	c.Data.Sparse = []dataset.SparseFeature{{Name: "C1", Rows: rows}}
	c.Data.Dense = []string{"I1"}
	return &c
}

// TestCorruptParquetExits3: bytes flipped in the middle of a data file make
// profile and train fail with the bad-data exit code, naming the file.
func TestCorruptParquetExits3(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	data := filepath.Join(dir, "data")
	genDemo(t, data, 20000, 5)
	part := filepath.Join(data, "train", "part-00000.parquet")
	b, err := os.ReadFile(part)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 4; i < len(b)/2; i += 97 {
		b[i] ^= 0x5a
	}
	writeFile(t, part, string(b))
	cfg := writeFile(t, filepath.Join(dir, "fae.yaml"), "fae:\n  budget: 512KiB\n  small_table: 16KiB\n")
	for _, args := range [][]string{
		{"profile", "--data", data, "--config", cfg, "--sample-rate", "100", "--out", filepath.Join(dir, "p.json")},
		{"train", "--data", data, "--mode", "cpu", "--epochs", "1", "--batch-size", "512", "--out", filepath.Join(dir, "run"), "--quiet"},
	} {
		code, _, errs := runTrainCLI(t, ctx, args...)
		if code != exitBadData || !strings.Contains(errs, part) {
			t.Errorf("%s on a corrupt file: exit %d, stderr %q; want %d naming %s", args[0], code, errs, exitBadData, part)
		}
	}
}

// TestRemoveTempsMatchesOnlyItsPatterns: every pattern of a directory is
// matched in the one read of it; other names, and other directories'
// leftovers, stay.
func TestRemoveTempsMatchesOnlyItsPatterns(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	for _, p := range []string{".p.json.tmp-1", ".p.json.old-2", ".p.counts.tmp-3", "p.json", "p.counts", ".p.json.lock", ".q.json.tmp-4", "other/.p.json.tmp-5"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".p.json.tmp-6"), 0o755); err != nil { // a staged directory
		t.Fatal(err)
	}
	err := removeTemps("test", filepath.Join(dir, ".p.json.tmp-*"), filepath.Join(dir, ".p.json.old-*"),
		filepath.Join(dir, ".p.counts.tmp-*"), filepath.Join(dir, "missing", ".x.tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, d := range []string{dir, other} {
		es, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			left = append(left, e.Name())
		}
	}
	want := []string{".p.json.lock", ".q.json.tmp-4", "other", "p.counts", "p.json", ".p.json.tmp-5"}
	if !slices.Equal(left, want) {
		t.Errorf("left %q; want %q", left, want)
	}
	if err := removeTemps("test", filepath.Join(dir, "[.tmp-*")); err == nil {
		t.Error("a malformed pattern was not reported")
	}
}

// TestLockOutputQuotesGlobCharacters: an output whose name holds glob
// characters removes its own leftovers only, and can be locked at all.
func TestLockOutputQuotesGlobCharacters(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{".out[1].json.tmp-7", ".out1.json.tmp-8"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	release, err := lockOutput("test", filepath.Join(dir, "out[1].json"))
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := os.Stat(filepath.Join(dir, ".out[1].json.tmp-7")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its own leftover survived: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".out1.json.tmp-8")); err != nil {
		t.Errorf("another output's temporary file was removed: %v", err)
	}
	release, err = lockOutput("test", filepath.Join(dir, "a[b.json"))
	if err != nil {
		t.Fatalf("lockOutput(a[b.json) = %v", err)
	}
	release()
}
