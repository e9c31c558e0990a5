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
	"math/bits"
	"os"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/picasso-ctr/picasso/internal/nonzero"
	"github.com/picasso-ctr/picasso/pkg/atomicfile"
)

// Logger side file, version 2 (version 1 is still read). All integers
// are little-endian.
//
//	magic     8 bytes "PCSOLOGR"
//	version   uint32 (2)
//	hdrLen    uint32, then hdrLen bytes of JSON (fileHeader), then the
//	          header's CRC-32C as uint32
//	tables    for each table of the header, in order:
//	            encoding uint8, accesses int64, then
//	            0 dense (version 1): rows × uint32 counts
//	            1 sparse (version 1): nnz uint64, then nnz × (id int64,
//	                      count uint32), IDs increasing
//	            2 varint (version 2): segments of the rows seen, in
//	                      increasing ID order: npairs uint32 (0 ends the
//	                      table, else at most 65,536), nbytes uint32, then
//	                      nbytes bytes of npairs × (uvarint gap, uvarint
//	                      count), the gap being the ID less the previous
//	                      ID less 1 (the table's first: the ID)
//	inputs    nblocks uint32; per block: weight float64, n int64, then
//	            version 2: nlens uint64, nlens × uint32, nids uint64, and
//	              the IDs: int64 each when the header says wide, else each
//	              in the bytes its feature's table needs (idWidth: 1 for up
//	              to 256 rows, 2 for 65,536, 3 for 2^24, else 4)
//	            version 1: nids uint64, nids × uint32 (int64 when wide),
//	              nlens uint64, nlens × uint32
//	trailer   CRC-32C (Castagnoli) of every byte before it, uint32
//
// Version 1 wrote a table dense when that was smaller. Version 2 more than halved the 5% profile's counts file of the kaggle
// preset (9.6 MB, seven tenths of it the kept inputs' 4-byte IDs): the
// file is written, hashed twice and synced on every profile, and
// replacing the last one frees its blocks, all in proportion to its size.
const (
	loggerMagic   = "PCSOLOGR"
	loggerVersion = 2
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
		// Small writes (headers, lengths) are gathered; a table's
		// segments, larger than the buffer, go straight through.
		bw := bufio.NewWriterSize(ctxWriter{ctx, io.MultiWriter(w, h)}, 64<<10)
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
	e := &encoder{w: w, crc: crc32.New(castagnoli), buf: make([]byte, 0, 64)} // grown as needed
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
		e.table(&l.tables[z])
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
			if l.wide {
				ids += len(blk.ids64)
			} else {
				ids += int(l.lay.idCount(blk.n, blk.lens))
			}
			lens += len(blk.lens)
		}
		e.u64(math.Float64bits(run[0].weight))
		e.u64(uint64(n))
		e.u64(uint64(lens))
		for _, blk := range run {
			e.u32s(blk.lens)
		}
		e.u64(uint64(ids))
		for _, blk := range run {
			if l.wide {
				e.i64s(blk.ids64)
			} else {
				e.write(blk.packed) // held as the file stores them
			}
		}
	}
	if e.err != nil {
		return e.err
	}
	sum := e.crc.Sum32()
	_, err = w.Write(binary.LittleEndian.AppendUint32(nil, sum))
	return err
}

// segmentPairs is the most pairs a segment of a table's varint pairs
// holds; a segment's bytes are at most segmentPairs·maxPairBytes.
// writeSegmentPairs is the most the encoder puts in one: its buffer for a
// segment of 65,536 pairs took a MiB, whose fresh pages cost a 5% profile
// more than the extra segment headers of smaller ones (8 bytes each).
const (
	segmentPairs      = 1 << 16
	writeSegmentPairs = 1 << 12
	maxPairBytes      = binary.MaxVarintLen64 + binary.MaxVarintLen32 // a gap, a count
)

