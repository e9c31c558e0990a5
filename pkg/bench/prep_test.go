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

// TestWriteHeadWritesTheFirstRows: the test subset holds exactly the rows
// asked, the first ones, when the test split spans several of the
// reader's batches and the subset is smaller than a row group.
func TestWriteHeadWritesTheFirstRows(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	res, err := gen.Run(ctx, gen.Options{Preset: "demo", Rows: 30000, TestFraction: 0.5, Seed: 3, OutDir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	spec := res.Spec
	spec.Train = filepath.Join(dir, "data", spec.Test)
	full, err := dataset.Open(&spec, spec.Train)
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	r, err := full.NewReader(dataset.ReaderOptions{BatchRows: 128})
	if err != nil {
		t.Fatal(err)
	}
	want, err := r.Next(ctx)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	sub := spec
	sub.Train = filepath.Join(dir, "sub")
	if err := writeHead(ctx, full, &sub, n); err != nil {
		t.Fatal(err)
	}
	got, err := dataset.Open(&sub, sub.Train)
	if err != nil {
		t.Fatal(err)
	}
	if full.Rows() < 4*n || got.Rows() != n {
		t.Fatalf("subset of %d rows from %d; want %d", got.Rows(), full.Rows(), n)
	}
	gr, err := got.NewReader(dataset.ReaderOptions{BatchRows: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer gr.Close()
	b, err := gr.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.N {
		if b.Label[i] != want.Label[i] || b.Sparse[0].IDs[i] != want.Sparse[0].IDs[i] {
			t.Fatalf("row %d of the subset differs from the split's", i)
		}
	}
}
