package hybridhash

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
)

// The disk tier is an append-only log of rows in one file, DIR/rows.log,
// and an index in memory from each key to its newest record. A record is
//
//	key     12 bytes: the table (uint32) and the ID (uint64), big-endian
//	n       uint32, little-endian: the floats of the row
//	floats  n × float32, little-endian
//	crc     uint32, little-endian: CRC-32C of the bytes before it in the record
//
// Rows written by the host tier's evictions collect in a buffer (reads see
// them) written to the log every batch rows. A row written again leaves
// its older record dead; once dead records are most of a log of at least
// compactMin bytes, the live ones are copied to a new log, which replaces
// it. A checkpoint is the log's first bytes: a hard link to the file (the
// log only grows, and compaction writes a new file, so those bytes never
// change), or a copy of them across file systems, and their length.
//
// A log-structured file suits the tier: its reads are single rows by key,
// its writes batches of evicted rows, and its rows have one width (an
// SSD store with its index in host memory, as OneEmbedding's). The index
// costs about 25 bytes of host memory a row on disk, a third of a 16-float
// row with its Adagrad state. The embedded key-value store it replaces
// kept its index on disk, but added 2-3 ms and 15 MB to every start of
// the program (a twentieth of a 5% profile), and was 5x slower on a
// trace of evictions and random reads.
const (
	logName     = "rows.log"
	logMeta     = "log.json"
	recordExtra = keyLen + 4 + 4 // key, n, crc
	maxFloats   = 1<<16 - 1      // n is kept in the index's low 16 bits
)

// compactMin is the least log a compaction rewrites, and linkFile makes a
// checkpoint's hard link (tests change both).
var (
	compactMin int64 = 64 << 20
	linkFile         = os.Link
)

// diskIndex maps each key to its newest record: offset<<16 | floats. A
// map a table keeps it at about 25 bytes a key (37 with the table in the
// key); keys of other tables (negative ones, the rows the caller saves, a
// few) share one.
type diskIndex struct {
	tables []map[int64]uint64
	other  map[Key]uint64
}

// indexTables bounds the tables with a map of their own.
const indexTables = 1 << 12

func (x *diskIndex) get(k Key) (uint64, bool) {
	if k.Table < 0 || k.Table >= indexTables {
		v, ok := x.other[k]
		return v, ok
	}
	if int(k.Table) >= len(x.tables) {
		return 0, false
	}
	v, ok := x.tables[k.Table][k.ID]
	return v, ok
}

// set makes v k's record and returns the one it replaces, if any.
func (x *diskIndex) set(k Key, v uint64) (old uint64, had bool) {
	if k.Table < 0 || k.Table >= indexTables {
		if x.other == nil {
			x.other = map[Key]uint64{}
		}
		old, had = x.other[k]
		x.other[k] = v
	} else {
		for int(k.Table) >= len(x.tables) {
			x.tables = append(x.tables, nil)
		}
		m := x.tables[k.Table]
		if m == nil {
			m = map[int64]uint64{}
			x.tables[k.Table] = m
		}
		old, had = m[k.ID]
		m[k.ID] = v
	}
	return old, had
}

// recordLen is the bytes of a record of n floats.
func recordLen(n int) int64 { return int64(recordExtra + 4*n) }

// diskTier is the disk level of the cold storage (see above).
type diskTier struct {
	dir     string
	f       *os.File
	index   diskIndex
	flushed int64  // bytes of the log in the file
	buf     []byte // records not yet written, at offset flushed on
	inBuf   int    // rows in buf
	batch   int
	dead    int64 // bytes of records superseded
	scratch []byte

	read, written         int64 // bytes
	readRows, writtenRows int64
}

// logMetaFile is what a checkpoint records of its log.
type logMetaFile struct {
	Format string `json:"format"`
	Bytes  int64  `json:"bytes"`
}

const logFormat = "picasso rows log 1"