// table writes one table's accesses and the varint pairs of its rows
// seen, in segments: one pass over the counts, whose segment sizes are
// known once each is encoded.
func (e *encoder) table(tl *tableLog) {
	e.u8(2)
	e.u64(uint64(tl.accesses))
	b := slices.Grow(e.buf[:0], writeSegmentPairs*maxPairBytes)
	b = b[:cap(b)]
	n, pairs := 0, 0
	flush := func() {
		if pairs > 0 {
			var hdr [8]byte // not e.u32: b is e.buf's array
			binary.LittleEndian.PutUint32(hdr[:], uint32(pairs))
			binary.LittleEndian.PutUint32(hdr[4:], uint32(n))
			e.write(hdr[:])
			e.write(b[:n])
		}
		n, pairs = 0, 0
	}
	prev := int64(-1)
	if d := tl.dense; d != nil {
		// 64 rows at a time: a mask of those whose count is not zero
		// (nonzero.Walker, a chunk of rows at a time), then a pair for each of
		// its bits. A branch on each count mispredicted on most rows of a
		// sampled table, whose seen rows lie at random; encoding every
		// row's pair and keeping the seen ones' cost the unseen rows as
		// much; and the masks made in Go, a shift and an OR a row, were
		// most of the encoder's time.
		w := nonzero.Walk(d)
		for w.Next() {
			lo, ms := w.Lo, w.Masks // locals: w's fields would be reloaded after every store
			for k, mask := range ms {
				base := lo + 64*k
				for ; mask != 0; mask &= mask - 1 {
					j := base + bits.TrailingZeros64(mask)
					gap, c := uint64(int64(j)-prev-1), d[j]
					if gap < 0x80 && c < 0x80 { // one byte each, the common case
						b[n], b[n+1] = byte(gap), byte(c)
						n += 2
					} else {
						n = putUvarint(b, putUvarint(b, n, gap), uint64(c))
					}
					prev = int64(j)
					if pairs++; pairs == writeSegmentPairs {
						flush()
					}
				}
			}
		}
	} else {
		for _, id := range tl.sortedIDs() {
			n = putUvarint(b, putUvarint(b, n, uint64(id-prev-1)), uint64(tl.sparse[id]))
			prev = id
			if pairs++; pairs == writeSegmentPairs {
				flush()
			}
		}
	}
	flush()
	e.u32(0)
	e.buf = b[:0]
}

// putUvarint writes x as a uvarint at b[m:] and returns the index after it.
// It is inlined where binary.PutUvarint is not, in the loop over a dense
// table's rows.
func putUvarint(b []byte, m int, x uint64) int {
	for ; x >= 0x80; x >>= 7 {
		b[m] = byte(x) | 0x80
		m++
	}
	b[m] = byte(x)
	return m + 1
}

// decoder reads little-endian values, keeping a running CRC; the first
// error sticks.
type decoder struct {
	r   io.Reader
	crc hash.Hash32
	buf []byte
	err error
	ver uint32 // the file's format version
}

