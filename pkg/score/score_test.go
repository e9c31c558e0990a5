package score

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/metrics"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// fixture writes n random rows in two files and returns them with a
// model of random weights for their spec.
func fixture(t *testing.T, n int) (*dataset.Dataset, *train.Model) {
	t.Helper()
	spec := dataset.Spec{Label: "label", Dense: []string{"d0", "d1"}, Sparse: []dataset.SparseFeature{{Name: "a", Rows: 20}, {Name: "b", Rows: 9}}}
	rng := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	for part := range 2 {
		b := &dataset.Batch{N: n / 2, Sparse: make([]dataset.SparseColumn, 2)}
		for range b.N {
			b.Label = append(b.Label, float32(rng.IntN(2)))
			b.Dense = append(b.Dense, float32(rng.NormFloat64()), float32(rng.NormFloat64()))
			b.Sparse[0].IDs = append(b.Sparse[0].IDs, rng.Int64N(20))
			b.Sparse[1].IDs = append(b.Sparse[1].IDs, rng.Int64N(9))
		}
		w, err := dataset.NewWriter(filepath.Join(dir, "part-"+string(rune('0'+part))+".parquet"), &spec, dataset.WriterOptions{RowGroupRows: 7})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteBatch(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := dataset.Open(&spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	s := train.ShapeOf(train.ModelOptions{Dim: 4, Bottom: []int{6, 4}, Top: []int{5, 1}, Interaction: "dot"}, &spec)
	m := &train.Model{Mode: train.ModeCPU, BatchSize: 16, Shape: s, Params: make([]float32, 1<<12), Emb: make([]float32, 29*4)}
	np := 0
	for _, l := range m.Layers() {
		np += l.In*l.Out + l.Out
	}
	m.Params = m.Params[:np]
	for i := range m.Params {
		m.Params[i] = float32(rng.NormFloat64() * 0.5)
	}
	for i := range m.Emb {
		m.Emb[i] = float32(rng.NormFloat64() * 0.5)
	}
	return ds, m
}

// TestRunWritesScoresInOrder scores a dataset of two files and checks the
// Parquet output (every row once, in input order, with the predictor's
// score and the label) and the metrics.
func TestRunWritesScoresInOrder(t *testing.T) {
	const n = 100
	ds, m := fixture(t, n)
	be, err := compute.New(compute.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	p, err := train.NewPredictor(m, be)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var want, labels []float32
	if err := p.PredictDataset(context.Background(), ds, func(b *dataset.Batch, pr []float32) error {
		want = append(want, pr...)
		labels = append(labels, b.Label...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "scores.parquet")
	res, err := Run(context.Background(), Options{Predictor: p, Data: ds, Out: out, RowGroupRows: 30})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != n || res.AUC != metrics.AUC(want, labels) || len(res.Calibration.Bins) != DefaultBins {
		t.Errorf("Run: %d rows, AUC %v, %d bins; want %d, %v, %d", res.Rows, res.AUC, len(res.Calibration.Bins), n, metrics.AUC(want, labels), DefaultBins)
	}

	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 33}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	k := 0
	for rr.Next() {
		rec := rr.Record()
		row, label, score := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Float32), rec.Column(2).(*array.Float32)
		for i := range int(rec.NumRows()) {
			if row.Value(i) != int64(k) || score.Value(i) != want[k] || label.Value(i) != labels[k] {
				t.Fatalf("output row %d: row %d label %v score %v; want %d, %v, %v", k, row.Value(i), label.Value(i), score.Value(i), k, labels[k], want[k])
			}
			k++
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if k != n {
		t.Errorf("output has %d rows; want %d", k, n)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{RowGroupRows: -1}
	err := o.Validate()
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Validate(%+v) = %v; want ErrInvalidOptions", o, err)
	}
	for _, want := range []string{"no predictor", "no data", "row group rows"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q lacks %q", err, want)
		}
	}
}
