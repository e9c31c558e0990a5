package train

import (
	"context"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// collectRaw reads k mini-batches from a raw stream.
func collectRaw(t *testing.T, s *rawStream, k int) []rawItem {
	t.Helper()
	var out []rawItem
	for range k {
		it, err := s.next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, it)
	}
	return out
}

func TestRawStreamBatchesEpochsAndResume(t *testing.T) {
	spec := synthSpec(true, false)
	rows := synthRows(&spec, 230, 50, 1)
	ds := writeData(t, &spec, rows, t.TempDir(), 40) // 6 row groups: 5 of 40, 1 of 30
	const batch = 64                                 // 230 = 3×64 + 38
	s := newRawStream(ds, batch, 9, 0, 0)
	defer s.close()
	items := collectRaw(t, s, 8) // two epochs
	wantN := []int{64, 64, 64, 38, 64, 64, 64, 38}
	wantEpoch := []int{0, 0, 0, 0, 1, 1, 1, 1}
	wantRows := []int64{64, 128, 192, 230, 64, 128, 192, 230}
	for i, it := range items {
		if it.b.N != wantN[i] || it.epoch != wantEpoch[i] || it.rows != wantRows[i] {
			t.Errorf("batch %d: %d rows, epoch %d, position %d; want %d, %d, %d", i, it.b.N, it.epoch, it.rows, wantN[i], wantEpoch[i], wantRows[i])
		}
		if len(it.b.Label) != it.b.N || len(it.b.Dense) != 3*it.b.N || len(it.b.Sparse[3].Offsets) != it.b.N+1 {
			t.Errorf("batch %d: inconsistent columns", i)
		}
	}
	// Every row once per epoch: compare the multiset of dense values.
	for e := range 2 {
		seen := map[float32]int{}
		for _, b := range rows {
			for i := range b.N {
				seen[b.Dense[3*i]]++
			}
		}
		for _, it := range items[4*e : 4*e+4] {
			for i := range it.b.N {
				seen[it.b.Dense[3*i]]--
			}
		}
		for v, c := range seen {
			if c != 0 {
				t.Fatalf("epoch %d: dense value %v seen %d times too few", e, v, c)
			}
		}
	}
	if sameFloats(items[0].b.Dense, items[4].b.Dense) == nil {
		t.Error("epochs 0 and 1 start with the same batch: row groups not reshuffled")
	}
	// Resuming at any position gives the same following batches.
	for k := range items[:7] {
		r := newRawStream(ds, batch, 9, items[k].epoch, items[k].rows)
		got := collectRaw(t, r, 1)[0]
		r.close()
		want := items[k+1]
		if got.b.N != want.b.N || got.epoch != want.epoch || got.rows != want.rows {
			t.Fatalf("resume after batch %d: (%d rows, epoch %d, pos %d); want (%d, %d, %d)", k, got.b.N, got.epoch, got.rows, want.b.N, want.epoch, want.rows)
		}
		if err := sameFloats(got.b.Dense, want.b.Dense); err != nil {
			t.Fatalf("resume after batch %d: dense differ: %v", k, err)
		}
		for f := range got.b.Sparse {
			if !equalInts(got.b.Sparse[f].IDs, want.b.Sparse[f].IDs) {
				t.Fatalf("resume after batch %d: feature %d IDs differ", k, f)
			}
		}
	}
}

func equalInts[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLayoutFeederMixed reads an epoch of a layout in mixed order: every
// row once, hot mini-batches with table IDs.
func TestLayoutFeederMixed(t *testing.T) {
	spec := synthSpec(false, false)
	rows := synthRows(&spec, 400, 100, 2)
	l := writeLayout(t, &spec, rows, 32, []int64{20, 10, 15, 8}, 1)
	if l.NumBatches(layout.Hot) < 2 || l.NumBatches(layout.Cold) < 2 {
		t.Fatalf("layout has %d hot and %d cold batches; the tests need both classes", l.NumBatches(layout.Hot), l.NumBatches(layout.Cold))
	}
	f := newLayoutFeeder(l, 1, 0, true, 0)
	if err := f.start(0, [2]int{}); err != nil {
		t.Fatal(err)
	}
	defer f.close()
	total := 0
	for {
		c, ok := f.nextMixed()
		if !ok {
			break
		}
		b, err := f.take(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		total += b.N
		if c == layout.Hot {
			for fi, col := range b.Sparse {
				for _, id := range col.IDs {
					if id >= []int64{20, 10, 15, 8}[fi] {
						t.Fatalf("translated hot batch holds id %d of feature %d, not a hot id", id, fi)
					}
				}
			}
		}
	}
	if total != 400 {
		t.Fatalf("an epoch of the layout has %d rows; want 400", total)
	}
}

var _ = dataset.Batch{}

func TestProportionalEpoch(t *testing.T) {
	for _, c := range []struct {
		full  [2]int
		steps int64
		want  [2]int
	}{
		{[2]int{30, 70}, 0, [2]int{30, 70}},
		{[2]int{30, 70}, 100, [2]int{30, 70}},
		{[2]int{30, 70}, 250, [2]int{30, 70}},
		{[2]int{30, 70}, 10, [2]int{3, 7}},
		{[2]int{1, 2}, 1, [2]int{0, 1}},
		{[2]int{0, 50}, 7, [2]int{0, 7}},
		{[2]int{25, 75}, 2, [2]int{1, 1}}, // 0.5 rounds up to one cold
	} {
		if got := proportionalEpoch(c.full, c.steps); got != c.want {
			t.Errorf("proportionalEpoch(%v, %d) = %v; want %v", c.full, c.steps, got, c.want)
		}
	}
}