// openDisk opens (creating) the log in dir and indexes the rows it holds
// (a restored checkpoint's).
func openDisk(dir string, batchRows int) (*diskTier, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("hybridhash: disk tier %s: %w: %w", dir, err, ErrDisk)
	}
	f, err := os.OpenFile(filepath.Join(dir, logName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("hybridhash: open disk tier %s: %w: %w", dir, err, ErrDisk)
	}
	d := &diskTier{dir: dir, f: f, batch: batchRows}
	st, err := f.Stat()
	if err == nil {
		d.flushed = st.Size()
		err = scanLog(f, d.flushed, func(k Key, off int64, n int, _ []byte) error {
			if old, had := d.index.set(k, uint64(off)<<16|uint64(n)); had {
				d.dead += recordLen(int(old & maxFloats))
			}
			return nil
		})
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("hybridhash: open disk tier %s: %w: %w", dir, err, ErrDisk)
	}
	return d, nil
}

// scanLog reads the records of the log's first size bytes in order,
// checking each, and calls fn with each one's key, offset, floats and
// whole record (valid until the next call).
func scanLog(r io.ReaderAt, size int64, fn func(k Key, off int64, n int, rec []byte) error) error {
	return scanLogFrom(bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<20), size, fn)
}

// scanLogFrom is scanLog reading the log's bytes from br.
func scanLogFrom(br io.Reader, size int64, fn func(k Key, off int64, n int, rec []byte) error) error {
	var rec []byte
	for off := int64(0); off < size; {
		if size-off < recordExtra {
			return fmt.Errorf("the log ends inside a record at byte %d of %d", off, size)
		}
		rec = slices.Grow(rec[:0], keyLen+4)[:keyLen+4]
		if _, err := io.ReadFull(br, rec); err != nil {
			return fmt.Errorf("read the log at byte %d: %w", off, err)
		}
		n := int(binary.LittleEndian.Uint32(rec[keyLen:]))
		if n > maxFloats {
			return fmt.Errorf("the record at byte %d says it holds %d floats (at most %d)", off, n, maxFloats)
		}
		l := recordLen(n)
		if l > size-off {
			return fmt.Errorf("a record of %d floats at byte %d runs past the log's %d bytes", n, off, size)
		}
		rec = slices.Grow(rec, int(l)-len(rec))[:l]
		if _, err := io.ReadFull(br, rec[keyLen+4:]); err != nil {
			return fmt.Errorf("read the log at byte %d: %w", off, err)
		}
		if err := checkRecord(rec); err != nil {
			return fmt.Errorf("record at byte %d: %w", off, err)
		}
		if err := fn(decodeKey(rec), off, n, rec); err != nil {
			return err
		}
		off += l
	}
	return nil
}

