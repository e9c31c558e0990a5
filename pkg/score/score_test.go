package score

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/picasso-ctr/picasso/internal/pqtest"
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

	_, fr := pqtest.OpenAsArrow(t, out, fileSchema(false), 33)
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

// scoreBatches returns batches of the given sizes with distinct labels,
// p_true and scores in every row.
func scoreBatches(sizes ...int) ([]*dataset.Batch, [][]float32) {
	var bs []*dataset.Batch
	var probs [][]float32
	k := 0
	for _, n := range sizes {
		b := &dataset.Batch{N: n}
		p := make([]float32, n)
		for i := range n {
			b.Label = append(b.Label, float32(k%2))
			b.PTrue = append(b.PTrue, float32(k)/1000)
			p[i] = float32(k)/100 + 0.5
			k++
		}
		bs = append(bs, b)
		probs = append(probs, p)
	}
	return bs, probs
}

// writeScoresArrow writes the batches as earlier picasso versions did,
// through Arrow's record writer.
func writeScoresArrow(t *testing.T, path string, withP bool, rowGroup int, bs []*dataset.Batch, probs [][]float32) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := fileSchema(withP)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(int64(rowGroup)), parquet.WithCreatedBy("picasso"))
	fw, err := pqarrow.NewFileWriter(sc, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	first := int64(0)
	for i, b := range bs {
		for r := range b.N {
			rb.Field(0).(*array.Int64Builder).Append(first + int64(r))
		}
		rb.Field(1).(*array.Float32Builder).AppendValues(b.Label, nil)
		rb.Field(2).(*array.Float32Builder).AppendValues(probs[i], nil)
		if withP {
			rb.Field(3).(*array.Float32Builder).AppendValues(b.PTrue, nil)
		}
		rec := rb.NewRecord()
		err := fw.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		first += int64(b.N)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWriterAsArrow writes batches of odd sizes, some larger than a row
// group, in row groups of 7 rows, and reads the file with Arrow's reader:
// the Parquet schema is the one Arrow's writer gives the scores' schema,
// the Arrow schema is stored in the footer, every row group but a partial
// last one holds 7 rows, and every value is the one written. The file is
// also byte for byte the one Arrow's writer wrote from the same batches.
func TestWriterAsArrow(t *testing.T) {
	const rowGroup = 7
	sizes := []int{5, 13, 1, 20, 7, 2} // 48 rows: 6 row groups and 6 rows
	for _, withP := range []bool{false, true} {
		t.Run(fmt.Sprintf("p_true=%v", withP), func(t *testing.T) {
			bs, probs := scoreBatches(sizes...)
			dir := t.TempDir()
			path := filepath.Join(dir, "scores.parquet")
			w, err := newWriter(path, withP, rowGroup)
			if err != nil {
				t.Fatal(err)
			}
			defer w.abort()
			var first int64
			for i, b := range bs {
				if err := w.write(first, b, probs[i]); err != nil {
					t.Fatal(err)
				}
				first += int64(b.N)
			}
			if err := w.close(); err != nil {
				t.Fatal(err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("directory holds %d entries after close; want 1 (no temporary left)", len(ents))
			}

			sc := fileSchema(withP)
			names := []string{"row", "label", "score"}
			if withP {
				names = append(names, "p_true")
			}
			for i, f := range sc.Fields() {
				if i >= len(names) || f.Name != names[i] || (f.Type.ID() == arrow.INT64) != (i == 0) {
					t.Fatalf("scores file columns %v; want %v, row int64, the rest float32", sc, names)
				}
			}
			if sc.NumFields() != len(names) {
				t.Fatalf("scores file columns %v; want %v", sc, names)
			}
			pf, fr := pqtest.OpenAsArrow(t, path, sc, 10)
			if n := int64(pf.NumRowGroups()); n != first/rowGroup+1 {
				t.Errorf("%d row groups; want %d", n, first/rowGroup+1)
			}
			for g := range pf.NumRowGroups() {
				want := int64(rowGroup)
				if g == pf.NumRowGroups()-1 {
					want = first % rowGroup
				}
				if got := pf.RowGroup(g).NumRows(); got != want {
					t.Errorf("row group %d has %d rows; want %d", g, got, want)
				}
			}

			rr, err := fr.GetRecordReader(context.Background(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rr.Release()
			var rows []int64
			var labels, scores, ptrue []float32
			for rr.Next() {
				rec := rr.Record()
				for i := range int(rec.NumRows()) {
					rows = append(rows, rec.Column(0).(*array.Int64).Value(i))
					labels = append(labels, rec.Column(1).(*array.Float32).Value(i))
					scores = append(scores, rec.Column(2).(*array.Float32).Value(i))
					if withP {
						ptrue = append(ptrue, rec.Column(3).(*array.Float32).Value(i))
					}
				}
			}
			if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			if int64(len(rows)) != first {
				t.Fatalf("read %d rows; wrote %d", len(rows), first)
			}
			k := 0
			for i, b := range bs {
				for r := range b.N {
					if rows[k] != int64(k) || labels[k] != b.Label[r] || scores[k] != probs[i][r] {
						t.Fatalf("row %d: row %v label %v score %v; want %d, %v, %v", k, rows[k], labels[k], scores[k], k, b.Label[r], probs[i][r])
					}
					if withP && ptrue[k] != b.PTrue[r] {
						t.Fatalf("row %d: p_true %v; want %v", k, ptrue[k], b.PTrue[r])
					}
					k++
				}
			}

			arrowPath := filepath.Join(t.TempDir(), "arrow.parquet")
			writeScoresArrow(t, arrowPath, withP, rowGroup, bs, probs)
			pqtest.SameFile(t, arrowPath, path)
		})
	}
}

// TestWriterAbort: an aborted writer leaves neither the file nor its
// temporary.
func TestWriterAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "scores.parquet")
	w, err := newWriter(path, true, 4)
	if err != nil {
		t.Fatal(err)
	}
	bs, probs := scoreBatches(9)
	if err := w.write(0, bs[0], probs[0]); err != nil {
		t.Fatal(err)
	}
	w.abort()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("directory holds %d entries after abort; want none", len(ents))
	}
}
