package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesOnlyOnSuccess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "f.json")
	if err := WriteBytes(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write with a failing fill = %v; want boom", err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "one" {
		t.Fatalf("after a failed write the file holds %q; want %q", got, "one")
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries after a failed write; want 1 (no temporary left)", len(ents))
	}
}

func TestWriteMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	if err := WriteBytes(path, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != Mode {
		t.Errorf("mode of %s = %v; want %v", path, got, Mode)
	}
}

// TestWriteLarge writes a file of several writeback steps, in writes that
// straddle them, and reads back every byte.
func TestWriteLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.counts")
	want := make([]byte, 3*writebackEvery+12345)
	for i := range want {
		want[i] = byte(i * 7 / 3)
	}
	err := Write(path, func(w io.Writer) error {
		for p := 0; p < len(want); p += 100_003 {
			if _, err := w.Write(want[p:min(p+100_003, len(want))]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, not the %d written", len(got), len(want))
	}
}
