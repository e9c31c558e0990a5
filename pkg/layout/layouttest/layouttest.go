// Package layouttest writes small FAE layouts whose mini-batches are given
// one by one, for the tests of the packages that read layouts (pkg/layout
// and pkg/train). pkg/classify builds real layouts from a dataset.
package layouttest

import (
	"path/filepath"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// Write writes a layout to dir and opens it. spec describes the input rows
// (its tables and features; paths and p_true are dropped as classify
// drops them) and hot lists each table's hot IDs in spec.Tables() order.
// batches[c] are the mini-batches of class c in stored order, each of at
// most batchSize rows and holding table IDs; those of layout.Hot must hold
// hot IDs only, and are stored as slots. Each class is one part file with
// one row group per mini-batch. The manifest counts the rows; it has no
// digest and no test split.
func Write(tb testing.TB, dir string, spec *dataset.Spec, batchSize int, hot [][]int64, batches [2][]*dataset.Batch) *layout.Layout {
	tb.Helper()
	tables := spec.Tables()
	rows := make([]int64, len(tables))
	for t, tab := range tables {
		rows[t] = tab.Rows
	}
	hs, err := layout.NewHotSet(hot, rows)
	if err != nil {
		tb.Fatal(err)
	}
	rowSpec := layout.RowSpec(spec)
	m := &layout.Manifest{
		Version: layout.ManifestVersion, Picasso: "layouttest", Spec: rowSpec, BatchSize: batchSize,
		HotTableRows: hs.Rows(),
	}
	for t, tab := range tables {
		m.Tables = append(m.Tables, layout.ManifestTable{Name: tab.Name, Rows: tab.Rows, HotRows: hs.TableRows(t), Offset: hs.Offset(t)})
	}
	ft := spec.FeatureTable()
	for _, c := range []layout.Class{layout.Hot, layout.Cold} {
		if len(batches[c]) == 0 {
			continue
		}
		name := c.String() + "/part-00000.parquet"
		wspec, ids := rowSpec, dataset.SlotInt64
		if c == layout.Hot {
			wspec, ids = layout.HotSpec(&rowSpec, hs.Rows()), dataset.SlotInt32
		}
		w, err := dataset.NewWriter(filepath.Join(dir, name), &wspec, dataset.WriterOptions{RowGroupRows: batchSize, IDs: ids})
		if err != nil {
			tb.Fatal(err)
		}
		part := layout.PartFile{Name: name}
		for i, b := range batches[c] {
			if b.N > batchSize {
				tb.Fatalf("layouttest: %s mini-batch %d has %d rows, more than %d", c, i, b.N, batchSize)
			}
			if c == layout.Hot {
				b = toSlots(tb, hs, ft, b, i)
			}
			if err := w.WriteBatch(b); err != nil {
				tb.Fatal(err)
			}
			if err := w.EndRowGroup(); err != nil {
				tb.Fatal(err)
			}
			part.Batches++
			part.Rows += int64(b.N)
		}
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
		if c == layout.Hot {
			m.HotFiles, m.HotBatches, m.HotRows = []layout.PartFile{part}, part.Batches, part.Rows
		} else {
			m.ColdFiles, m.ColdBatches, m.ColdRows = []layout.PartFile{part}, part.Batches, part.Rows
		}
	}
	m.RowsIn = m.HotRows + m.ColdRows
	if m.RowsIn > 0 {
		m.HotInputShare = float64(m.HotRows) / float64(m.RowsIn)
	}
	if err := layout.WriteHotmap(filepath.Join(dir, layout.HotmapFile), hs, rows); err != nil {
		tb.Fatal(err)
	}
	if err := layout.WriteManifest(dir, m); err != nil {
		tb.Fatal(err)
	}
	l, err := layout.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// toSlots returns a copy of hot mini-batch i with its table IDs replaced
// by their slots.
func toSlots(tb testing.TB, hs *layout.HotSet, ft []int, b *dataset.Batch, i int) *dataset.Batch {
	out := *b
	out.Sparse = make([]dataset.SparseColumn, len(b.Sparse))
	for f, col := range b.Sparse {
		ids := make([]int64, len(col.IDs))
		for k, id := range col.IDs {
			s, ok := hs.Slot(ft[f], id)
			if !ok {
				tb.Fatalf("layouttest: hot mini-batch %d, feature %d: ID %d of table %d is not hot", i, f, id, ft[f])
			}
			ids[k] = int64(s)
		}
		out.Sparse[f] = dataset.SparseColumn{IDs: ids, Offsets: col.Offsets}
	}
	return &out
}
