package layout

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestHotSetSlots(t *testing.T) {
	h, err := NewHotSet([][]int64{{5, 1}, {}, {7}}, []int64{10, 3, 8})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		t    int
		id   int64
		slot int32
		hot  bool
	}{{0, 1, 0, true}, {0, 5, 1, true}, {0, 2, 0, false}, {1, 0, 0, false}, {2, 7, 2, true}, {2, 99, 0, false}}
	for _, c := range cases {
		s, ok := h.Slot(c.t, c.id)
		if ok != c.hot || (ok && s != c.slot) {
			t.Errorf("Slot(%d, %d) = %d, %v; want %d, %v", c.t, c.id, s, ok, c.slot, c.hot)
		}
		if ok {
			if gt, gid := h.ID(int64(s)); gt != c.t || gid != c.id {
				t.Errorf("ID(%d) = %d, %d; want %d, %d", s, gt, gid, c.t, c.id)
			}
		}
	}
	if _, err := NewHotSet([][]int64{{3, 3}}, []int64{10}); err == nil {
		t.Error("NewHotSet accepted a duplicate id")
	}
}

func TestHotmapRoundTrip(t *testing.T) {
	rows := []int64{10, 3, 1 << 29} // the last table keeps a sparse ID→slot map
	h, err := NewHotSet([][]int64{{5, 1}, {}, {1 << 28, 7}}, rows)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), HotmapFile)
	if err := WriteHotmap(path, h, rows); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHotmap(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tables() != 3 || got.Rows() != 4 {
		t.Fatalf("read back %d tables, %d hot rows; want 3, 4", got.Tables(), got.Rows())
	}
	for tb := range 3 {
		if !slices.Equal(got.IDs(tb), h.IDs(tb)) || got.Offset(tb) != h.Offset(tb) {
			t.Errorf("table %d: IDs %v at offset %d; want %v at %d", tb, got.IDs(tb), got.Offset(tb), h.IDs(tb), h.Offset(tb))
		}
	}
	if s, ok := got.Slot(2, 1<<28); !ok || s != 3 {
		t.Errorf("Slot(2, 1<<28) = %d, %v; want 3, true", s, ok)
	}
	if err := WriteHotmap(path, h, rows[:2]); err == nil {
		t.Error("WriteHotmap accepted 2 row counts for 3 tables")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"flipped byte": append(append([]byte(nil), raw[:20]...), append([]byte{raw[20] ^ 1}, raw[21:]...)...),
		"truncated":    raw[:len(raw)-9],
		"not a hotmap": []byte("PCSOHOT0 and then some"),
	} {
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadHotmap(path); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: ReadHotmap = %v; want ErrInvalid", name, err)
		}
	}
}
