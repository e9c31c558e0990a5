package hybridhash

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/cockroachdb/pebble/v2"
)

// diskTier is the disk level of the cold storage, a pebble database: key
// (table, id) big-endian, value the row's width floats, little-endian.
// Rows written by the host tier's evictions collect in an indexed batch
// (reads see them) that is committed every batchRows rows.
type diskTier struct {
	dir   string
	db    *pebble.DB
	b     *pebble.Batch
	inB   int // rows in b
	batch int
	width int
	empty bool // nothing was ever written: lookups need not ask pebble
	kbuf  []byte
	vbuf  []byte

	read, written         int64 // bytes
	readRows, writtenRows int64
}

// quietLogger drops pebble's informational messages and keeps its errors
// out of the progress output too: they come back as errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("hybridhash: pebble: "+format, args...))
}

// openDisk opens (creating) the pebble database in dir. cacheBytes and
// memtableBytes bound pebble's own memory.
func openDisk(dir string, width, batchRows int, cacheBytes, memtableBytes int64) (*diskTier, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("hybridhash: disk tier %s: %w: %w", dir, err, ErrDisk)
	}
	c := pebble.NewCache(cacheBytes)
	defer c.Unref()
	opts := &pebble.Options{Cache: c, MemTableSize: uint64(memtableBytes), MemTableStopWritesThreshold: 4,
		DisableWAL: true, Logger: quietLogger{}}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("hybridhash: open disk tier %s: %w: %w", dir, err, ErrDisk)
	}
	d := &diskTier{dir: dir, db: db, batch: batchRows, width: width}
	it, err := db.NewIter(nil)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("hybridhash: open disk tier %s: %w: %w", dir, err, ErrDisk)
	}
	d.empty = !it.First()
	if err := it.Close(); err != nil {
		db.Close()
		return nil, fmt.Errorf("hybridhash: open disk tier %s: %w: %w", dir, err, ErrDisk)
	}
	d.b = db.NewIndexedBatch()
	return d, nil
}

// get reads k's row into dst and reports whether the disk holds it.
func (d *diskTier) get(k Key, dst []float32) (bool, error) {
	if d.empty {
		return false, nil
	}
	d.kbuf = k.encode(d.kbuf[:0])
	v, closer, err := d.b.Get(d.kbuf)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("hybridhash: disk tier %s: read table %d id %d: %w: %w", d.dir, k.Table, k.ID, err, ErrDisk)
	}
	defer closer.Close()
	if len(v) != 4*len(dst) {
		return false, fmt.Errorf("hybridhash: disk tier %s: table %d id %d holds %d bytes; want %d: %w", d.dir, k.Table, k.ID, len(v), 4*len(dst), ErrDisk)
	}
	decodeRow(dst, v)
	d.read += int64(len(v))
	d.readRows++
	return true, nil
}

// decodeRow decodes a stored row value (len(dst) little-endian float32s).
func decodeRow(dst []float32, v []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(v[4*i:]))
	}
}

// put writes k's row, committing the batch when it is full.
func (d *diskTier) put(k Key, v []float32) error {
	d.empty = false
	d.kbuf = k.encode(d.kbuf[:0])
	d.vbuf = d.vbuf[:0]
	for _, x := range v {
		d.vbuf = binary.LittleEndian.AppendUint32(d.vbuf, math.Float32bits(x))
	}
	if err := d.b.Set(d.kbuf, d.vbuf, nil); err != nil {
		return fmt.Errorf("hybridhash: disk tier %s: write table %d id %d: %w: %w", d.dir, k.Table, k.ID, err, ErrDisk)
	}
	d.written += int64(len(d.kbuf) + len(d.vbuf))
	d.writtenRows++
	d.inB++
	if d.inB >= d.batch {
		return d.commit()
	}
	return nil
}

// commit writes the pending batch to the database.
func (d *diskTier) commit() error {
	if d.inB == 0 {
		return nil
	}
	if err := d.b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("hybridhash: disk tier %s: commit %d rows: %w: %w", d.dir, d.inB, err, ErrDisk)
	}
	d.b.Close()
	d.b = d.db.NewIndexedBatch()
	d.inB = 0
	return nil
}

// checkpoint commits and flushes everything and writes a pebble
// checkpoint (hard links where it can) into dst, which must not exist.
func (d *diskTier) checkpoint(dst string) error {
	if err := d.commit(); err != nil {
		return err
	}
	if err := d.db.Flush(); err != nil {
		return fmt.Errorf("hybridhash: disk tier %s: flush: %w: %w", d.dir, err, ErrDisk)
	}
	if err := d.db.Checkpoint(dst); err != nil {
		return fmt.Errorf("hybridhash: disk tier %s: checkpoint to %s: %w: %w", d.dir, dst, err, ErrDisk)
	}
	return nil
}

// close closes the database, dropping the uncommitted batch.
func (d *diskTier) close() error {
	if d.db == nil {
		return nil
	}
	d.b.Close()
	err := d.db.Close()
	d.db = nil
	if err != nil {
		return fmt.Errorf("hybridhash: disk tier %s: close: %w: %w", d.dir, err, ErrDisk)
	}
	return nil
}
