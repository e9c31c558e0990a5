package hybridhash

import (
	"bufio"
	"cmp"
	"encoding/gob"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
)

// Files of a saved cache state (Checkpoint): the disk tier's saved log
// (a directory) and the counter, hot set and statistics.
const (
	checkpointDB    = "db"
	checkpointState = "state.gob"
)

// gob needs exported fields: hit's are encoded through this shape.
type hitGob struct {
	Table int32
	ID    int64
	N     uint32
}

type snapshotGob struct {
	Itr     int64
	Width   int
	Depth   int
	Sketch  []uint32
	Hitters []hitGob
	Floor   uint32
	Hot     [][]int64
	Stats   Stats
}

// SaveRow writes a row straight to the disk tier: rows the caller keeps
// (hot rows, default rows under their own keys) before a Checkpoint.
func (c *Cache) SaveRow(k Key, v []float32) error { return c.disk.put(k, v) }

// LoadRow reads a row from the host tier or the disk tier and reports
// whether either holds it.
func (c *Cache) LoadRow(k Key, dst []float32) (bool, error) {
	if c.host.get(k, dst) {
		return true, nil
	}
	return c.disk.get(k, dst)
}

// Checkpoint writes the cache's state into dir (which must not exist): the
// host tier's dirty rows go to disk first (they stay in the host tier,
// clean), then the disk tier's log so far (see diskTier) and the counter, hot
// set and statistics. Rows the caller holds must be saved with SaveRow
// before.
func (c *Cache) Checkpoint(dir string) error {
	if err := c.host.eachDirty(c.disk.put); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("hybridhash: checkpoint %s: %w", dir, err)
	}
	if err := c.disk.checkpoint(filepath.Join(dir, checkpointDB)); err != nil {
		return err
	}
	s := snapshotGob{Itr: c.itr, Width: c.cnt.width, Depth: c.cnt.depth, Sketch: c.cnt.c, Hot: c.hotID, Stats: c.Stats()}
	for _, h := range c.cnt.sorted() {
		s.Hitters = append(s.Hitters, hitGob{Table: h.k.Table, ID: h.k.ID, N: h.n})
	}
	s.Floor = c.cnt.floor
	path := filepath.Join(dir, checkpointState)
	err := atomicfile.Write(path, func(w io.Writer) error { return gob.NewEncoder(w).Encode(&s) })
	if err == nil {
		err = atomicfile.SyncDir(dir) // the names of db and state.gob
	}
	if err != nil {
		return fmt.Errorf("hybridhash: checkpoint %s: %w", path, err)
	}
	return nil
}

// Restore opens a cache from the state Checkpoint wrote into dir: its disk
// tier is copied into o.DiskDir (which must be empty or absent), and the
// counter, hot set and statistics are read back. The host tier starts
// empty.
func Restore(o Options, dir string) (*Cache, error) {
	fail := func(err error) (*Cache, error) {
		return nil, fmt.Errorf("hybridhash: restore from %s: %w: %w", dir, err, ErrCheckpoint)
	}
	if err := restoreLog(filepath.Join(dir, checkpointDB), o.DiskDir); err != nil {
		return fail(err)
	}
	f, err := os.Open(filepath.Join(dir, checkpointState))
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	var s snapshotGob
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&s); err != nil {
		return fail(err)
	}
	c, err := New(o)
	if err != nil {
		return nil, err
	}
	if s.Width != c.cnt.width || s.Depth != c.cnt.depth || len(s.Sketch) != len(c.cnt.c) || len(s.Hot) != c.o.Tables || len(s.Hitters) >= 2*c.cnt.cap {
		c.Close()
		return fail(fmt.Errorf("sketch %d × %d, %d tables, %d heavy hitters; this cache has %d × %d, %d, at most %d",
			s.Width, s.Depth, len(s.Hot), len(s.Hitters), c.cnt.width, c.cnt.depth, c.o.Tables, c.cnt.cap))
	}
	copy(c.cnt.c, s.Sketch)
	for _, h := range s.Hitters {
		c.cnt.table(h.Table)[h.ID] = h.N
	}
	c.cnt.hhN = len(s.Hitters)
	c.cnt.floor = s.Floor
	hot := make([][]int64, c.o.Tables)
	for t := range hot {
		hot[t] = s.Hot[t]
	}
	c.setHot(hot)
	c.itr = s.Itr
	st := s.Stats
	c.st = Stats{Lookups: st.Lookups, Hits: st.Hits, Unique: st.Unique, UniqueHits: st.UniqueHits, Admitted: st.Admitted,
		Refused: st.Refused, Entered: st.Entered, Left: st.Left, Refreshes: st.Refreshes}
	c.host.evicts = st.Evictions
	c.disk.read, c.disk.written = st.DiskBytesRead, st.DiskBytesWritten
	c.disk.readRows, c.disk.writtenRows = st.DiskRowsRead, st.DiskRowsWritten
	return c, nil
}

// ReadSaved calls fn with every row of the state Checkpoint saved into
// dir, in key order: the rows of the tables (Table ≥ 0, by table then ID
// as unsigned), then those the caller saved under negative tables
// (SaveRow). v holds the row's stored floats and is reused between calls.
// Nothing of the state changes.
func ReadSaved(dir string, fn func(k Key, v []float32) error) error {
	path := filepath.Join(dir, checkpointDB)
	fail := func(err error) error {
		return fmt.Errorf("hybridhash: read saved rows %s: %w: %w", path, err, ErrCheckpoint)
	}
	f, size, err := savedLog(path)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	// The newest record of each key, then the keys in order.
	newest := map[Key]uint64{}
	err = scanLog(f, size, func(k Key, off int64, n int, _ []byte) error {
		newest[k] = uint64(off)<<16 | uint64(n)
		return nil
	})
	if err != nil {
		return fail(err)
	}
	keys := make([]Key, 0, len(newest))
	for k := range newest {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		if c := cmp.Compare(uint32(a.Table), uint32(b.Table)); c != 0 {
			return c
		}
		return cmp.Compare(uint64(a.ID), uint64(b.ID))
	})
	var rec []byte
	var v []float32
	for _, k := range keys {
		off, n := int64(newest[k]>>16), int(newest[k]&maxFloats)
		rec = slices.Grow(rec[:0], int(recordLen(n)))[:recordLen(n)]
		if _, err := f.ReadAt(rec, off); err != nil {
			return fail(err)
		}
		if err := checkRecord(rec); err != nil {
			return fail(fmt.Errorf("record at byte %d: %w", off, err))
		}
		v = slices.Grow(v[:0], n)[:n]
		decodeRow(v, rec[keyLen+4:len(rec)-4])
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}
