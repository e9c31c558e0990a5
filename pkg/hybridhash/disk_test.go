package hybridhash

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rowOf is the row of width floats that version v of key k holds in these
// tests.
func rowOf(k Key, v, width int) []float32 {
	r := make([]float32, width)
	for j := range r {
		r[j] = float32(int(k.Table)*1_000_000+int(k.ID)*10+v) + float32(j)/8
	}
	return r
}

// save checkpoints d as Checkpoint does: into dir/db, dir made first.
func save(t *testing.T, d *diskTier, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := d.checkpoint(filepath.Join(dir, checkpointDB)); err != nil {
		t.Fatal(err)
	}
}

// readAll returns every row ReadSaved gives, in its order.
func readAll(t *testing.T, dir string) ([]Key, [][]float32) {
	t.Helper()
	var keys []Key
	var rows [][]float32
	err := ReadSaved(dir, func(k Key, v []float32) error {
		keys = append(keys, k)
		rows = append(rows, slices.Clone(v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys, rows
}

// TestDiskLogCompactsAndKeepsCheckpoints writes rows, checkpoints, then
// overwrites them until the log compacts more than once: reads see the
// newest rows, the log shrinks back to its live records, and the
// checkpoint (a hard link to the log as it was) still reads, and restores,
// the rows of its time, in key order, negative tables last.
func TestDiskLogCompactsAndKeepsCheckpoints(t *testing.T) {
	defer func(m int64) { compactMin = m }(compactMin)
	compactMin = 4 << 10
	const width = 6
	dir := t.TempDir()
	d, err := openDisk(filepath.Join(dir, "live"), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	var keys []Key
	for i := range 40 {
		keys = append(keys, Key{Table: int32(i % 3), ID: int64(i*7919) - 100})
	}
	keys = append(keys, Key{Table: -1, ID: 0}, Key{Table: -2, ID: 3}) // saved under negative tables
	put := func(v int) {
		for _, k := range keys {
			if err := d.put(k, rowOf(k, v, width)); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(v int) {
		t.Helper()
		got := make([]float32, width)
		for _, k := range keys {
			ok, err := d.get(k, got)
			if err != nil || !ok {
				t.Fatalf("get %v = %v, %v", k, ok, err)
			}
			if want := rowOf(k, v, width); !slices.Equal(got, want) {
				t.Fatalf("get %v = %v; want version %d, %v", k, got, v, want)
			}
		}
	}
	put(0)
	check(0)
	ckpt := filepath.Join(dir, "ckpt")
	save(t, d, ckpt)
	live := int64(len(keys)) * recordLen(width)
	for v := 1; v <= 12; v++ {
		put(v)
		check(v)
	}
	if err := d.commit(); err != nil {
		t.Fatal(err)
	}
	if d.flushed > 2*live+compactMin || d.flushed < live {
		t.Errorf("the log holds %d bytes for %d live; want it compacted", d.flushed, live)
	}
	check(12)

	gotKeys, rows := readAll(t, ckpt)
	want := slices.Clone(keys)
	slices.SortFunc(want, func(a, b Key) int {
		return strings.Compare(string(a.encode(nil)), string(b.encode(nil)))
	})
	if !slices.Equal(gotKeys, want) {
		t.Fatalf("saved keys %v; want %v", gotKeys, want)
	}
	if gotKeys[len(gotKeys)-1].Table >= 0 {
		t.Errorf("the last saved key %v is not under a negative table", gotKeys[len(gotKeys)-1])
	}
	for i, k := range gotKeys {
		if want := rowOf(k, 0, width); !slices.Equal(rows[i], want) {
			t.Fatalf("saved %v = %v; want the checkpoint's %v", k, rows[i], want)
		}
	}

	back := filepath.Join(dir, "back")
	if err := restoreLog(filepath.Join(ckpt, checkpointDB), back); err != nil {
		t.Fatal(err)
	}
	r, err := openDisk(back, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	got := make([]float32, width)
	for _, k := range keys {
		if ok, err := r.get(k, got); err != nil || !ok || !slices.Equal(got, rowOf(k, 0, width)) {
			t.Fatalf("restored %v = %v, %v, %v; want the checkpoint's row", k, ok, err, got)
		}
	}
}

// TestDiskCheckpointCopiesWithoutLinks: where a hard link is refused
// (another file system), the checkpoint copies the log's bytes so far.
func TestDiskCheckpointCopiesWithoutLinks(t *testing.T) {
	defer func(l func(string, string) error) { linkFile = l }(linkFile)
	linkFile = func(string, string) error { return errors.New("invalid cross-device link") }
	dir := t.TempDir()
	d, err := openDisk(filepath.Join(dir, "live"), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	k := Key{Table: 1, ID: 42}
	if err := d.put(k, rowOf(k, 0, 4)); err != nil {
		t.Fatal(err)
	}
	save(t, d, filepath.Join(dir, "ckpt"))
	if err := d.put(k, rowOf(k, 1, 4)); err != nil { // after: not in the copy
		t.Fatal(err)
	}
	if err := d.commit(); err != nil {
		t.Fatal(err)
	}
	keys, rows := readAll(t, filepath.Join(dir, "ckpt"))
	if len(keys) != 1 || keys[0] != k || !slices.Equal(rows[0], rowOf(k, 0, 4)) {
		t.Fatalf("saved %v %v; want only %v's first row", keys, rows, k)
	}
	a, err := os.Stat(filepath.Join(dir, "live", logName))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.Stat(filepath.Join(dir, "ckpt", checkpointDB, logName))
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(a, b) || b.Size() >= a.Size() {
		t.Errorf("the saved log is the live file, or as long (%d and %d bytes); want a copy of its first bytes", b.Size(), a.Size())
	}
}

// TestDiskLogCorruption: a damaged record is an error, never a wrong row:
// in the live log a disk error, in a saved one a checkpoint error; and a
// pebble database saved by an earlier release is named as such.
func TestDiskLogCorruption(t *testing.T) {
	dir := t.TempDir()
	d, err := openDisk(filepath.Join(dir, "live"), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	k := Key{Table: 0, ID: 9}
	if err := d.put(k, rowOf(k, 0, 4)); err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(dir, "ckpt", checkpointDB)
	save(t, d, filepath.Dir(saved))
	// The saved log is a link to the live one: damage a float of it.
	if _, err := d.f.WriteAt([]byte{0xff}, keyLen+4+3); err != nil {
		t.Fatal(err)
	}
	if _, err := d.get(k, make([]float32, 4)); !errors.Is(err, ErrDisk) {
		t.Errorf("get of a damaged record: %v; want ErrDisk", err)
	}
	err = ReadSaved(filepath.Dir(saved), func(Key, []float32) error { return nil })
	if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("ReadSaved of a damaged log: %v; want a checksum ErrCheckpoint", err)
	}
	if _, err := openDisk(filepath.Join(dir, "live"), 1); !errors.Is(err, ErrDisk) {
		t.Errorf("reopening a damaged log: %v; want ErrDisk", err)
	}

	old := filepath.Join(dir, "old")
	if err := os.MkdirAll(filepath.Join(old, checkpointDB), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, checkpointDB, "CURRENT"), []byte("MANIFEST-000001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = ReadSaved(old, func(Key, []float32) error { return nil })
	if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "earlier picasso") {
		t.Errorf("ReadSaved of a pebble checkpoint: %v; want one naming the earlier release", err)
	}
}

// TestRestoreDamagedLogIsCheckpointError: a saved log damaged after its
// checkpoint fails Restore as a checkpoint error and leaves no copy in the
// disk directory, so a retry with a good checkpoint works.
func TestRestoreDamagedLogIsCheckpointError(t *testing.T) {
	defer func(l func(string, string) error) { linkFile = l }(linkFile)
	linkFile = func(string, string) error { return errors.New("no links here") } // a copy, damaged alone
	o := testOptions(t)
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k := Key{Table: 1, ID: 5}
	if err := c.SaveRow(k, rowOf(k, 0, o.Width)); err != nil {
		t.Fatal(err)
	}
	good, bad := filepath.Join(t.TempDir(), "good"), filepath.Join(t.TempDir(), "bad")
	for _, dir := range []string{good, bad} {
		if err := c.Checkpoint(dir); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(filepath.Join(bad, checkpointDB, logName), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0x5a}, keyLen+4+1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	o2 := o
	o2.DiskDir = filepath.Join(t.TempDir(), "disk")
	if _, err := Restore(o2, bad); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("Restore of a damaged log: %v; want a checksum ErrCheckpoint", err)
	}
	r, err := Restore(o2, good)
	if err != nil {
		t.Fatalf("Restore after a failed one: %v", err)
	}
	defer r.Close()
	got := make([]float32, o.Width)
	if ok, err := r.LoadRow(k, got); err != nil || !ok || !slices.Equal(got, rowOf(k, 0, o.Width)) {
		t.Fatalf("restored row = %v, %v, %v", ok, err, got)
	}
}

// TestDiskCheckpointRefusesAReplacedLog: a log replaced under the tier
// (another run given its directory) is not saved under this run's length.
func TestDiskCheckpointRefusesAReplacedLog(t *testing.T) {
	dir := t.TempDir()
	d, err := openDisk(filepath.Join(dir, "live"), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	k := Key{Table: 0, ID: 1}
	if err := d.put(k, rowOf(k, 0, 3)); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "live", logName)
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "ckpt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := d.checkpoint(filepath.Join(dir, "ckpt", checkpointDB)); !errors.Is(err, ErrDisk) || !strings.Contains(err.Error(), "no longer") {
		t.Errorf("checkpoint of a replaced log: %v; want an ErrDisk naming it", err)
	}
}
