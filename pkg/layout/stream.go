package layout

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// StreamOptions configures a Stream.
type StreamOptions struct {
	// Prefetch is the number of mini-batches decoded ahead on a background
	// goroutine; 0 reads on the caller's goroutine, in Next.
	Prefetch int
	// TableIDs returns hot mini-batches with each slot replaced by the
	// table ID it stands for, as a raw dataset's rows hold them, for
	// readers that keep no hot table. Cold mini-batches hold table IDs
	// already.
	TableIDs bool
}

// Stream reads chosen mini-batches of one class, in order.
type Stream struct {
	p *dataset.Prefetch[*dataset.Batch]
}

// Stream returns a stream over the mini-batches of class c with the given
// indices (each in [0, NumBatches(c)), in stored order), in the order
// given. It keeps one reader per part file over that file's mini-batches,
// so a file is opened once per stream rather than once per mini-batch.
func (l *Layout) Stream(c Class, batches []int, o StreamOptions) (*Stream, error) {
	all := l.groups[c]
	groups := make([]dataset.RowGroup, len(batches))
	for i, k := range batches {
		if k < 0 || k >= len(all) {
			return nil, fmt.Errorf("layout: %s: %s mini-batch %d of %d: %w", l.Dir, c, k, len(all), ErrInvalid)
		}
		groups[i] = all[k]
	}
	var files []string
	byFile := map[string][]dataset.RowGroup{}
	for _, g := range groups {
		if _, ok := byFile[g.File]; !ok {
			files = append(files, g.File)
		}
		byFile[g.File] = append(byFile[g.File], g)
	}
	r := &classReader{l: l, groups: groups, readers: map[string]*dataset.Reader{}, tableIDs: o.TableIDs && c == Hot}
	for _, f := range files {
		rd, err := l.data[c].NewReader(dataset.ReaderOptions{RowGroups: byFile[f], BatchRows: l.Manifest.BatchSize})
		if err != nil {
			r.close()
			return nil, err
		}
		r.readers[f] = rd
	}
	return &Stream{p: dataset.NewPrefetch(o.Prefetch, r.next, r.close)}, nil
}

// Next returns the next mini-batch, or io.EOF after the last. When ctx
// ends first it returns ctx's error and nothing is consumed.
func (s *Stream) Next(ctx context.Context) (*dataset.Batch, error) { return s.p.Next(ctx) }

// Close stops reading ahead and releases the stream's files.
func (s *Stream) Close() error { return s.p.Close() }

// classReader reads a stream's mini-batches on whichever goroutine calls
// next.
type classReader struct {
	l        *Layout
	groups   []dataset.RowGroup
	readers  map[string]*dataset.Reader
	pos      int
	tableIDs bool
}

func (r *classReader) next(ctx context.Context) (*dataset.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.pos >= len(r.groups) {
		return nil, io.EOF
	}
	g := r.groups[r.pos]
	b, err := r.readers[g.File].Next(ctx)
	if err == io.EOF {
		err = fmt.Errorf("layout: %s row group %d is missing or empty: %w", g.File, g.Index, ErrInvalid)
	}
	if err != nil {
		return nil, err
	}
	r.pos++
	if r.tableIDs {
		if err := r.l.toTableIDs(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (r *classReader) close() error {
	var errs []error
	for _, rd := range r.readers {
		errs = append(errs, rd.Close())
	}
	return errors.Join(errs...)
}

// toTableIDs replaces, in place, the slots of a hot mini-batch with the
// table IDs they stand for. It is the one place that maps slots back to
// IDs.
func (l *Layout) toTableIDs(b *dataset.Batch) error {
	h := l.hot
	for f := range b.Sparse {
		t := l.featTab[f]
		ids, off := h.IDs(t), h.Offset(t)
		col := b.Sparse[f].IDs
		for k, slot := range col {
			r := slot - off
			if r < 0 || r >= int64(len(ids)) {
				return fmt.Errorf("layout: hot mini-batch at %s row group %d: feature %s: slot %d outside table %d's hot slots [%d, %d): %w",
					b.Pos.File, b.Pos.RowGroup, l.Manifest.Spec.Sparse[f].Name, slot, t, off, off+int64(len(ids)), ErrInvalid)
			}
			col[k] = ids[r]
		}
	}
	return nil
}