// checkRecord verifies a whole record's checksum.
func checkRecord(rec []byte) error {
	body := rec[:len(rec)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(rec[len(body):]) {
		return errors.New("checksum mismatch")
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// record returns the record of n floats at off, from the buffer or the
// file (read into d.scratch), checked.
func (d *diskTier) record(off int64, n int) ([]byte, error) {
	l := recordLen(n)
	var rec []byte
	if off >= d.flushed {
		rec = d.buf[off-d.flushed : off-d.flushed+l]
	} else {
		d.scratch = slices.Grow(d.scratch[:0], int(l))[:l]
		if _, err := d.f.ReadAt(d.scratch, off); err != nil {
			return nil, err
		}
		rec = d.scratch
	}
	if err := checkRecord(rec); err != nil {
		return nil, fmt.Errorf("record at byte %d: %w", off, err)
	}
	return rec, nil
}

// get reads k's row into dst and reports whether the disk holds it.
func (d *diskTier) get(k Key, dst []float32) (bool, error) {
	loc, ok := d.index.get(k)
	if !ok {
		return false, nil
	}
	off, n := int64(loc>>16), int(loc&maxFloats)
	if n != len(dst) {
		return false, fmt.Errorf("hybridhash: disk tier %s: table %d id %d holds %d floats; want %d: %w", d.dir, k.Table, k.ID, n, len(dst), ErrDisk)
	}
	rec, err := d.record(off, n)
	if err == nil && decodeKey(rec) != k {
		err = fmt.Errorf("record at byte %d holds table %d id %d", off, decodeKey(rec).Table, decodeKey(rec).ID)
	}
	if err != nil {
		return false, fmt.Errorf("hybridhash: disk tier %s: read table %d id %d: %w: %w", d.dir, k.Table, k.ID, err, ErrDisk)
	}
	decodeRow(dst, rec[keyLen+4:len(rec)-4])
	d.read += int64(len(rec))
	d.readRows++
	return true, nil
}

// decodeRow decodes a stored row value (len(dst) little-endian float32s).
func decodeRow(dst []float32, v []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(v[4*i:]))
	}
}

// put writes k's row, writing the buffer to the log when it holds a batch.
func (d *diskTier) put(k Key, v []float32) error {
	if len(v) > maxFloats {
		return fmt.Errorf("hybridhash: disk tier %s: table %d id %d: a row of %d floats (at most %d): %w", d.dir, k.Table, k.ID, len(v), maxFloats, ErrDisk)
	}
	off := d.flushed + int64(len(d.buf))
	start := len(d.buf)
	d.buf = k.encode(d.buf)
	d.buf = binary.LittleEndian.AppendUint32(d.buf, uint32(len(v)))
	for _, x := range v {
		d.buf = binary.LittleEndian.AppendUint32(d.buf, math.Float32bits(x))
	}
	d.buf = binary.LittleEndian.AppendUint32(d.buf, crc32.Checksum(d.buf[start:], castagnoli))
	if old, had := d.index.set(k, uint64(off)<<16|uint64(len(v))); had {
		d.dead += recordLen(int(old & maxFloats))
	}
	d.written += recordLen(len(v))
	d.writtenRows++
	if d.inBuf++; d.inBuf >= d.batch {
		return d.commit()
	}
	return nil
}

// commit writes the buffered rows to the log, and compacts it when most
// of it is dead.
func (d *diskTier) commit() error {
	if len(d.buf) > 0 {
		if _, err := d.f.WriteAt(d.buf, d.flushed); err != nil {
			return fmt.Errorf("hybridhash: disk tier %s: write %d rows: %w: %w", d.dir, d.inBuf, err, ErrDisk)
		}
		d.flushed += int64(len(d.buf))
		d.buf, d.inBuf = d.buf[:0], 0
	}
	if d.flushed >= compactMin && 2*d.dead > d.flushed {
		return d.compact()
	}
	return nil
}

// compact copies the log's live records, in log order, to a new file that
// replaces it. A checkpoint's hard link keeps the old file.
func (d *diskTier) compact() error {
	fail := func(err error) error {
		return fmt.Errorf("hybridhash: disk tier %s: compact: %w: %w", d.dir, err, ErrDisk)
	}
	tmp := filepath.Join(d.dir, logName+".compact")
	nf, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fail(err)
	}
	bw := bufio.NewWriterSize(nf, 1<<20)
	var at int64
	var moved diskIndex
	err = scanLog(d.f, d.flushed, func(k Key, off int64, n int, rec []byte) error {
		if loc, _ := d.index.get(k); loc != uint64(off)<<16|uint64(n) {
			return nil // superseded
		}
		if _, err := bw.Write(rec); err != nil { // as it is: its checksum holds
			return err
		}
		moved.set(k, uint64(at)<<16|uint64(n))
		at += int64(len(rec))
		return nil
	})
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(d.dir, logName))
	}
	if err != nil {
		nf.Close()
		os.Remove(tmp)
		return fail(err)
	}
	d.f.Close()
	d.f, d.index, d.flushed, d.dead = nf, moved, at, 0
	return nil
}

