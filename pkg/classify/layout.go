package classify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// Class names a kind of mini-batch.
type Class int

const (
	// Hot mini-batches look up only hot rows; their IDs are packed slots.
	Hot Class = hotClass
	// Cold mini-batches hold at least one cold ID per row; original IDs.
	Cold Class = coldClass
)

func (c Class) String() string { return classNames[c] }

// Layout is an opened classify output.
type Layout struct {
	Dir      string
	Manifest *Manifest
	hot      *HotSet
	data     [2]*dataset.Dataset
	refs     [2][]BatchRef
}

// BatchRef names one mini-batch (one row group) of a class.
type BatchRef struct {
	Class Class
	Group dataset.RowGroup
}

// Open reads a layout's manifest and hotmap and indexes its mini-batches.
func Open(dir string) (*Layout, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	hot, err := ReadHotmap(filepath.Join(dir, "hotmap.bin"))
	if err != nil {
		return nil, err
	}
	l := &Layout{Dir: dir, Manifest: m, hot: hot}
	for c, files := range [2][]PartFile{m.HotFiles, m.ColdFiles} {
		if len(files) == 0 {
			continue
		}
		spec := l.ClassSpec(Class(c))
		spec.Train = filepath.Join(dir, classNames[c])
		ds, err := dataset.Open(&spec, spec.Train)
		if err != nil {
			return nil, fmt.Errorf("classify: %s: %w: %w", dir, ErrLayout, err)
		}
		l.data[c] = ds
		for _, g := range ds.RowGroups() {
			l.refs[c] = append(l.refs[c], BatchRef{Class: Class(c), Group: g})
		}
		want := m.HotBatches
		if c == coldClass {
			want = m.ColdBatches
		}
		if len(l.refs[c]) != want {
			return nil, fmt.Errorf("classify: %s: %d %s batches on disk, manifest says %d: %w", dir, len(l.refs[c]), classNames[c], want, ErrLayout)
		}
	}
	return l, nil
}

// ClassSpec is the spec to read a class's files with: for Hot, every sparse
// column holds slots of the packed hot table.
func (l *Layout) ClassSpec(c Class) dataset.Spec {
	s := l.Manifest.Spec
	s.Sparse = append([]dataset.SparseFeature(nil), s.Sparse...)
	s.Test = ""
	if c == Hot {
		for i := range s.Sparse {
			s.Sparse[i].Rows = max(l.hot.Rows(), 1)
			s.Sparse[i].Table = ""
		}
	}
	return s
}

// HotSet returns the layout's hot rows and their slots.
func (l *Layout) HotSet() *HotSet { return l.hot }

// Batches returns the mini-batches of class c in stored (shuffled) order.
func (l *Layout) Batches(c Class) []BatchRef { return l.refs[c] }

// TestSpec returns the spec of the copied test split, or false if none.
func (l *Layout) TestSpec() (dataset.Spec, bool) {
	if !l.Manifest.HasTest {
		return dataset.Spec{}, false
	}
	s := l.Manifest.Spec
	if ts := l.Manifest.TestSpec; ts != nil {
		s = *ts
	}
	s.Train = filepath.Join(l.Dir, "test")
	s.Test = ""
	return s, true
}

// Stream reads chosen mini-batches in order, on the caller's goroutine. It
// keeps one reader per part file over that file's mini-batches, so a file is
// opened once per stream rather than once per mini-batch.
type Stream struct {
	refs    []BatchRef
	readers map[string]*dataset.Reader
	next    int
}

// OpenBatches returns a Stream over refs (of either class, in the given order).
func (l *Layout) OpenBatches(refs []BatchRef) (*Stream, error) {
	type key struct {
		c    Class
		file string
	}
	groups := map[key][]dataset.RowGroup{}
	var order []key
	for _, ref := range refs {
		if l.data[ref.Class] == nil {
			return nil, fmt.Errorf("classify: no %s batches in %s: %w", ref.Class, l.Dir, ErrLayout)
		}
		k := key{ref.Class, ref.Group.File}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], ref.Group)
	}
	s := &Stream{refs: refs, readers: map[string]*dataset.Reader{}}
	for _, k := range order {
		r, err := l.data[k.c].NewReader(dataset.ReaderOptions{RowGroups: groups[k], BatchRows: l.Manifest.BatchSize})
		if err != nil {
			s.Close()
			return nil, err
		}
		s.readers[k.file] = r
	}
	return s, nil
}

