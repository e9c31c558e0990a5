package layout_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
	"github.com/picasso-ctr/picasso/pkg/layout/layouttest"
)

// testSpec has two one-hot features sharing a table and a multi-hot one.
func testSpec() *dataset.Spec {
	return &dataset.Spec{
		Label: "label", Dense: []string{"d0"},
		Sparse: []dataset.SparseFeature{
			{Name: "a", Rows: 50, Table: "shared"},
			{Name: "b", Rows: 50, Table: "shared"},
			{Name: "m", Rows: 20, MultiHot: true},
		},
	}
}

// testBatch returns a mini-batch of n rows whose dense value is first+i
// (it names the row) and whose IDs are drawn by id(row, feature, k).
func testBatch(n int, first float32, id func(i, f, k int) int64) *dataset.Batch {
	b := &dataset.Batch{N: n, Label: make([]float32, n), Dense: make([]float32, n), Sparse: make([]dataset.SparseColumn, 3)}
	b.Sparse[2].Offsets = []int32{0}
	for i := range n {
		b.Label[i] = float32(i % 2)
		b.Dense[i] = first + float32(i)
		b.Sparse[0].IDs = append(b.Sparse[0].IDs, id(i, 0, 0))
		b.Sparse[1].IDs = append(b.Sparse[1].IDs, id(i, 1, 0))
		for k := range i % 3 { // 0 to 2 IDs: empty bags happen
			b.Sparse[2].IDs = append(b.Sparse[2].IDs, id(i, 2, k))
		}
		b.Sparse[2].Offsets = append(b.Sparse[2].Offsets, int32(len(b.Sparse[2].IDs)))
	}
	return b
}

// hotIDs: the shared table's hot IDs are 10..19, table m's 3, 5 and 7;
// slots are not IDs.
var hotIDs = [][]int64{{19, 18, 17, 16, 15, 14, 13, 12, 11, 10}, {7, 5, 3}}

// writeTest writes a layout of three hot and two cold mini-batches of
// batch size 4 (the last of each class short) and returns it with the
// mini-batches as written.
func writeTest(t *testing.T) (*layout.Layout, [2][]*dataset.Batch) {
	t.Helper()
	hot := func(i, f, k int) int64 {
		if f == 2 {
			return []int64{3, 5, 7}[(i+k)%3]
		}
		return 10 + int64(i*3+f+k)%10
	}
	cold := func(i, f, k int) int64 {
		if f == 2 {
			return int64(i*7+k) % 20
		}
		return int64(i*7+f*13) % 50
	}
	var batches [2][]*dataset.Batch
	batches[layout.Hot] = []*dataset.Batch{testBatch(4, 0, hot), testBatch(4, 100, hot), testBatch(3, 200, hot)}
	batches[layout.Cold] = []*dataset.Batch{testBatch(4, 1000, cold), testBatch(2, 1100, cold)}
	return layouttest.Write(t, t.TempDir(), testSpec(), 4, hotIDs, batches), batches
}

