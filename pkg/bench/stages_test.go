package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/classify"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/gen"
	"github.com/picasso-ctr/picasso/pkg/profile"
)

// TestRunStages times every stage on a small generated dataset, round by
// round, and leaves no outputs behind in the scratch directory.
func TestRunStages(t *testing.T) {
	dir := t.TempDir()
	res, err := gen.Run(context.Background(), gen.Options{
		Preset: "kaggle", Scale: 0.001, Rows: 20_000, TestFraction: 0.1, Seed: 3, OutDir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	spec := res.Spec
	spec.Train, spec.Test = filepath.Join(dir, "data", "train"), ""
	ds, err := dataset.Open(&spec, spec.Train)
	if err != nil {
		t.Fatal(err)
	}
	po := profile.DefaultOptions()
	po.Budget = 8 << 20
	scratch := filepath.Join(dir, "scratch")
	ts, err := RunStages(context.Background(), ds, StagesOptions{
		Rates: []float64{5, 100}, Rounds: 2, Profile: po,
		Classify: classify.Options{BatchSize: 256, Seed: 1, EmbeddingDim: 16}, Scratch: scratch})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"profile 5%", "profile 100%", "classify", "profile 5%", "profile 100%", "classify"}
	if len(ts) != len(want) {
		t.Fatalf("%d timings; want %d: %+v", len(ts), len(want), ts)
	}
	for i, tm := range ts {
		if tm.Stage != want[i] || tm.Round != 1+i/3 || tm.Seconds <= 0 || tm.Rows != ds.Rows() {
			t.Errorf("timing %d = %+v; want stage %q, round %d, seconds > 0, rows %d", i, tm, want[i], 1+i/3, ds.Rows())
		}
	}
	left, err := os.ReadDir(scratch)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("scratch holds %d entries after the stages; want none", len(left))
	}
	var b strings.Builder
	if err := WriteStages(&b, ts); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "\n"); got != 2+3 {
		t.Errorf("table has %d lines; want a header of 2 and 3 stages:\n%s", got, b.String())
	}
	if _, err := RunStages(context.Background(), ds, StagesOptions{Rates: []float64{0}, Scratch: scratch}); err == nil {
		t.Error("rate 0%: no error")
	}
}
