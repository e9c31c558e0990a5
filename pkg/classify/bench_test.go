package classify

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/gen"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// BenchmarkClassify classifies 200,000 generated kaggle-preset rows with 1
// and 2 workers; the ratio of their rows/s is the parallel speedup.
func BenchmarkClassify(b *testing.B) {
	dir := b.TempDir()
	res, err := gen.Run(context.Background(), gen.Options{
		Preset: "kaggle", Scale: 0.01, Rows: 220_000, TestFraction: 0.09, Seed: 5, OutDir: filepath.Join(dir, "data")})
	if err != nil {
		b.Fatal(err)
	}
	spec := res.Spec
	spec.Train, spec.Test = filepath.Join(dir, "data", "train"), ""
	ds, err := dataset.Open(&spec, spec.Train)
	if err != nil {
		b.Fatal(err)
	}
	// A fifth of every table hot: about a third of the inputs are hot, so
	// both classes are large.
	var hot [][]int64
	var rows []int64
	for _, tb := range spec.Tables() {
		var ids []int64
		for id := range max(tb.Rows/5, 1) {
			ids = append(ids, id)
		}
		hot, rows = append(hot, ids), append(rows, tb.Rows)
	}
	hs, err := layout.NewHotSet(hot, rows)
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			var m *layout.Manifest
			for i := range b.N {
				out := filepath.Join(dir, fmt.Sprintf("fae-%d-%d", workers, i))
				if m, err = Run(context.Background(), ds, hs, out, Options{BatchSize: 1024, Seed: 1, Workers: workers, EmbeddingDim: 16, Force: true}); err != nil {
					b.Fatal(err)
				}
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(ds.Rows())*float64(b.N)/sec, "rows/s")
			b.ReportMetric(m.PartitionSeconds/m.Seconds, "partition-share")
			b.ReportMetric(0, "ns/op")
		})
	}
}
