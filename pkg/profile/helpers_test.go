package profile

import (
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// tab describes a test table: one one-hot feature of the same name.
type tab struct {
	name string
	rows int64
}

func oneHotSpec(tabs ...tab) *dataset.Spec {
	s := &dataset.Spec{Train: "unused", Label: "label"}
	for _, t := range tabs {
		s.Sparse = append(s.Sparse, dataset.SparseFeature{Name: t.name, Rows: t.rows})
	}
	return s
}

// batchOf builds a one-hot batch: inputs[i][f] is input i's ID of feature f.
// first is the position of the batch's first row.
func batchOf(inputs [][]int64, first int64) *dataset.Batch {
	b := &dataset.Batch{N: len(inputs), Pos: dataset.Position{File: "mem", Row: first}}
	if len(inputs) == 0 {
		return b
	}
	b.Sparse = make([]dataset.SparseColumn, len(inputs[0]))
	for f := range b.Sparse {
		ids := make([]int64, len(inputs))
		for i, in := range inputs {
			ids[i] = in[f]
		}
		b.Sparse[f].IDs = ids
	}
	return b
}

// sliceSource yields prepared batches.
type sliceSource struct {
	bs []*dataset.Batch
	i  int
}

func (s *sliceSource) Next(context.Context) (*dataset.Batch, error) {
	if s.i >= len(s.bs) {
		return nil, io.EOF
	}
	s.i++
	return s.bs[s.i-1], nil
}

// batches cuts one-hot inputs into batches of at most size rows.
func batches(inputs [][]int64, size int) []*dataset.Batch {
	var out []*dataset.Batch
	for lo := 0; lo < len(inputs); lo += size {
		hi := min(lo+size, len(inputs))
		out = append(out, batchOf(inputs[lo:hi], int64(lo)))
	}
	return out
}

// loggerOf counts inputs into a new logger that keeps a keep fraction of them.
func loggerOf(t testing.TB, spec *dataset.Spec, inputs [][]int64, keep float64) *Logger {
	t.Helper()
	lg, err := NewLogger(spec, LoggerOptions{KeepInputs: keep, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := Collect(context.Background(), lg, &sliceSource{bs: batches(inputs, 4096)}); err != nil {
		t.Fatal(err)
	}
	return lg
}

// zipfIDs draws n ranks from a Zipf law with exponent s over rows ranks
// and maps rank r to ids[r] (identity when ids is nil).
func zipfIDs(r *rand.Rand, n int, s float64, rows int64, ids []int64) []int64 {
	z := rand.NewZipf(r, s, 1, uint64(rows-1))
	out := make([]int64, n)
	for i := range out {
		rank := int64(z.Uint64())
		if ids != nil {
			rank = ids[rank]
		}
		out[i] = rank
	}
	return out
}

// zipfInputs draws n inputs over the one-hot tables with the given exponents.
func zipfInputs(seed uint64, n int, tabs []tab, s []float64) [][]int64 {
	r := rand.New(rand.NewPCG(seed, 7))
	cols := make([][]int64, len(tabs))
	for f, t := range tabs {
		perm := make([]int64, t.rows)
		for i, p := range r.Perm(int(t.rows)) {
			perm[i] = int64(p)
		}
		cols[f] = zipfIDs(r, n, s[f], t.rows, perm)
	}
	in := make([][]int64, n)
	for i := range in {
		in[i] = make([]int64, len(tabs))
		for f := range tabs {
			in[i][f] = cols[f][i]
		}
	}
	return in
}

// entries returns table t's non-zero counts in increasing ID order.
func (l *Logger) entries(t int) []uint32 { return l.appendEntries(nil, t) }