func readAll(t *testing.T, l *layout.Layout, c layout.Class, idx []int, o layout.StreamOptions) []*dataset.Batch {
	t.Helper()
	s, err := l.Stream(c, idx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []*dataset.Batch
	for {
		b, err := s.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if _, err := s.Next(context.Background()); err != io.EOF {
		t.Fatalf("Next after the end = %v; want io.EOF again", err)
	}
	return out
}

// sameRows reports how got differs from want, IDs included.
func sameRows(got, want *dataset.Batch) error {
	if got.N != want.N || !slices.Equal(got.Dense, want.Dense) || !slices.Equal(got.Label, want.Label) {
		return fmt.Errorf("%d rows, dense %v; want %d, %v", got.N, got.Dense, want.N, want.Dense)
	}
	for f := range want.Sparse {
		g, w := got.Sparse[f], want.Sparse[f]
		if !slices.Equal(g.IDs, w.IDs) || !slices.Equal(g.Offsets, w.Offsets) {
			return fmt.Errorf("feature %d: IDs %v offsets %v; want %v, %v", f, g.IDs, g.Offsets, w.IDs, w.Offsets)
		}
	}
	return nil
}

func TestStreamOrderAndTableIDs(t *testing.T) {
	l, batches := writeTest(t)
	if l.NumBatches(layout.Hot) != 3 || l.NumBatches(layout.Cold) != 2 {
		t.Fatalf("NumBatches = %d hot, %d cold; want 3, 2", l.NumBatches(layout.Hot), l.NumBatches(layout.Cold))
	}
	hs := l.HotSet()
	ft := l.Manifest.Spec.FeatureTable()
	for _, depth := range []int{0, 1, 3} {
		for _, c := range []layout.Class{layout.Hot, layout.Cold} {
			idx := []int{2, 0, 1}
			if c == layout.Cold {
				idx = []int{1, 0}
			}
			for _, tableIDs := range []bool{false, true} {
				got := readAll(t, l, c, idx, layout.StreamOptions{Prefetch: depth, TableIDs: tableIDs})
				if len(got) != len(idx) {
					t.Fatalf("depth %d, %s: read %d mini-batches; want %d", depth, c, len(got), len(idx))
				}
				for i, k := range idx {
					want := batches[c][k]
					if c == layout.Hot && !tableIDs {
						// Slots as stored: each maps to the table ID written.
						for f, col := range got[i].Sparse {
							for j, s := range col.IDs {
								if tb, id := hs.ID(s); tb != ft[f] || id != want.Sparse[f].IDs[j] {
									t.Fatalf("depth %d: hot mini-batch %d feature %d: slot %d is table %d ID %d; want table %d ID %d",
										depth, k, f, s, tb, id, ft[f], want.Sparse[f].IDs[j])
								}
								if s == want.Sparse[f].IDs[j] {
									t.Fatalf("hot mini-batch %d feature %d holds ID %d, not its slot", k, f, s)
								}
							}
						}
						continue
					}
					if err := sameRows(got[i], want); err != nil {
						t.Fatalf("depth %d, %s mini-batch %d (table IDs %v): %v", depth, c, k, tableIDs, err)
					}
				}
			}
		}
	}
	if got := readAll(t, l, layout.Hot, nil, layout.StreamOptions{}); len(got) != 0 {
		t.Fatalf("a stream over no mini-batches read %d", len(got))
	}
	for _, idx := range [][]int{{3}, {-1}} {
		if _, err := l.Stream(layout.Hot, idx, layout.StreamOptions{}); !errors.Is(err, layout.ErrInvalid) {
			t.Errorf("Stream(hot, %v) = %v; want ErrInvalid", idx, err)
		}
	}
}

// TestTableIDsRejectsForeignSlot writes a hot mini-batch holding a slot of
// another table: mapping it back is an error that names the file, the row
// group, the feature and the table's slots.
func TestTableIDsRejectsForeignSlot(t *testing.T) {
	l, _ := writeTest(t)
	spec := layout.HotSpec(&l.Manifest.Spec, l.HotSet().Rows())
	hot := filepath.Join(l.Dir, "hot", "part-00000.parquet")
	w, err := dataset.NewWriter(hot, &spec, dataset.WriterOptions{RowGroupRows: 4, IDs: dataset.SlotInt32})
	if err != nil {
		t.Fatal(err)
	}
	slot := func(i, f, k int) int64 {
		if f == 2 {
			return 10 + int64(k) // table m's slots
		}
		if i == 1 && f == 1 {
			return 11 // table m's slot in a feature of the shared table
		}
		return int64(i)
	}
	for _, n := range []int{4, 4, 3} { // the rows the manifest lists
		if err := w.WriteBatch(testBatch(n, 0, slot)); err != nil {
			t.Fatal(err)
		}
		if err := w.EndRowGroup(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = layout.Open(l.Dir); err != nil {
		t.Fatal(err)
	}
	s, err := l.Stream(layout.Hot, []int{1}, layout.StreamOptions{TableIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Next(context.Background())
	if !errors.Is(err, layout.ErrInvalid) {
		t.Fatalf("Next = %v; want ErrInvalid", err)
	}
	for _, want := range []string{hot, "row group 1", "feature b", "slot 11", "table 0's hot slots [0, 10)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestOpenRejectsIncompleteLayouts(t *testing.T) {
	l, _ := writeTest(t)
	for _, tc := range []struct {
		name   string
		damage func(dir string) error
	}{
		{"no manifest", func(dir string) error { return os.Remove(filepath.Join(dir, layout.ManifestFile)) }},
		{"no hotmap", func(dir string) error { return os.Remove(filepath.Join(dir, layout.HotmapFile)) }},
		{"missing part", func(dir string) error { return os.Remove(filepath.Join(dir, "cold", "part-00000.parquet")) }},
		{"other version", func(dir string) error {
			m, err := layout.ReadManifest(dir)
			if err != nil {
				return err
			}
			m.Version++
			return layout.WriteManifest(dir, m)
		}},
		{"batch count", func(dir string) error {
			m, err := layout.ReadManifest(dir)
			if err != nil {
				return err
			}
			m.HotBatches++
			return layout.WriteManifest(dir, m)
		}},
		{"batch size", editManifest(func(m *layout.Manifest) { m.BatchSize = 3 })}, // batches of 4 were written
		{"per-file rows", editManifest(func(m *layout.Manifest) {
			// The totals stay consistent; only the file's own count is wrong.
			m.ColdFiles[0].Rows++
			m.ColdRows++
			m.RowsIn++
		})},
		{"class rows", editManifest(func(m *layout.Manifest) { m.HotRows--; m.ColdRows++ })},
		{"rows in", editManifest(func(m *layout.Manifest) { m.RowsIn = 1e12 })},
		{"listed file missing", editManifest(func(m *layout.Manifest) {
			m.ColdFiles = append(m.ColdFiles, layout.PartFile{Name: "cold/part-00099.parquet"})
		})},
		{"unlisted file", func(dir string) error {
			b, err := os.ReadFile(filepath.Join(dir, "cold", "part-00000.parquet"))
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "cold", "part-00001.parquet"), b, 0o644)
		}},
		{"table hot rows", editManifest(func(m *layout.Manifest) { m.Tables[0].HotRows++ })},
		{"table rows", editManifest(func(m *layout.Manifest) { m.Tables[0].Rows = 1e12 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(l.Dir)); err != nil {
				t.Fatal(err)
			}
			if _, err := layout.Open(dir); err != nil {
				t.Fatalf("Open of the intact copy: %v", err)
			}
			if err := tc.damage(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := layout.Open(dir); !errors.Is(err, layout.ErrInvalid) {
				t.Fatalf("Open = %v; want ErrInvalid", err)
			}
		})
	}
}

// editManifest returns a damage that rewrites the manifest with edit applied.
func editManifest(edit func(*layout.Manifest)) func(dir string) error {
	return func(dir string) error {
		m, err := layout.ReadManifest(dir)
		if err != nil {
			return err
		}
		edit(m)
		return layout.WriteManifest(dir, m)
	}
}

func TestClassSpec(t *testing.T) {
	l, _ := writeTest(t)
	hot, cold := l.ClassSpec(layout.Hot), l.ClassSpec(layout.Cold)
	for f := range hot.Sparse {
		if hot.Sparse[f].Rows != 13 || hot.Sparse[f].Table != "" {
			t.Errorf("hot feature %d: %d rows, table %q; want the 13 hot slots, its own table", f, hot.Sparse[f].Rows, hot.Sparse[f].Table)
		}
		want := testSpec().Sparse[f]
		want.IDs = dataset.IDIndex
		if cold.Sparse[f] != want {
			t.Errorf("cold feature %d: %+v; want %+v", f, cold.Sparse[f], want)
		}
	}
	if l.Manifest.Spec.Sparse[0].Rows != 50 {
		t.Error("ClassSpec changed the manifest's spec")
	}
	if _, ok := l.TestSpec(); ok {
		t.Error("TestSpec of a layout without a test split")
	}
}

// Table t's hot rows take slots [Offset(t), Offset(t)+TableRows(t)) in
// ascending ID order, whatever order they are listed in.
func ExampleNewHotSet() {
	h, err := layout.NewHotSet([][]int64{{9, 2, 4}, {0}}, []int64{10, 5})
	if err != nil {
		panic(err)
	}
	for slot := range h.Rows() {
		t, id := h.ID(slot)
		fmt.Printf("slot %d: table %d ID %d\n", slot, t, id)
	}
	_, ok := h.Slot(0, 3)
	fmt.Println("table 0 ID 3 hot:", ok)
	// Output:
	// slot 0: table 0 ID 2
	// slot 1: table 0 ID 4
	// slot 2: table 0 ID 9
	// slot 3: table 1 ID 0
	// table 0 ID 3 hot: false
}
