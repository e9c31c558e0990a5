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
// given. It keeps a reader per part file over that file's mini-batches,
// so a file is opened once per stream rather than once per mini-batch, but
// holds at most maxOpenFiles of them open (each holds its file's footer and
// read buffers): memory stays bounded however many files the layout has.
func (l *Layout) Stream(c Class, batches []int, o StreamOptions) (*Stream, error) {
	all := l.groups[c]
	groups := make([]dataset.RowGroup, len(batches))
	for i, k := range batches {
		if k < 0 || k >= len(all) {
			return nil, fmt.Errorf("layout: %s: %s mini-batch %d of %d: %w", l.Dir, c, k, len(all), ErrInvalid)
		}
		groups[i] = all[k]
	}
	byFile := map[string][]dataset.RowGroup{}
	for _, g := range groups {
		byFile[g.File] = append(byFile[g.File], g)
	}
	r := &classReader{l: l, c: c, groups: groups, left: byFile, readers: map[string]*dataset.Reader{}, tableIDs: o.TableIDs && c == Hot}
	return &Stream{p: dataset.NewPrefetch(o.Prefetch, r.next, r.close)}, nil
}

// maxOpenFiles bounds the part files a stream keeps open.
const maxOpenFiles = 8

// Next returns the next mini-batch, or io.EOF after the last. When ctx
// ends first it returns ctx's error and nothing is consumed.
func (s *Stream) Next(ctx context.Context) (*dataset.Batch, error) { return s.p.Next(ctx) }

// Close stops reading ahead and releases the stream's files.
func (s *Stream) Close() error { return s.p.Close() }

// classReader reads a stream's mini-batches on whichever goroutine calls
// next.
type classReader struct {
	l        *Layout
	c        Class
	groups   []dataset.RowGroup
	left     map[string][]dataset.RowGroup // per file, its groups not yet read, in stream order
	readers  map[string]*dataset.Reader    // open readers over left[file]
	lru      []string                      // open files, least recently used first
	pos      int
	tableIDs bool
}

// reader returns an open reader positioned at file's next group, opening
// one over the file's remaining groups (and closing the least recently
// used reader beyond maxOpenFiles) when needed.
func (r *classReader) reader(file string) (*dataset.Reader, error) {
	if rd, ok := r.readers[file]; ok {
		for i, f := range r.lru {
			if f == file {
				r.lru = append(append(r.lru[:i:i], r.lru[i+1:]...), file)
				break
			}
		}
		return rd, nil
	}
	if len(r.lru) >= maxOpenFiles {
		old := r.lru[0]
		r.lru = r.lru[1:]
		err := r.readers[old].Close()
		delete(r.readers, old)
		if err != nil {
			return nil, err
		}
	}
	rd, err := r.l.data[r.c].NewReader(dataset.ReaderOptions{RowGroups: r.left[file], BatchRows: r.l.Manifest.BatchSize})
	if err != nil {
		return nil, err
	}
	r.readers[file] = rd
	r.lru = append(r.lru, file)
	return rd, nil
}

func (r *classReader) next(ctx context.Context) (*dataset.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.pos >= len(r.groups) {
		return nil, io.EOF
	}
	g := r.groups[r.pos]
	rd, err := r.reader(g.File)
	if err != nil {
		return nil, err
	}
	b, err := rd.Next(ctx)
	if err == io.EOF {
		err = fmt.Errorf("layout: %s row group %d is missing or empty: %w", g.File, g.Index, ErrInvalid)
	}
	if err != nil {
		return nil, err
	}
	r.left[g.File] = r.left[g.File][1:]
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
