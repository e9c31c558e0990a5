package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// rawItem is one mini-batch of a raw dataset and where it ends.
type rawItem struct {
	b     *dataset.Batch
	epoch int
	rows  int64 // rows of the epoch consumed once this batch is
}

// rawStream cuts a raw dataset into mini-batches of exactly batch rows (the
// last of an epoch may be short), epoch after epoch, reading the row groups
// of each epoch in an order shuffled with the seed. It starts at any
// (epoch, rows) position, so a resumed run reads what an uninterrupted one
// would have.
type rawStream struct {
	ds    *dataset.Dataset
	batch int
	seed  uint64

	epoch  int
	rows   int64 // rows of the epoch produced so far
	r      *dataset.Reader
	skip   int64 // rows still to drop at the start of the reader
	cur    *dataset.Batch
	curOff int
	nd     int
}

func newRawStream(ds *dataset.Dataset, batch int, seed uint64, epoch int, rows int64) *rawStream {
	return &rawStream{ds: ds, batch: batch, seed: seed, epoch: epoch, rows: rows, nd: len(ds.Spec().Dense)}
}

// epochGroups returns the row groups of an epoch in reading order.
func epochGroups(ds *dataset.Dataset, seed uint64, epoch int) []dataset.RowGroup {
	g := append([]dataset.RowGroup(nil), ds.RowGroups()...)
	rng := rand.New(rand.NewPCG(seed, streamRawOrder+uint64(epoch)<<32))
	rng.Shuffle(len(g), func(i, j int) { g[i], g[j] = g[j], g[i] })
	return g
}

// open starts a reader at the stream's position.
func (s *rawStream) open() error {
	groups := epochGroups(s.ds, s.seed, s.epoch)
	skip := s.rows
	for len(groups) > 0 && skip >= groups[0].Rows {
		skip -= groups[0].Rows
		groups = groups[1:]
	}
	if len(groups) == 0 {
		// A nil list means "all groups" to the reader; an epoch that is
		// over reads nothing.
		groups = []dataset.RowGroup{}
	}
	r, err := s.ds.NewReader(dataset.ReaderOptions{RowGroups: groups, BatchRows: s.batch})
	if err != nil {
		return err
	}
	s.r, s.skip, s.cur = r, skip, nil
	return nil
}

// next returns the next mini-batch.
func (s *rawStream) next(ctx context.Context) (rawItem, error) {
	var parts []*dataset.Batch
	var partOff, partEnd []int
	have := 0
	for have < s.batch {
		if s.cur == nil || s.curOff == s.cur.N {
			if s.r == nil {
				if err := s.open(); err != nil {
					return rawItem{}, err
				}
			}
			b, err := s.r.Next(ctx)
			if errors.Is(err, io.EOF) {
				s.r.Close()
				s.r, s.cur = nil, nil
				if have > 0 || s.rows > 0 {
					if have > 0 {
						break // the epoch's short last batch
					}
					s.epoch, s.rows = s.epoch+1, 0
					continue
				}
				return rawItem{}, fmt.Errorf("train: training data has no rows: %w", dataset.ErrNoData)
			}
			if err != nil {
				return rawItem{}, err
			}
			s.cur, s.curOff = b, 0
			if s.skip > 0 {
				k := int(min(s.skip, int64(b.N)))
				s.curOff, s.skip = k, s.skip-int64(k)
				continue
			}
		}
		take := min(s.batch-have, s.cur.N-s.curOff)
		parts = append(parts, s.cur)
		partOff = append(partOff, s.curOff)
		partEnd = append(partEnd, s.curOff+take)
		s.curOff += take
		have += take
	}
	var b *dataset.Batch
	if len(parts) == 1 && partOff[0] == 0 && partEnd[0] == parts[0].N {
		b = parts[0]
	} else {
		b = concatRows(parts, partOff, partEnd, s.nd)
	}
	s.rows += int64(have)
	it := rawItem{b: b, epoch: s.epoch, rows: s.rows}
	if s.cur == nil && s.r == nil {
		// The short last batch ended the epoch.
		s.epoch, s.rows = s.epoch+1, 0
	}
	return it, nil
}

func (s *rawStream) close() {
	if s.r != nil {
		s.r.Close()
		s.r = nil
	}
}

// concatRows builds a batch from rows [off[i], end[i]) of parts[i].
func concatRows(parts []*dataset.Batch, off, end []int, nd int) *dataset.Batch {
	n := 0
	for i := range parts {
		n += end[i] - off[i]
	}
	first := parts[0]
	out := &dataset.Batch{N: n, Label: make([]float32, 0, n), Dense: make([]float32, 0, n*nd), Pos: first.Pos}
	out.Pos.Row += int64(off[0])
	if first.PTrue != nil {
		out.PTrue = make([]float32, 0, n)
	}
	out.Sparse = make([]dataset.SparseColumn, len(first.Sparse))
	for i, p := range parts {
		a, e := off[i], end[i]
		out.Label = append(out.Label, p.Label[a:e]...)
		out.Dense = append(out.Dense, p.Dense[a*nd:e*nd]...)
		if out.PTrue != nil {
			out.PTrue = append(out.PTrue, p.PTrue[a:e]...)
		}
		for f := range out.Sparse {
			c, oc := &p.Sparse[f], &out.Sparse[f]
			if c.Offsets == nil {
				oc.IDs = append(oc.IDs, c.IDs[a:e]...)
				continue
			}
			if oc.Offsets == nil {
				oc.Offsets = make([]int32, 1, n+1)
			}
			for r := a; r < e; r++ {
				oc.IDs = append(oc.IDs, c.Row(r)...)
				oc.Offsets = append(oc.Offsets, int32(len(oc.IDs)))
			}
		}
	}
	return out
}
