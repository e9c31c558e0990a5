package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/layout"
)

// TestVerifyChecksHotmapParquet classifies generated data, checks that
// hotmap.parquet matches the layout's hot set, then replaces it with
// another map and expects classify verify to fail with exit 3.
func TestVerifyChecksHotmapParquet(t *testing.T) {
	dir := t.TempDir()
	data, fae := filepath.Join(dir, "data"), filepath.Join(dir, "fae")
	if code, _, errs := run(t, "gen", "--preset", "demo", "--rows", "4000", "--out", data, "--seed", "4", "-q"); code != 0 {
		t.Fatalf("gen: %d %s", code, errs)
	}
	cfg := writeFile(t, filepath.Join(dir, "fae.yaml"), "fae:\n  budget: 256KiB\n  small_table: 8KiB\n")
	prof := filepath.Join(dir, "profile.json")
	if code, _, errs := run(t, "profile", "--data", data, "--config", cfg, "--out", prof, "-q"); code != 0 {
		t.Fatalf("profile: %d %s", code, errs)
	}
	if code, _, errs := run(t, "classify", "--data", data, "--config", cfg, "--profile", prof, "--out", fae, "-q"); code != 0 {
		t.Fatalf("classify: %d %s", code, errs)
	}
	// A layout is not data to score: its hot parts hold slots.
	runDir := filepath.Join(dir, "run")
	if code, _, errs := run(t, "train", "--data", data, "--mode", "cpu", "--out", runDir, "-q"); code != 0 {
		t.Fatalf("train: %d %s", code, errs)
	}
	if code, _, errs := run(t, "eval", "--run", runDir, "--data", fae); code != exitUsage || !strings.Contains(errs, "layout") {
		t.Errorf("eval --data LAYOUT: exit %d, %q; want %d", code, errs, exitUsage)
	}
	l, err := layout.Open(fae)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CheckHotmapParquet(); err != nil {
		t.Fatalf("fresh layout: %v", err)
	}
	hs := l.HotSet()
	var hot [][]int64
	var rows []int64
	moved := false
	for tb, table := range l.Manifest.Spec.Tables() {
		ids := append([]int64(nil), hs.IDs(tb)...)
		rows = append(rows, table.Rows)
		// Swap one hot row of the first table that has a cold row free.
		if !moved && len(ids) > 0 && int64(len(ids)) < table.Rows {
			for cand := int64(0); cand < table.Rows; cand++ {
				if _, isHot := hs.Slot(tb, cand); !isHot {
					ids[0] = cand
					moved = true
					break
				}
			}
		}
		hot = append(hot, ids)
	}
	if !moved {
		t.Fatal("no table with both hot and cold rows; the test checks nothing")
	}
	other, err := layout.NewHotSet(hot, rows)
	if err != nil {
		t.Fatal(err)
	}
	tableNames := make([]string, len(rows))
	for i, tb := range l.Manifest.Spec.Tables() {
		tableNames[i] = tb.Name
	}
	if err := layout.WriteHotmapParquet(filepath.Join(fae, layout.HotmapParquetFile), other, tableNames); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "classify", "verify", fae); code != exitBadData {
		t.Fatalf("verify with a wrong hotmap.parquet: exit %d (%s); want %d", code, errs, exitBadData)
	}
}
