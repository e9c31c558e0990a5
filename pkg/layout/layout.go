package layout

import (
	"fmt"
	"path/filepath"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// Layout is an opened layout.
type Layout struct {
	// Dir is the layout's directory, as given to Open.
	Dir string
	// Manifest is the layout's manifest.json.
	Manifest *Manifest

	hot     *HotSet
	featTab []int // table of each sparse feature
	data    [2]*dataset.Dataset
	groups  [2][]dataset.RowGroup // per class, the mini-batches in stored order
}

// Open reads a layout's manifest and hotmap and indexes its mini-batches.
func Open(dir string) (*Layout, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	hot, err := ReadHotmap(filepath.Join(dir, HotmapFile))
	if err != nil {
		return nil, err
	}
	if n := len(m.Spec.Tables()); hot.Tables() != n {
		return nil, fmt.Errorf("layout: %s: the hotmap has %d tables, the manifest's spec %d: %w", dir, hot.Tables(), n, ErrInvalid)
	}
	l := &Layout{Dir: dir, Manifest: m, hot: hot, featTab: m.Spec.FeatureTable()}
	for _, c := range []Class{Hot, Cold} {
		files, want := m.HotFiles, m.HotBatches
		if c == Cold {
			files, want = m.ColdFiles, m.ColdBatches
		}
		if len(files) == 0 {
			continue
		}
		spec := l.ClassSpec(c)
		spec.Train = filepath.Join(dir, c.String())
		ds, err := dataset.Open(&spec, spec.Train)
		if err != nil {
			return nil, fmt.Errorf("layout: %s: %w: %w", dir, ErrInvalid, err)
		}
		l.data[c] = ds
		l.groups[c] = ds.RowGroups()
		if len(l.groups[c]) != want {
			return nil, fmt.Errorf("layout: %s: %d %s batches on disk, manifest says %d: %w", dir, len(l.groups[c]), c, want, ErrInvalid)
		}
	}
	return l, nil
}

// RowSpec is the spec of the rows a layout stores for input rows of spec
// in: sparse IDs are row indices of their tables (an input's hashing is
// applied when it is read), there is no p_true column and no path.
func RowSpec(in *dataset.Spec) dataset.Spec {
	o := *in
	o.Train = ""
	o.Test = ""
	o.PTrue = ""
	o.Sparse = append([]dataset.SparseFeature(nil), in.Sparse...)
	for i := range o.Sparse {
		o.Sparse[i].IDs = dataset.IDIndex
	}
	o.Dense = append([]string(nil), in.Dense...)
	return o
}

// HotSpec is the spec of hot mini-batches whose rows have spec rows: every
// sparse column holds slots of the packed hot table of hotRows rows.
func HotSpec(rows *dataset.Spec, hotRows int64) dataset.Spec {
	s := *rows
	s.Sparse = append([]dataset.SparseFeature(nil), rows.Sparse...)
	for i := range s.Sparse {
		s.Sparse[i].Rows = max(hotRows, 1)
		s.Sparse[i].Table = ""
	}
	return s
}

// ClassSpec is the spec to read a class's files with: for Hot, every sparse
// column holds slots of the packed hot table (see HotSpec).
func (l *Layout) ClassSpec(c Class) dataset.Spec {
	s := l.Manifest.Spec
	s.Test = ""
	if c == Hot {
		return HotSpec(&s, l.hot.Rows())
	}
	s.Sparse = append([]dataset.SparseFeature(nil), s.Sparse...)
	return s
}

// HotSet returns the layout's hot rows and their slots.
func (l *Layout) HotSet() *HotSet { return l.hot }

// NumBatches returns the number of mini-batches of class c.
func (l *Layout) NumBatches(c Class) int { return len(l.groups[c]) }

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
