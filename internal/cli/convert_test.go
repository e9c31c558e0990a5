package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// clickLog writes a delimited log with a header whose label depends on the
// user (users 0-9 click 90% of the time, others 10%), with a time column and
// a column that leaks the label.
func clickLog(t *testing.T, path string, n int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("when;user;item;leak;clicked\n")
	for i := range n {
		u := rng.IntN(50)
		p := 0.1
		if u < 10 {
			p = 0.9
		}
		y := 0
		if rng.Float64() < p {
			y = 1
		}
		fmt.Fprintf(&b, "%d;u%d;i%d;%d;%d\n", 1_700_000_000+60*i, u, rng.IntN(20), y, y)
	}
	return writeFile(t, path, b.String())
}

// TestConvertCSVAndTrain converts a click log with column roles given by
// flags, split three ways by hash, and trains on it.
func TestConvertCSVAndTrain(t *testing.T) {
	dir := t.TempDir()
	in := clickLog(t, filepath.Join(dir, "log.csv"), 4000)
	data := filepath.Join(dir, "data")
	code, out, errs := run(t, "convert", "--quiet", "--format", "csv", "--in", in, "--out", data,
		"--label", "clicked", "--sparse", "user,item", "--time", "when", "--time-format", "unix", "--ignore", "leak",
		"--ids", "reindex", "--split", "train=0.8,valid=0.1,test=0.1", "--split-seed", "9")
	if code != 0 {
		t.Fatalf("convert exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "valid rows") {
		t.Errorf("convert output lacks the valid rows:\n%s", out)
	}
	for _, sub := range []string{"train", "valid", "test"} {
		if _, err := os.Stat(filepath.Join(data, sub)); err != nil {
			t.Errorf("convert wrote no %s part: %v", sub, err)
		}
	}
	// dataset.yaml, with its valid key, decodes exactly.
	code, show, errs := run(t, "config", "show", "--data", data)
	if code != 0 {
		t.Fatalf("config show exit %d: %s", code, errs)
	}
	if !strings.Contains(show, "valid: "+filepath.Join(data, "valid")) {
		t.Errorf("config show does not list the valid part:\n%s", show)
	}

	runDir := filepath.Join(dir, "run")
	opt := writeFile(t, filepath.Join(dir, "adagrad.yaml"), "train:\n  optimizer: adagrad\n  learning_rate: 0.05\n")
	code, _, errs = run(t, "train", "--data", data, "--config", opt, "--mode", "cpu", "--batch-size", "64",
		"--steps", "40", "--out", runDir, "--quiet")
	if code != 0 {
		t.Fatalf("train exit %d: %s", code, errs)
	}
	s := readSummary(t, runDir)
	if s["steps"].(float64) != 40 {
		t.Errorf("summary: steps %v; want 40", s["steps"])
	}
	// The user alone separates 90% from 10% clickers: AUC about 0.8 at best.
	t.Logf("test AUC %v", s["test_auc"])
	if auc, ok := s["test_auc"].(float64); !ok || auc < 0.65 {
		t.Errorf("test AUC %v after 40 steps; want above 0.65", s["test_auc"])
	}
	// The raw log scores with the run's saved column roles and IDs.
	code, out, errs = run(t, "predict", "--quiet", "--run", runDir, "--data", in, "--format", "csv",
		"--out", filepath.Join(dir, "scores.parquet"))
	if code != 0 {
		t.Fatalf("predict --format csv exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "4000") {
		t.Errorf("predict output does not count the log's 4000 rows:\n%s", out)
	}
}

// TestConvertCSVColumnsFileSplitByTime converts with roles from a YAML file
// and a split by time.
func TestConvertCSVColumnsFileSplitByTime(t *testing.T) {
	dir := t.TempDir()
	in := clickLog(t, filepath.Join(dir, "log.csv"), 1000)
	cols := writeFile(t, filepath.Join(dir, "cols.yaml"),
		"label: clicked\nsparse: [user, item]\ntime: when\ntime_format: unix\nignore: [leak]\n")
	data := filepath.Join(dir, "data")
	code, out, errs := run(t, "convert", "--quiet", "--format", "csv", "--columns", cols, "--in", in, "--out", data,
		"--split", "train=0.7,test=0.3", "--split-by", "when")
	if code != 0 {
		t.Fatalf("convert exit %d: %s", code, errs)
	}
	// Times are distinct, so the parts are exact.
	if !strings.Contains(out, "700 train rows, 0 valid rows, 300 test rows") {
		t.Errorf("convert output:\n%s\nwant 700 train and 300 test rows", out)
	}
}

// TestConvertCSVErrors checks exit codes and messages of bad roles and bad data.
func TestConvertCSVErrors(t *testing.T) {
	dir := t.TempDir()
	in := clickLog(t, filepath.Join(dir, "log.csv"), 10)
	base := []string{"convert", "--quiet", "--format", "csv", "--in", in}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unlisted column", []string{"--label", "clicked", "--sparse", "user,item", "--time", "when", "--time-format", "unix"},
			exitBadData, `line 1, field 4 (leak): column "leak" has no role`},
		{"missing column", []string{"--label", "clicked", "--sparse", "user,country", "--ignore-unlisted"},
			exitBadData, `lacks column(s) "country"`},
		{"unparsable time", []string{"--label", "clicked", "--sparse", "user", "--time", "when", "--ignore-unlisted"},
			exitBadData, "line 2, field 1 (when)"},
		{"duplicate role", []string{"--label", "clicked", "--sparse", "user", "--dense", "user"},
			exitUsage, `column "user" has two roles`},
		{"unknown transform", []string{"--label", "clicked", "--dense", "item:sqrt"}, exitUsage, `unknown transform "sqrt"`},
		{"roles for criteo", []string{"--format", "criteo", "--label", "clicked"}, exitUsage, "--label applies to --format csv only"},
		{"bad split", []string{"--label", "clicked", "--sparse", "user", "--ignore-unlisted", "--split", "train=0.8"}, exitUsage, "sum to 0.8"},
	}
	for i, tc := range cases {
		args := append(append(append([]string(nil), base...), tc.args...), "--out", filepath.Join(dir, fmt.Sprint("out", i)))
		code, _, errs := run(t, args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, %q; want exit %d with %q", tc.name, code, errs, tc.code, tc.want)
		}
	}
}

