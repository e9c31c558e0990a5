package layout

import (
	"bytes"
	"errors"
	"fmt"
	"os"
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

// TestHotmapParquetSameBytes: writing one hot set again gives the same
// file, also when it has more hot rows than a dictionary page holds.
func TestHotmapParquetSameBytes(t *testing.T) {
	const n = 400_000
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i)
	}
	h, err := NewHotSet([][]int64{ids, {1, 2}}, []int64{n, 5})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var first []byte
	for i := range 4 {
		path := filepath.Join(dir, fmt.Sprintf("hotmap-%d.parquet", i))
		if err := WriteHotmapParquet(path, h, []string{"big", "small"}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Fatalf("write %d of the same hot set differs from the first", i)
		}
	}
}
