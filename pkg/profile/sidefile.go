package profile

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
)

// Logger side file, version 1. All integers are little-endian.
//
//	magic     8 bytes "PCSOLOGR"
//	version   uint32 (1)
//	hdrLen    uint32, then hdrLen bytes of JSON (fileHeader), then the
//	          header's CRC-32C as uint32
//	tables    for each table of the header, in order:
//	            encoding uint8 (0 dense, 1 sparse), accesses int64, then
//	            dense:  rows × uint32 counts
//	            sparse: nnz uint64, then nnz × (id int64, count uint32),
//	                    IDs increasing
//	inputs    nblocks uint32; per block: weight float64, n int64,
//	          nids uint64, nids × uint32 (int64 when the header says wide),
//	          nlens uint64, nlens × uint32
//	trailer   CRC-32C (Castagnoli) of every byte before it, uint32
//
// A table is written sparse when that is smaller (nnz·12 < rows·4).
const (
	loggerMagic   = "PCSOLOGR"
	loggerVersion = 1
	maxHeaderLen  = 64 << 20
	ioChunk       = 1 << 16 // values per read/write chunk
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type fileHeader struct {
	Info       SampleInfo    `json:"info"`
	Tables     []TableInfo   `json:"tables"`
	Features   []FeatureInfo `json:"features"`
	Wide       bool          `json:"wide"`
	KeepInputs float64       `json:"keep_inputs"`
}

// WriteFile writes the logger to path (through a temporary file renamed
// when complete) in the side-file format described above.
func (l *Logger) WriteFile(path string) error {
	p, _, err := l.prepareCounts(context.Background(), path)
	if err != nil {
		return err
	}
	if err := p.Commit(); err != nil {
		return fmt.Errorf("profile: write %s: %w", path, err)
	}
	return nil
}

// prepareCounts writes the logger to a temporary file beside path, to be
// committed there, and returns it with the XXH64 of its bytes (hex),
// computed as they are written.
func (l *Logger) prepareCounts(ctx context.Context, path string) (*atomicfile.Pending, string, error) {
	h := xxhash.New()
	p, err := atomicfile.Prepare(path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(ctxWriter{ctx, io.MultiWriter(w, h)}, 1<<20)
		if err := l.encode(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return nil, "", fmt.Errorf("profile: write %s: %w", path, err)
	}
	return p, hex.EncodeToString(h.Sum(nil)), nil
}

// ctxWriter stops writing once its context is done: a cancelled profile
// does not wait for a large counts file to be written in full.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// encoder writes little-endian values and keeps a running CRC.
type encoder struct {
	w   io.Writer
	crc hash.Hash32
	buf []byte
	err error
}

func (e *encoder) write(p []byte) {
	if e.err != nil {
		return
	}
	if _, err := e.w.Write(p); err != nil {
		e.err = err
		return
	}
	e.crc.Write(p)
}

func (e *encoder) u8(v uint8)   { e.write([]byte{v}) }
func (e *encoder) u32(v uint32) { e.write(binary.LittleEndian.AppendUint32(e.buf[:0], v)) }
func (e *encoder) u64(v uint64) { e.write(binary.LittleEndian.AppendUint64(e.buf[:0], v)) }

func (e *encoder) u32s(vs []uint32) {
	if nativeLittle { // the file's byte order: write the values' own bytes
		e.write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vs))), 4*len(vs)))
		return
	}
	for len(vs) > 0 && e.err == nil {
		n := min(len(vs), ioChunk)
		b := e.buf[:0]
		for _, v := range vs[:n] {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		e.write(b)
		e.buf = b[:0]
		vs = vs[n:]
	}
}

