package profile

import (
	"math"
	"slices"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// TestKeptRowsRule checks keptRows against its definition, a row kept when
// unitFloat of its position's hash is below the rate, at rates near 0, 1
// and in between, and for a run longer than its first guess of the rows.
func TestKeptRowsRule(t *testing.T) {
	for _, rate := range []float64{1e-9, 0.001, 0.29, 0.5, 0.999999, 1} {
		l := &Logger{keepRate: rate, keepKey: 0x1234}
		pos := dataset.Position{File: "/x/part-3.parquet", RowGroup: 7, Row: 1000}
		got := l.keptRows(pos, 20000)
		var want []int32
		fh := stringHash("part-3.parquet")
		for i := range 20000 {
			if rate >= 1 || unitFloat(rowHash(groupKey(l.keepKey, fh, 7), 1000+int64(i))) < rate {
				want = append(want, int32(i))
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("rate %v: %d rows kept, want %d", rate, len(got), len(want))
		}
		// One mixing a row of a SplitMix64 sequence: the share kept is
		// the rate, within five standard deviations.
		if sd := math.Sqrt(rate * (1 - rate) / 20000); math.Abs(float64(len(got))/20000-rate) > 5*sd+1e-9 {
			t.Fatalf("rate %v: kept %d of 20000 rows", rate, len(got))
		}
	}
	// Rates whose 2^53 multiple is not an integer, at hashes on either
	// side of the threshold, and a run that outgrows the first guess.
	l := &Logger{keepRate: 0.3, keepKey: 99}
	pos := dataset.Position{File: "a", Row: 5}
	if got := l.keptRows(pos, 0); len(got) != 0 {
		t.Fatalf("no rows: %v", got)
	}
	l.keepRate = math.Nextafter(0.3, 1)
	fh := stringHash("a")
	n := 0
	for i := range 5000 {
		if unitFloat(rowHash(groupKey(99, fh, 0), 5+int64(i))) < l.keepRate {
			n++
		}
	}
	if got := l.keptRows(pos, 5000); len(got) != n {
		t.Fatalf("%d rows kept, want %d", len(got), n)
	}
}
