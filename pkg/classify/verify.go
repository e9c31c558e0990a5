package classify

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// Verify checks a layout against its manifest: counts, full batches, every
// hot row's IDs valid hot slots of its feature's table, every cold row
// holding a cold ID, and the digest of the rows (with hot slots mapped back
// to IDs) equal to the input's. When input is not nil the input's digest is
// recomputed too.
func Verify(ctx context.Context, dir string, input *dataset.Dataset) error {
	l, err := layout.Open(dir)
	if err != nil {
		return err
	}
	if err := l.CheckHotmapParquet(); err != nil {
		return err
	}
	m := l.Manifest
	hot := l.HotSet()
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("classify: verify %s: "+format+": %w", append(append([]any{dir}, a...), layout.ErrInvalid)...))
	}
	if m.HotRows+m.ColdRows != m.RowsIn {
		bad("hot %d + cold %d rows != %d input rows", m.HotRows, m.ColdRows, m.RowsIn)
	}
	ft := m.Spec.FeatureTable()
	var dig Digest
	var rows [2]int64
	for _, c := range []layout.Class{layout.Hot, layout.Cold} {
		n := l.NumBatches(c)
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		// Hot slots are checked and mapped back to IDs by the stream.
		s, err := l.Stream(c, all, layout.StreamOptions{Prefetch: 2, TableIDs: true})
		if err != nil {
			return err
		}
		for i := range n {
			b, err := s.Next(ctx)
			if err != nil {
				s.Close()
				return errors.Join(append(errs, err)...)
			}
			if b.N != m.BatchSize && i != n-1 {
				bad("%s batch %d (%s row group %d) has %d rows, want %d", c, i, b.Pos.File, b.Pos.RowGroup, b.N, m.BatchSize)
			}
			rows[c] += int64(b.N)
			for r := 0; r < b.N; r++ {
				if c == layout.Cold {
					cold := false
					for f := range b.Sparse {
						for _, id := range b.Sparse[f].Row(r) {
							if _, ok := hot.Slot(ft[f], id); !ok {
								cold = true
							}
						}
					}
					if !cold {
						bad("cold batch %d row %d has only hot IDs", i, r)
					}
				}
				dig.Add(rowDigest(b, r))
			}
			if len(errs) > 10 {
				s.Close()
				return errors.Join(errs...)
			}
		}
		s.Close()
	}
	if rows[layout.Hot] != m.HotRows || rows[layout.Cold] != m.ColdRows {
		bad("files hold %d hot and %d cold rows, manifest says %d and %d", rows[layout.Hot], rows[layout.Cold], m.HotRows, m.ColdRows)
	}
	if dig.String() != m.Digest {
		bad("rows on disk (digest %s) differ from the input rows (digest %s)", dig, m.Digest)
	}
	if input != nil {
		in, err := DigestOf(ctx, input)
		if err != nil {
			return err
		}
		if in.String() != m.Digest {
			bad("input now has digest %s, the layout was built from %s", in, m.Digest)
		}
	}
	return errors.Join(errs...)
}

// DigestOf computes the row digest of a dataset.
func DigestOf(ctx context.Context, ds *dataset.Dataset) (Digest, error) {
	var d Digest
	r, err := ds.NewReader(dataset.ReaderOptions{})
	if err != nil {
		return d, err
	}
	defer r.Close()
	for {
		b, err := r.Next(ctx)
		if err == io.EOF {
			return d, nil
		}
		if err != nil {
			return d, err
		}
		for i := 0; i < b.N; i++ {
			d.Add(rowDigest(b, i))
		}
	}
}