// Next returns the next mini-batch and its reference, or io.EOF.
func (s *Stream) Next(ctx context.Context) (*dataset.Batch, BatchRef, error) {
	if s.next >= len(s.refs) {
		return nil, BatchRef{}, io.EOF
	}
	ref := s.refs[s.next]
	b, err := s.readers[ref.Group.File].Next(ctx)
	if err == io.EOF {
		err = fmt.Errorf("classify: %s row group %d is missing or empty: %w", ref.Group.File, ref.Group.Index, ErrLayout)
	}
	if err != nil {
		return nil, ref, err
	}
	s.next++
	return b, ref, nil
}

// Close releases the stream's files.
func (s *Stream) Close() error {
	var errs []error
	for _, r := range s.readers {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

// BatchReader streams mini-batches, decoding up to Prefetch ahead on a
// background goroutine so reading overlaps the caller's compute.
type BatchReader struct {
	ch     chan result
	cancel context.CancelFunc
	done   chan struct{}
}

type result struct {
	b   *dataset.Batch
	ref BatchRef
	err error
}

// NewReader returns a prefetching reader over refs (of either class, in the
// given order). prefetch < 1 means 1.
func (l *Layout) NewReader(ctx context.Context, refs []BatchRef, prefetch int) *BatchReader {
	ctx, cancel := context.WithCancel(ctx)
	br := &BatchReader{ch: make(chan result, max(prefetch, 1)), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(br.done)
		defer close(br.ch)
		s, err := l.OpenBatches(refs)
		if err != nil {
			br.send(ctx, result{err: err})
			return
		}
		defer s.Close()
		for range refs {
			b, ref, err := s.Next(ctx)
			if !br.send(ctx, result{b: b, ref: ref, err: err}) || err != nil {
				return
			}
		}
	}()
	return br
}

func (br *BatchReader) send(ctx context.Context, r result) bool {
	select {
	case br.ch <- r:
		return true
	case <-ctx.Done():
		return false
	}
}

// Next returns the next mini-batch and its reference, or io.EOF.
func (br *BatchReader) Next(ctx context.Context) (*dataset.Batch, BatchRef, error) {
	select {
	case r, ok := <-br.ch:
		if !ok {
			return nil, BatchRef{}, io.EOF
		}
		return r.b, r.ref, r.err
	case <-ctx.Done():
		return nil, BatchRef{}, ctx.Err()
	}
}

// Close stops the background reader.
func (br *BatchReader) Close() {
	br.cancel()
	for range br.ch {
	}
	<-br.done
}

// Verify checks a layout against its manifest: counts, full batches, every
// hot row's IDs valid hot slots, every cold row holding a cold ID, and the
// digest of the rows (with hot slots mapped back to IDs) equal to the input's.
// When input is not nil the input's digest is recomputed too.
func Verify(ctx context.Context, dir string, input *dataset.Dataset) error {
	l, err := Open(dir)
	if err != nil {
		return err
	}
	m := l.Manifest
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("classify: verify %s: "+format+": %w", append(append([]any{dir}, a...), ErrLayout)...))
	}
	if m.HotRows+m.ColdRows != m.RowsIn {
		bad("hot %d + cold %d rows != %d input rows", m.HotRows, m.ColdRows, m.RowsIn)
	}
	spec := m.Spec
	ft := spec.FeatureTable()
	var dig Digest
	var rows [2]int64
	for c := range 2 {
		refs := l.Batches(Class(c))
		br := l.NewReader(ctx, refs, 2)
		for i := range refs {
			b, ref, err := br.Next(ctx)
			if err != nil {
				br.Close()
				return err
			}
			if b.N != m.BatchSize && i != len(refs)-1 {
				bad("%s batch %d (%s row group %d) has %d rows, want %d", classNames[c], i, ref.Group.File, ref.Group.Index, b.N, m.BatchSize)
			}
			rows[c] += int64(b.N)
			for f := range b.Sparse {
				ids := b.Sparse[f].IDs
				for k, id := range ids {
					if c == hotClass {
						if id < 0 || id >= l.hot.Rows() {
							bad("hot batch %d: slot %d out of range", i, id)
							continue
						}
						t, orig := l.hot.ID(id)
						if t != ft[f] {
							bad("hot batch %d feature %s: slot %d belongs to table %d, not %d", i, spec.Sparse[f].Name, id, t, ft[f])
						}
						ids[k] = orig
					}
				}
			}
			for r := 0; r < b.N; r++ {
				if c == coldClass {
					cold := false
					for f := range b.Sparse {
						for _, id := range b.Sparse[f].Row(r) {
							if _, ok := l.hot.Slot(ft[f], id); !ok {
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
				br.Close()
				return errors.Join(errs...)
			}
		}
		br.Close()
	}
	if rows[hotClass] != m.HotRows || rows[coldClass] != m.ColdRows {
		bad("files hold %d hot and %d cold rows, manifest says %d and %d", rows[hotClass], rows[coldClass], m.HotRows, m.ColdRows)
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