func (e *encoder) i64s(vs []int64) {
	for len(vs) > 0 && e.err == nil {
		n := min(len(vs), ioChunk)
		b := e.buf[:0]
		for _, v := range vs[:n] {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
		e.write(b)
		e.buf = b[:0]
		vs = vs[n:]
	}
}

func (l *Logger) encode(w io.Writer) error {
	e := &encoder{w: w, crc: crc32.New(castagnoli), buf: make([]byte, 0, 8*ioChunk)}
	hdr, err := json.Marshal(fileHeader{Info: l.Info, Tables: l.Tables(), Features: l.features, Wide: l.wide, KeepInputs: l.keepRate})
	if err != nil {
		return err
	}
	e.write([]byte(loggerMagic))
	e.u32(loggerVersion)
	e.u32(uint32(len(hdr)))
	e.write(hdr)
	e.u32(crc32.Checksum(hdr, castagnoli))
	for z := range l.tables {
		tl := &l.tables[z]
		nnz := int64(len(tl.sparse)) // a map holds only rows seen
		if tl.dense != nil {
			nnz = 0
			for _, c := range tl.dense {
				if c != 0 {
					nnz++
				}
			}
		}
		if tl.dense != nil && nnz*12 >= tl.info.Rows*4 {
			e.u8(0)
			e.u64(uint64(tl.accesses))
			e.u32s(tl.dense)
			continue
		}
		e.u8(1)
		e.u64(uint64(tl.accesses))
		e.u64(uint64(nnz))
		b := e.buf[:0]
		if tl.dense != nil {
			// The pairs of a dense table straight from its counts, a
			// buffer's worth at a time (a call a row cost twice as much).
			le := binary.LittleEndian
			b = slices.Grow(b, 12*ioChunk)[:12*ioChunk]
			n := 0
			for id, c := range tl.dense {
				if c == 0 {
					continue
				}
				le.PutUint64(b[n:], uint64(id))
				le.PutUint32(b[n+8:], c)
				if n += 12; n == len(b) {
					e.write(b)
					n = 0
				}
			}
			e.write(b[:n])
		} else {
			l.ForEach(z, func(id int64, c uint32) {
				b = binary.LittleEndian.AppendUint64(b, uint64(id))
				b = binary.LittleEndian.AppendUint32(b, c)
				if len(b) >= 12*ioChunk {
					e.write(b)
					b = b[:0]
				}
			})
			e.write(b)
		}
		e.buf = b[:0]
	}
	// Consecutive blocks of one weight are written as one block (Sample
	// hands over a block per row group).
	var runs [][]*inputBlock
	for i, blk := range l.blocks {
		if i > 0 && blk.weight == l.blocks[i-1].weight {
			runs[len(runs)-1] = append(runs[len(runs)-1], blk)
			continue
		}
		runs = append(runs, []*inputBlock{blk})
	}
	e.u32(uint32(len(runs)))
	for _, run := range runs {
		var n, ids, lens int
		for _, blk := range run {
			n += int(blk.n)
			ids += len(blk.ids32) + len(blk.ids64)
			lens += len(blk.lens)
		}
		e.u64(math.Float64bits(run[0].weight))
		e.u64(uint64(n))
		e.u64(uint64(ids))
		for _, blk := range run {
			if l.wide {
				e.i64s(blk.ids64)
			} else {
				e.u32s(blk.ids32)
			}
		}
		e.u64(uint64(lens))
		for _, blk := range run {
			e.u32s(blk.lens)
		}
	}
	if e.err != nil {
		return e.err
	}
	sum := e.crc.Sum32()
	_, err = w.Write(binary.LittleEndian.AppendUint32(nil, sum))
	return err
}

// decoder reads little-endian values, keeping a running CRC; the first
// error sticks.
type decoder struct {
	r   io.Reader
	crc hash.Hash32
	buf []byte
	err error
}

func (d *decoder) read(n int) []byte {
	if d.err != nil {
		return nil
	}
	if cap(d.buf) < n {
		d.buf = make([]byte, n)
	}
	b := d.buf[:n]
	if _, err := io.ReadFull(d.r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		d.err = err
		return nil
	}
	d.crc.Write(b)
	return b
}

func (d *decoder) u8() uint8 {
	if b := d.read(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.read(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.read(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// u32s reads n values into dst (len n) or appends them when dst is nil,
// chunk by chunk, so a corrupt length runs into the end of the file
// instead of allocating it up front.
func (d *decoder) u32s(n uint64, dst []uint32) []uint32 {
	for i := uint64(0); i < n && d.err == nil; {
		k := min(n-i, ioChunk)
		b := d.read(int(4 * k))
		if b == nil {
			break
		}
		for j := uint64(0); j < k; j++ {
			v := binary.LittleEndian.Uint32(b[4*j:])
			if dst != nil && uint64(len(dst)) == n {
				dst[i+j] = v
			} else {
				dst = append(dst, v)
			}
		}
		i += k
	}
	return dst
}

func (d *decoder) i64s(n uint64) []int64 {
	var out []int64
	for i := uint64(0); i < n && d.err == nil; {
		k := min(n-i, ioChunk)
		b := d.read(int(8 * k))
		if b == nil {
			break
		}
		for j := uint64(0); j < k; j++ {
			out = append(out, int64(binary.LittleEndian.Uint64(b[8*j:])))
		}
		i += k
	}
	return out
}

// ReadLogger reads a logger side file written by WriteFile, checking its
// magic, version, header and whole-file checksums, and the consistency of
// its lengths and counts. Problems wrap ErrCorrupt (or ErrVersion).
func ReadLogger(path string) (*Logger, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	defer f.Close()
	l, err := decodeLogger(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("profile: logger %s: %w", path, err)
	}
	return l, nil
}

func corrupt(format string, a ...any) error {
	return fmt.Errorf(format+": %w", append(a, ErrCorrupt)...)
}

func decodeLogger(r *bufio.Reader) (*Logger, error) {
	d := &decoder{r: r, crc: crc32.New(castagnoli)}
	if m := d.read(len(loggerMagic)); m == nil || string(m) != loggerMagic {
		if d.err != nil {
			return nil, corrupt("reading the magic: %v", d.err)
		}
		return nil, corrupt("not a picasso logger file (bad magic)")
	}
	if v := d.u32(); d.err == nil && v != loggerVersion {
		if v > loggerVersion {
			return nil, fmt.Errorf("format version %d, this picasso reads %d: %w", v, loggerVersion, ErrVersion)
		}
		return nil, corrupt("format version %d", v)
	}
	hl := d.u32()
	if d.err == nil && hl > maxHeaderLen {
		return nil, corrupt("header length %d", hl)
	}
	hdrBytes := append([]byte(nil), d.read(int(hl))...)
	hcrc := d.u32()
	if d.err != nil {
		return nil, corrupt("reading the header: %v", d.err)
	}
	if crc32.Checksum(hdrBytes, castagnoli) != hcrc {
		return nil, corrupt("header checksum mismatch")
	}
	var hdr fileHeader
	if err := json.Unmarshal(hdrBytes, &hdr); err != nil {
		return nil, corrupt("header: %v", err)
	}
	for i, f := range hdr.Features {
		if f.Table < 0 || f.Table >= len(hdr.Tables) {
			return nil, corrupt("feature %d names table %d of %d", i, f.Table, len(hdr.Tables))
		}
	}
	for _, t := range hdr.Tables {
		if t.Rows <= 0 {
			return nil, corrupt("table %s has %d rows", t.Name, t.Rows)
		}
	}
	l := newLogger(hdr.Tables, hdr.Features)
	l.Info = hdr.Info
	l.keepRate = hdr.KeepInputs
	l.keepKey = key(hdr.Info.Seed, 0x6b656570)
	if l.wide != hdr.Wide {
		return nil, corrupt("header's wide flag disagrees with its tables")
	}
	for z := range l.tables {
		tl := &l.tables[z]
		enc := d.u8()
		tl.accesses = int64(d.u64())
		var sum uint64
		saturated := false
		switch enc {
		case 0:
			if tl.dense == nil {
				return nil, corrupt("table %s (%d rows) is stored dense", tl.info.Name, tl.info.Rows)
			}
			d.u32s(uint64(len(tl.dense)), tl.dense)
			for _, c := range tl.dense {
				sum += uint64(c)
				saturated = saturated || c == math.MaxUint32
			}
		case 1:
			nnz := d.u64()
			if d.err == nil && nnz > uint64(tl.info.Rows) {
				return nil, corrupt("table %s: %d entries for %d rows", tl.info.Name, nnz, tl.info.Rows)
			}
			prev := int64(-1)
			for i := uint64(0); i < nnz && d.err == nil; i++ {
				b := d.read(12)
				if b == nil {
					break
				}
				id := int64(binary.LittleEndian.Uint64(b))
				c := binary.LittleEndian.Uint32(b[8:])
				if id <= prev || id >= tl.info.Rows || c == 0 {
					return nil, corrupt("table %s: entry %d (id %d, count %d) out of order, out of range or zero", tl.info.Name, i, id, c)
				}
				prev = id
				if tl.dense != nil {
					tl.dense[id] = c
				} else {
					tl.sparse[id] = c
				}
				sum += uint64(c)
				saturated = saturated || c == math.MaxUint32
			}
		default:
			if d.err == nil {
				return nil, corrupt("table %s: unknown encoding %d", tl.info.Name, enc)
			}
		}
		if d.err != nil {
			return nil, corrupt("table %s: %v", tl.info.Name, d.err)
		}
		if !saturated && sum != uint64(tl.accesses) {
			return nil, corrupt("table %s: counts add up to %d, accesses say %d", tl.info.Name, sum, tl.accesses)
		}
	}
	oneHot, multi := 0, 0
	for _, f := range l.features {
		if f.MultiHot {
			multi++
		} else {
			oneHot++
		}
	}
	nb := d.u32()
	for i := uint32(0); i < nb && d.err == nil; i++ {
		blk := &inputBlock{weight: math.Float64frombits(d.u64()), n: int64(d.u64())}
		if d.err == nil && (!(blk.weight >= 1) || blk.n < 0) {
			return nil, corrupt("input block %d: weight %v, %d inputs", i, blk.weight, blk.n)
		}
		nids := d.u64()
		if l.wide {
			blk.ids64 = d.i64s(nids)
		} else {
			blk.ids32 = d.u32s(nids, nil)
		}
		blk.lens = d.u32s(d.u64(), nil)
		if d.err != nil {
			break
		}
		var want uint64
		for _, n := range blk.lens {
			want += uint64(n)
		}
		want += uint64(blk.n) * uint64(oneHot)
		if uint64(len(blk.lens)) != uint64(blk.n)*uint64(multi) || nids != want {
			return nil, corrupt("input block %d: %d IDs and %d lengths for %d inputs", i, nids, len(blk.lens), blk.n)
		}
		l.blocks = append(l.blocks, blk)
	}
	if d.err != nil {
		return nil, corrupt("input blocks: %v", d.err)
	}
	sum := d.crc.Sum32()
	var tr [4]byte
	if _, err := io.ReadFull(r, tr[:]); err != nil {
		return nil, corrupt("reading the checksum: %v", err)
	}
	if binary.LittleEndian.Uint32(tr[:]) != sum {
		return nil, corrupt("checksum mismatch")
	}
	if _, err := r.ReadByte(); err != io.EOF {
		return nil, corrupt("trailing bytes after the checksum")
	}
	return l, nil
}

// nativeLittle is whether the machine stores numbers little-endian, as the
// side file does.
var nativeLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
