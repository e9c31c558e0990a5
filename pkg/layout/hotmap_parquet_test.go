package layout

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

func TestHotmapParquetRoundTrip(t *testing.T) {
	rows := []int64{10, 1 << 20, 3}
	h, err := NewHotSet([][]int64{{7, 2, 9}, {1 << 19, 5}, {}}, rows)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), HotmapParquetFile)
	if err := WriteHotmapParquet(path, h, []string{"a", "b", "c"}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHotmapParquet(path, rows)
	if err != nil {
		t.Fatal(err)
	}
	for tb := range h.Tables() {
		if !slices.Equal(got.IDs(tb), h.IDs(tb)) {
			t.Errorf("table %d: read IDs %v; wrote %v", tb, got.IDs(tb), h.IDs(tb))
		}
	}
	if _, err := ReadHotmapParquet(path, []int64{10, 100, 3}); !errors.Is(err, ErrInvalid) {
		t.Errorf("ReadHotmapParquet with a table too small for its IDs = %v; want ErrInvalid", err)
	}
	if err := WriteHotmapParquet(path, h, []string{"a"}); err == nil {
		t.Error("WriteHotmapParquet with one name for three tables succeeded")
	}
}
