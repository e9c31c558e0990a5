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
	if err := checkManifest(m, hot); err != nil {
		return nil, fmt.Errorf("layout: %s: %w", dir, err)
	}
	l := &Layout{Dir: dir, Manifest: m, hot: hot, featTab: m.Spec.FeatureTable()}
	for _, c := range []Class{Hot, Cold} {
		files, want := m.HotFiles, m.HotBatches
		wantRows := m.HotRows
		if c == Cold {
			files, want, wantRows = m.ColdFiles, m.ColdBatches, m.ColdRows
		}
		if len(files) == 0 {
			if want != 0 || wantRows != 0 {
				return nil, fmt.Errorf("layout: %s: no %s files listed, but %d batches of %d rows: %w", dir, c, want, wantRows, ErrInvalid)
			}
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
		if err := checkParts(dir, c, files, l.groups[c], m.BatchSize, wantRows); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// checkManifest checks the manifest's own totals and its tables against the
// hotmap.
func checkManifest(m *Manifest, hot *HotSet) error {
	if m.BatchSize < 1 {
		return fmt.Errorf("batch_size %d: %w", m.BatchSize, ErrInvalid)
	}
	if m.HotRows < 0 || m.ColdRows < 0 || m.HotRows+m.ColdRows != m.RowsIn {
		return fmt.Errorf("hot %d + cold %d rows != %d input rows: %w", m.HotRows, m.ColdRows, m.RowsIn, ErrInvalid)
	}
	tables := m.Spec.Tables()
	if len(m.Tables) != len(tables) {
		return fmt.Errorf("%d tables listed, the spec has %d: %w", len(m.Tables), len(tables), ErrInvalid)
	}
	for t, mt := range m.Tables {
		if mt.Name != tables[t].Name || mt.Rows != tables[t].Rows {
			return fmt.Errorf("table %d is %s with %d rows, the spec says %s with %d: %w", t, mt.Name, mt.Rows, tables[t].Name, tables[t].Rows, ErrInvalid)
		}
		if mt.HotRows != hot.TableRows(t) || mt.Offset != hot.Offset(t) || mt.HotRows > mt.Rows {
			return fmt.Errorf("table %s: %d hot rows at slot %d, the hotmap holds %d at %d (of %d rows): %w",
				mt.Name, mt.HotRows, mt.Offset, hot.TableRows(t), hot.Offset(t), mt.Rows, ErrInvalid)
		}
	}
	return nil
}

// checkParts checks a class's files on disk against the manifest: the same
// files in order, each with its listed batches and rows, no batch above
// batchSize rows, and the class's rows in all.
func checkParts(dir string, c Class, files []PartFile, groups []dataset.RowGroup, batchSize int, wantRows int64) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("layout: %s: %s: "+format+": %w", append(append([]any{dir, c}, a...), ErrInvalid)...)
	}
	g, total := 0, int64(0)
	for _, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		var batches int
		var rows int64
		for ; g < len(groups) && groups[g].File == path; g++ {
			// A mini-batch is one row group of at most batchSize rows
			// (classify fills all but the last; verify checks that).
			if n := groups[g].Rows; n > int64(batchSize) || n < 1 {
				return bad("%s row group %d has %d rows; the batch size is %d", f.Name, groups[g].Index, n, batchSize)
			}
			batches++
			rows += groups[g].Rows
		}
		if batches == 0 {
			return bad("%s is listed but not on disk (or empty)", f.Name)
		}
		if batches != f.Batches || rows != f.Rows {
			return bad("%s holds %d batches of %d rows in all, the manifest says %d and %d", f.Name, batches, rows, f.Batches, f.Rows)
		}
		total += rows
	}
	if g != len(groups) {
		return bad("%s is on disk but not listed", groups[g].File)
	}
	if total != wantRows {
		return bad("%d rows on disk, the manifest says %d", total, wantRows)
	}
	return nil
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

// ClassData returns the files of class c as a dataset (read with ClassSpec:
// hot files hold slots, not table IDs). Its row groups are the class's
// mini-batches in stored order.
func (l *Layout) ClassData(c Class) *dataset.Dataset { return l.data[c] }

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
