package bench

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/classify"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/gen"
	"github.com/picasso-ctr/picasso/pkg/profile"
)

// TestPrepareReusesUpToDateOutputs profiles and classifies once, reuses
// everything on a second call, and redoes only classify when the batch size
// changes and everything when the data changes.
func TestPrepareReusesUpToDateOutputs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	generate := func(name string, seed uint64) (*dataset.Dataset, *dataset.Dataset) {
		res, err := gen.Run(ctx, gen.Options{Preset: "demo", Rows: 8000, Seed: seed, OutDir: filepath.Join(dir, name)})
		if err != nil {
			t.Fatal(err)
		}
		spec := res.Spec
		spec.Train, spec.Test = filepath.Join(dir, name, spec.Train), filepath.Join(dir, name, spec.Test)
		ds, err := dataset.Open(&spec, spec.Train)
		if err != nil {
			t.Fatal(err)
		}
		test, err := dataset.Open(&spec, spec.Test)
		if err != nil {
			t.Fatal(err)
		}
		return ds, test
	}
	ds, test := generate("data", 1)
	po := profile.DefaultOptions()
	po.Budget, po.SmallTableBytes, po.Dim, po.Optimizer = 256<<10, 16<<10, 8, "sgd"
	opts := PrepOptions{Dir: filepath.Join(dir, "prep"), Profile: po, Test: test, TestRows: 500,
		Classify: classify.Options{BatchSize: 128, Seed: 1, EmbeddingDim: 8}}
	prepare := func(ds *dataset.Dataset, o PrepOptions) *Prepared {
		t.Helper()
		p, err := Prepare(ctx, ds, o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := prepare(ds, opts)
	if len(p.Reused) != 0 {
		t.Errorf("first Prepare reused %v; want nothing", p.Reused)
	}
	if p.Test.Rows() != 500 || p.TestRowsTotal != test.Rows() || !p.Test.HasPTrue() {
		t.Errorf("test subset: %d rows of %d, p_true %v; want 500 of %d with p_true", p.Test.Rows(), p.TestRowsTotal, p.Test.HasPTrue(), test.Rows())
	}
	m := p.Layout.Manifest
	if m.HotRows == 0 || m.ColdRows == 0 || m.BatchSize != 128 || m.RowsIn != ds.Rows() {
		t.Errorf("layout: %d hot and %d cold rows of %d in batches of %d; want both classes, all rows, batches of 128", m.HotRows, m.ColdRows, ds.Rows(), m.BatchSize)
	}

	p = prepare(ds, opts)
	if !p.Reused["profile"] || !p.Reused["classify"] || !p.Reused["test"] {
		t.Errorf("second Prepare with the same inputs reused %v; want profile, classify and test", p.Reused)
	}

	o2 := opts
	o2.Classify.BatchSize = 64
	p = prepare(ds, o2)
	if !p.Reused["profile"] || p.Reused["classify"] || p.Layout.Manifest.BatchSize != 64 {
		t.Errorf("Prepare with another batch size reused %v, layout batch %d; want profile only, 64", p.Reused, p.Layout.Manifest.BatchSize)
	}

	o3 := o2
	o3.Profile.Budget = 128 << 10
	if p = prepare(ds, o3); p.Reused["profile"] || p.Reused["classify"] {
		t.Errorf("Prepare with another budget reused %v; want neither profile nor classify", p.Reused)
	}

	other, otherTest := generate("other", 2)
	o4 := o3
	o4.Test = otherTest
	if p = prepare(other, o4); len(p.Reused) != 0 || p.Layout.Manifest.DataFingerprint != other.Fingerprint() {
		t.Errorf("Prepare on other data reused %v; want nothing", p.Reused)
	}
}
