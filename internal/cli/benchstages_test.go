package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchStages: bench --stages times every stage once per round, writes
// stages.md and stages.json, and removes its scratch outputs.
func TestBenchStages(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if code, _, errs := run(t, "gen", "--preset", "demo", "--rows", "6000", "--out", data, "--seed", "4", "-q"); code != 0 {
		t.Fatalf("gen exit %d: %s", code, errs)
	}
	out := filepath.Join(dir, "st")
	code, stdout, errs := run(t, "bench", "--data", data, "--out", out, "--stages", "--stages-rates", "10,100", "--repeat", "2", "-q")
	if code != 0 {
		t.Fatalf("bench --stages exit %d: %s", code, errs)
	}
	for _, want := range []string{"| profile 10% |", "| profile 100% |", "| classify |"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, "stages.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ts []struct {
		Stage   string  `json:"stage"`
		Round   int     `json:"round"`
		Seconds float64 `json:"seconds"`
	}
	if err := json.Unmarshal(raw, &ts); err != nil {
		t.Fatal(err)
	}
	if len(ts) != 6 || ts[0].Stage != "profile 10%" || ts[5].Stage != "classify" || ts[5].Round != 2 {
		t.Errorf("stages.json = %+v; want 3 stages in each of 2 rounds", ts)
	}
	if _, err := os.Stat(filepath.Join(out, "stages.md")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(out, "stages-scratch")); !os.IsNotExist(err) {
		t.Errorf("stages-scratch left behind (stat: %v)", err)
	}
	// --json prints stages.json, nothing else.
	code, stdout, errs = run(t, "bench", "--data", data, "--out", filepath.Join(dir, "sj"), "--stages", "--stages-rates", "100", "--repeat", "1", "-q", "--json")
	var js []map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &js) != nil || len(js) != 2 {
		t.Errorf("bench --stages --json: exit %d, stdout %q, stderr %q; want stages.json (2 stages)", code, stdout, errs)
	}
	if code, _, _ := run(t, "bench", "--data", data, "--out", out, "--stages", "--stages-rates", "0"); code == 0 {
		t.Error("--stages-rates 0: exit 0; want a usage error")
	}
}