// checkpoint writes the buffered rows and syncs the log, then saves its
// bytes so far into dst, a new directory: the log hard-linked (copied
// where a link is refused), and their length in log.json.
func (d *diskTier) checkpoint(dst string) error {
	if err := d.commit(); err != nil {
		return err
	}
	fail := func(err error) error {
		return fmt.Errorf("hybridhash: disk tier %s: checkpoint to %s: %w: %w", d.dir, dst, err, ErrDisk)
	}
	if err := d.f.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fail(err)
	}
	saved := filepath.Join(dst, logName)
	if err := linkFile(filepath.Join(d.dir, logName), saved); err != nil {
		err = atomicfile.Write(saved, func(w io.Writer) error {
			_, err := io.Copy(w, io.NewSectionReader(d.f, 0, d.flushed))
			return err
		})
		if err != nil {
			return fail(err)
		}
	} else if err := d.sameFile(saved); err != nil {
		return fail(err)
	}
	meta, err := json.Marshal(logMetaFile{Format: logFormat, Bytes: d.flushed})
	if err == nil {
		err = atomicfile.WriteBytes(filepath.Join(dst, logMeta), meta)
	}
	if err == nil {
		err = atomicfile.SyncDir(dst)
	}
	if err == nil {
		err = atomicfile.SyncDir(filepath.Dir(dst)) // dst's own name
	}
	if err != nil {
		return fail(err)
	}
	return nil
}

// sameFile checks that path is the open log: a link made by path would
// otherwise save another process's log under this one's length (a second
// run given the same disk directory, which empties it).
func (d *diskTier) sameFile(path string) error {
	a, err := d.f.Stat()
	if err != nil {
		return err
	}
	b, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !os.SameFile(a, b) {
		return fmt.Errorf("%s is no longer this run's log: was the disk directory given to another run?", filepath.Join(d.dir, logName))
	}
	return nil
}

// savedLog opens the log a checkpoint saved in dir and returns it with its
// length. A directory a pebble database (the disk tier of releases before
// this one) was saved into is named as such.
func savedLog(dir string) (*os.File, int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, logMeta))
	if err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "CURRENT")); serr == nil {
			return nil, 0, fmt.Errorf("%s holds a disk tier saved by an earlier picasso (a pebble database), which this release does not read: train the run again, or use that release to finish it", dir)
		}
		return nil, 0, err
	}
	var m logMetaFile
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", filepath.Join(dir, logMeta), err)
	}
	if m.Format != logFormat || m.Bytes < 0 {
		return nil, 0, fmt.Errorf("%s: not a saved rows log (%q, %d bytes)", filepath.Join(dir, logMeta), m.Format, m.Bytes)
	}
	f, err := os.Open(filepath.Join(dir, logName))
	if err != nil {
		return nil, 0, err
	}
	if st, err := f.Stat(); err != nil || st.Size() < m.Bytes {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s holds %d bytes; its checkpoint saved %d", f.Name(), st.Size(), m.Bytes)
		}
		return nil, 0, err
	}
	return f, m.Bytes, nil
}

// restoreLog copies the log a checkpoint saved in src into dir, where
// openDisk then indexes it, checking every record as it goes: a damaged
// saved log is the checkpoint's fault, and leaves no copy behind. The copy
// is a scratch file (a crash discards the disk directory), so it is not
// synced.
func restoreLog(src, dir string) error {
	f, size, err := savedLog(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, logName)
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	tee := io.TeeReader(bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<20), bw)
	err = scanLogFrom(tee, size, func(Key, int64, int, []byte) error { return nil })
	if err == nil {
		err = bw.Flush()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// close closes the log, dropping the unwritten buffer.
func (d *diskTier) close() error {
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	if err != nil {
		return fmt.Errorf("hybridhash: disk tier %s: close: %w: %w", d.dir, err, ErrDisk)
	}
	return nil
}