func TestConvertHelpDocumentsEveryFlag(t *testing.T) {
	code, out, errs := run(t, "convert", "--help")
	if code != 0 {
		t.Fatalf("convert --help exit %d: %s", code, errs)
	}
	newConvertCmd(&globals{}).Flags().VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(out, "--"+f.Name) || f.Usage == "" {
			t.Errorf("convert --help does not document --%s", f.Name)
		}
	})
}

// TestConvertSkipBadRowsSaysWhere: --skip-bad-rows reports the first line
// it skipped (file, line, column and why), in the summary and in --json,
// not only how many.
func TestConvertSkipBadRowsSaysWhere(t *testing.T) {
	dir := t.TempDir()
	in := clickLog(t, filepath.Join(dir, "log.csv"), 10)
	raw, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	f := strings.Split(lines[3], ";")
	f[len(f)-1] = "7" // the label, not 0 or 1
	lines[3] = strings.Join(f, ";")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"convert", "--quiet", "--format", "csv", "--in", in, "--label", "clicked", "--sparse", "user,item", "--ignore-unlisted", "--skip-bad-rows"}
	code, out, errs := run(t, append(args, "--out", filepath.Join(dir, "a"))...)
	if code != 0 || !strings.Contains(out, "1 bad lines skipped") || !strings.Contains(out, "first bad line skipped: "+in+": line 4") {
		t.Errorf("convert --skip-bad-rows: exit %d, stdout %q, stderr %q; want the first skipped line named", code, out, errs)
	}
	code, out, _ = run(t, append(args, "--json", "--out", filepath.Join(dir, "b"))...)
	if code != 0 || !strings.Contains(out, `"first_skipped": "`+in+`: line 4`) {
		t.Errorf("convert --skip-bad-rows --json: exit %d, %s; want first_skipped naming line 4", code, out)
	}
}

// TestConvertForce: --force replaces a dataset in --out, the splits the new
// run does not write and what was made from the old one included; without
// it an existing split is refused with the way out.
func TestConvertForce(t *testing.T) {
	dir := t.TempDir()
	in := clickLog(t, filepath.Join(dir, "log.csv"), 200)
	out := filepath.Join(dir, "td")
	base := []string{"convert", "--quiet", "--format", "csv", "--in", in, "--label", "clicked", "--sparse", "user,item", "--ignore-unlisted", "--out", out}
	if code, _, errs := run(t, append(base, "--split", "train=0.8,valid=0.1,test=0.1")...); code != 0 {
		t.Fatalf("first convert: exit %d: %s", code, errs)
	}
	if err := os.WriteFile(filepath.Join(out, "profile.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, base...); code == 0 || !strings.Contains(errs, "--force") {
		t.Errorf("second convert without --force: exit %d, %q; want a refusal naming --force", code, errs)
	}
	if code, _, errs := run(t, append(base, "--force")...); code != 0 {
		t.Fatalf("convert --force: exit %d: %s", code, errs)
	}
	for _, gone := range []string{"valid", "test", "profile.json"} {
		if _, err := os.Stat(filepath.Join(out, gone)); !os.IsNotExist(err) {
			t.Errorf("after convert --force into one split, %s remains (stat: %v)", gone, err)
		}
	}
	for _, kept := range []string{"train", datasetFile} {
		if _, err := os.Stat(filepath.Join(out, kept)); err != nil {
			t.Errorf("after convert --force: %v", err)
		}
	}
}