func (d *decoder) read(n int) []byte {
	if d.err != nil {
		return nil
	}
	if cap(d.buf) < n {
		d.buf = make([]byte, n, n+8)
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

// pairs reads table tl's varint pairs (encoding 2) segment by segment
// into its counts, adding them to *sum and noting a saturated count.
func (d *decoder) pairs(tl *tableLog, sum *uint64, saturated *bool) error {
	prev := int64(-1)
	var seen uint64
	for d.err == nil {
		np := d.u32()
		if np == 0 || d.err != nil {
			break
		}
		nb := d.u32()
		if d.err == nil && (np > segmentPairs || uint64(nb) < 2*uint64(np) || uint64(nb) > maxPairBytes*uint64(np)) {
			return corrupt("table %s: a segment of %d pairs in %d bytes", tl.info.Name, np, nb)
		}
		b := d.read(int(nb))
		p := 0
		for k := uint32(0); k < np && b != nil; k++ {
			gap, n1 := binary.Uvarint(b[p:])
			if n1 <= 0 {
				return corrupt("table %s: pair %d cut or overflowing", tl.info.Name, seen)
			}
			c, n2 := binary.Uvarint(b[p+n1:])
			if n2 <= 0 {
				return corrupt("table %s: pair %d cut or overflowing", tl.info.Name, seen)
			}
			p += n1 + n2
			// prev < Rows, so Rows-1-prev does not overflow: the gap must
			// be below it for the ID to stay in the table.
			if gap >= uint64(tl.info.Rows-1-prev) || c == 0 || c > math.MaxUint32 {
				return corrupt("table %s: pair %d (gap %d, count %d) out of range or zero", tl.info.Name, seen, gap, c)
			}
			id := prev + 1 + int64(gap)
			prev = id
			if tl.dense != nil {
				tl.dense[id] = uint32(c)
			} else {
				tl.sparse[id] = uint32(c)
			}
			*sum += c
			*saturated = *saturated || c == math.MaxUint32
			seen++
		}
		if b != nil && p != len(b) {
			return corrupt("table %s: a segment of %d bytes holds %d", tl.info.Name, nb, p)
		}
	}
	if d.err != nil {
		return corrupt("table %s: %v", tl.info.Name, d.err)
	}
	return nil
}

// readPacked reads blk's kept IDs (32-bit, packed), about a MiB at a
// time, checking that each lies in its table. blk.n and blk.lens were read
// and checked against the count of IDs.
func (d *decoder) readPacked(blk *inputBlock, lay *idLayout) ([]byte, error) {
	const chunk = 1 << 20
	var out []byte
	li := 0
	for k := int64(0); k < blk.n && d.err == nil; {
		// The inputs of the next chunk, and their bytes.
		k1, size := k, 0
		if lay.oneHot {
			k1 = min(blk.n, k+int64(max(1, chunk/lay.per)))
			size = int(k1-k) * lay.per
		} else {
			for li1 := li; k1 < blk.n && (size < chunk || k1 == k); k1++ {
				in := 0
				lay.eachID(1, blk.lens, &li1, func(f int) { in += lay.feats[f].width })
				if in > maxHeaderLen {
					return nil, corrupt("input %d: %d bytes of IDs", k1, in)
				}
				size += in
			}
		}
		b := d.readGrow(size)
		if b == nil {
			break
		}
		p, bad := 0, -1
		check := func(f int) {
			w := lay.feats[f].width
			if uint64(idAt(b, p, w)) >= lay.feats[f].rows && bad < 0 {
				bad = f
			}
			p += w
		}
		if lay.oneHot {
			for range k1 - k {
				for f := range lay.feats {
					check(f)
				}
			}
		} else {
			lay.eachID(k1-k, blk.lens, &li, check)
		}
		if bad >= 0 {
			return nil, corrupt("a kept ID of feature %d is outside its table (%d rows)", bad, lay.feats[bad].rows)
		}
		out = append(out, b[:size]...)
		k = k1
	}
	return spare(out), nil
}

// packV1 packs the kept IDs of a version 1 file (ids, 4 bytes each),
// checking that each lies in its table.
func packV1(blk *inputBlock, ids []uint32, lay *idLayout) ([]byte, error) {
	out := make([]byte, 0, len(ids)*4+3)
	li, i, bad := 0, 0, -1
	lay.eachID(blk.n, blk.lens, &li, func(f int) {
		if uint64(ids[i]) >= lay.feats[f].rows && bad < 0 {
			bad = f
		}
		out = appendID(out, ids[i], lay.feats[f].width)
		i++
	})
	if bad >= 0 {
		return nil, corrupt("a kept ID of feature %d is outside its table (%d rows)", bad, lay.feats[bad].rows)
	}
	return spare(out), nil
}

// readGrow reads n bytes into a buffer with at least 3 more bytes of
// capacity after them. Past a MiB, the buffer grows with the bytes read,
// so a corrupt length runs into the end of the file before it costs
// memory.
func (d *decoder) readGrow(n int) []byte {
	const piece = 1 << 20
	if n <= piece {
		if cap(d.buf) < n+4 {
			d.buf = make([]byte, n+8)
		}
		return d.read(n)
	}
	var big []byte
	for left := n; left > 0 && d.err == nil; {
		k := min(left, piece)
		b := d.read(k)
		if b == nil {
			return nil
		}
		big = append(big, b...)
		left -= k
	}
	return slices.Grow(big, 4)
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
	if d.ver = d.u32(); d.err == nil && (d.ver < 1 || d.ver > loggerVersion) {
		if d.ver > loggerVersion {
			return nil, fmt.Errorf("format version %d, this picasso reads up to %d: %w", d.ver, loggerVersion, ErrVersion)
		}
		return nil, corrupt("format version %d", d.ver)
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
	if len(hdr.Features) == 0 {
		return nil, corrupt("header: no features")
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
			if d.ver != 1 {
				return nil, corrupt("table %s: encoding 0 in a version %d file", tl.info.Name, d.ver)
			}
			if tl.dense == nil {
				return nil, corrupt("table %s (%d rows) is stored dense", tl.info.Name, tl.info.Rows)
			}
			d.u32s(uint64(len(tl.dense)), tl.dense)
			for _, c := range tl.dense {
				sum += uint64(c)
				saturated = saturated || c == math.MaxUint32
			}
		case 2:
			if d.ver < 2 {
				return nil, corrupt("table %s: encoding 2 in a version %d file", tl.info.Name, d.ver)
			}
			if err := d.pairs(tl, &sum, &saturated); err != nil {
				return nil, err
			}
		case 1:
			if d.ver != 1 {
				return nil, corrupt("table %s: encoding 1 in a version %d file", tl.info.Name, d.ver)
			}
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
	multi := 0
	for _, f := range l.features {
		if f.MultiHot {
			multi++
		}
	}
	nb := d.u32()
	for i := uint32(0); i < nb && d.err == nil; i++ {
		blk := &inputBlock{weight: math.Float64frombits(d.u64()), n: int64(d.u64())}
		// n is bounded so that n times the features cannot overflow.
		if d.err == nil && (!(blk.weight >= 1) || blk.n < 0 || blk.n > math.MaxInt64/int64(len(l.features))/4) {
			return nil, corrupt("input block %d: weight %v, %d inputs", i, blk.weight, blk.n)
		}
		check := func(nids uint64) error {
			if uint64(len(blk.lens)) != uint64(blk.n)*uint64(multi) || nids != l.lay.idCount(blk.n, blk.lens) {
				return corrupt("input block %d: %d IDs and %d lengths for %d inputs", i, nids, len(blk.lens), blk.n)
			}
			return nil
		}
		var ids32 []uint32 // version 1
		nids := uint64(0)
		if d.ver == 1 {
			nids = d.u64()
			if l.wide {
				blk.ids64 = d.i64s(nids)
			} else {
				ids32 = d.u32s(nids, nil)
			}
		}
		blk.lens = d.u32s(d.u64(), nil)
		if d.ver > 1 {
			nids = d.u64()
		}
		if d.err != nil {
			break
		}
		if err := check(nids); err != nil {
			return nil, err
		}
		var err error
		switch {
		case l.wide && d.ver > 1:
			blk.ids64 = d.i64s(nids)
		case l.wide:
		case d.ver == 1:
			blk.packed, err = packV1(blk, ids32, &l.lay)
		default:
			blk.packed, err = d.readPacked(blk, &l.lay)
		}
		if err != nil {
			return nil, fmt.Errorf("input block %d: %w", i, err)
		}
		if d.err != nil {
			break
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
