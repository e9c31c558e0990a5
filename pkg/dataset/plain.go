package dataset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"unsafe"

	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/metadata"
	"github.com/golang/snappy"
)

// The plain path decodes column chunks of the shape picasso writes (every
// value present, PLAIN encoding, no dictionary, Snappy or no compression)
// without the Parquet library's page reader: the group's chunks mapped
// from the file (or, where that fails, one read of each into a buffer the
// reader keeps), page headers parsed here, and each page decompressed
// straight into the batch's slice when the page lies inside it. The library reads a chunk into a fresh buffer, copies it into a
// second and each page into a third before decoding into a fourth; for
// profile, which only counts IDs, those copies and their page faults were
// most of the time. Chunks of any other shape take the library's path.

// errPlainShape says that a chunk's pages are not what its metadata
// promised the plain path; the data is bad, not merely unusual.
var errPlainShape = errors.New("page is not a plain page of a required column")

// plainChunkOK reports whether the plain path can read the chunk cc of a
// required column with physical type INT32, INT64 or FLOAT.
func plainChunkOK(cc *metadata.ColumnChunkMetaData) bool {
	if cc.HasDictionaryPage() || cc.CryptoMetadata() != nil || cc.FilePath() != "" {
		return false
	}
	switch cc.Compression() {
	case compress.Codecs.Snappy, compress.Codecs.Uncompressed:
	default:
		return false
	}
	switch cc.Type() {
	case parquet.Types.Int32, parquet.Types.Int64, parquet.Types.Float:
	default:
		return false
	}
	for _, e := range cc.Encodings() {
		// RLE and BIT_PACKED appear in the list for the (empty) levels.
		if e != parquet.Encodings.Plain && e != parquet.Encodings.RLE && e != parquet.Encodings.BitPacked {
			return false
		}
	}
	return cc.DataPageOffset() >= 0 && cc.TotalCompressedSize() > 0
}

// plainChunk reads the values of one column chunk, page by page.
type plainChunk struct {
	snappy bool
	width  int    // bytes a value
	raw    []byte // the chunk as stored: buf, or a view of the file mapped
	buf    []byte // the chunk read, when not mapped; kept between chunks (chunkBytes)
	pos    int    // offset in raw of the next page header
	left   int64  // values of the chunk not yet returned

	// The current page: its values (stored, or decompressed into scratch)
	// and how many of its bytes have been returned.
	page    []byte
	used    int
	scratch []byte
}

// chunkSpan returns the offset and size of chunk cc's bytes, checked
// against the file's size.
func chunkSpan(fileSize int64, cc *metadata.ColumnChunkMetaData) (at, size int64, err error) {
	size, at = cc.TotalCompressedSize(), cc.DataPageOffset()
	if size > 1<<31 || at > fileSize || size > fileSize-at { // a corrupt footer must not make us allocate it
		return 0, 0, fmt.Errorf("column chunk of %d bytes at offset %d, the file has %d", size, at, fileSize)
	}
	return at, size, nil
}

// plainChunks returns the column chunks of leaves in row group rg, or
// false when one is not of the shape the plain decoder reads (plainChunkOK,
// one value a row) or a leaf is not in rg.
func plainChunks(rg *metadata.RowGroupMetaData, leaves []int) ([]*metadata.ColumnChunkMetaData, bool) {
	ccs := make([]*metadata.ColumnChunkMetaData, len(leaves))
	for k, leaf := range leaves {
		if leaf < 0 || leaf >= rg.NumColumns() {
			return nil, false
		}
		cc, err := rg.ColumnChunk(leaf)
		if err != nil || !plainChunkOK(cc) || cc.NumValues() != rg.NumRows() {
			return nil, false
		}
		ccs[k] = cc
	}
	return ccs, true
}

// chunkError is err, met in column col of row group g, as bad data.
func chunkError(g RowGroup, col string, err error) error {
	return fmt.Errorf("dataset: %s: row group %d, column %s: %w: %w", g.File, g.Index, col, err, ErrBadData)
}

// chunkBytes returns the stored bytes of the chunks ccs of f (fileSize
// bytes long). They are views of one read-only mapping spanning them all,
// which release unmaps; or, where mapping fails or noMap is set, they are
// read into bufs (grown as needed, and release is nil). Reading copied
// every byte from the page cache into buffers whose first use faulted in
// each of their pages: a fifth of a 5% profile's page faults. The span's
// pages are mapped at once unless it is mostly chunks not asked for. bad
// makes the error about chunk k.
func chunkBytes(f *os.File, fileSize int64, ccs []*metadata.ColumnChunkMetaData, bufs [][]byte, noMap bool,
	bad func(k int, err error) error) (raws [][]byte, release func(), err error) {
	at, size := make([]int64, len(ccs)), make([]int64, len(ccs))
	lo, hi, need := int64(math.MaxInt64), int64(0), int64(0)
	for k, cc := range ccs {
		if at[k], size[k], err = chunkSpan(fileSize, cc); err != nil {
			return nil, nil, bad(k, err)
		}
		lo, hi, need = min(lo, at[k]), max(hi, at[k]+size[k]), need+size[k]
	}
	raws = make([][]byte, len(ccs))
	if !noMap && hi-lo <= 1<<31 {
		if data, release, ok := mapRange(f, lo, hi-lo, hi-lo <= 2*need); ok {
			for k := range ccs {
				raws[k] = data[at[k]-lo : at[k]-lo+size[k] : at[k]-lo+size[k]]
			}
			return raws, release, nil
		}
	}
	for k := range ccs {
		if int64(cap(bufs[k])) < size[k] {
			bufs[k] = make([]byte, size[k])
		}
		raws[k] = bufs[k][:size[k]]
		if _, err := f.ReadAt(raws[k], at[k]); err != nil {
			return nil, nil, bad(k, fmt.Errorf("read column chunk: %w", err))
		}
	}
	return raws, nil, nil
}

// use points c at the chunk cc whose bytes are raw.
func (c *plainChunk) use(raw []byte, cc *metadata.ColumnChunkMetaData) {
	c.raw = raw
	c.snappy = cc.Compression() == compress.Codecs.Snappy
	c.width = 8
	if cc.Type() != parquet.Types.Int64 {
		c.width = 4
	}
	c.pos, c.left, c.page, c.used = 0, cc.NumValues(), nil, 0
}

// read fills dst, a whole number of values, with the chunk's next values.
func (c *plainChunk) read(dst []byte) error {
	if len(dst) > int(c.left)*c.width {
		return fmt.Errorf("%d values asked of a column chunk with %d left", len(dst)/c.width, c.left)
	}
	for len(dst) > 0 {
		if c.used == len(c.page) {
			direct, err := c.nextPage(dst)
			if err != nil {
				return err
			}
			if direct > 0 {
				dst = dst[direct:]
				continue
			}
		}
		k := copy(dst, c.page[c.used:])
		c.used += k
		dst = dst[k:]
		c.left -= int64(k / c.width)
	}
	return nil
}

// nextPage moves to the next page and makes its values current (c.page):
// a stored page as it lies in the chunk, a compressed one decompressed into
// scratch. A compressed page whose values fit in dst is decompressed there
// instead, and nextPage returns their size in bytes (0 otherwise).
func (c *plainChunk) nextPage(dst []byte) (int, error) {
	h, at, err := c.header()
	if err != nil {
		return 0, err
	}
	payload := c.raw[at : at+h.compressed]
	c.pos = at + h.compressed
	size := h.values * c.width
	if h.uncompressed != size || int64(h.values) > c.left {
		return 0, fmt.Errorf("page of %d values and %d bytes (%d values left in the chunk): %w", h.values, h.uncompressed, c.left, errPlainShape)
	}
	if !c.snappy || !h.compressedValues {
		if len(payload) != size {
			return 0, fmt.Errorf("uncompressed page of %d bytes, header says %d: %w", len(payload), size, errPlainShape)
		}
		c.page, c.used = payload, 0
		return 0, nil
	}
	if n, err := snappy.DecodedLen(payload); err != nil {
		return 0, fmt.Errorf("snappy: %w", err)
	} else if n != size {
		return 0, fmt.Errorf("snappy page decodes to %d bytes, header says %d: %w", n, size, errPlainShape)
	}
	direct := size <= len(dst)
	out := dst
	if !direct {
		if cap(c.scratch) < size {
			c.scratch = make([]byte, size)
		}
		out = c.scratch
	}
	if _, err := snappy.Decode(out[:size], payload); err != nil {
		return 0, fmt.Errorf("snappy: %w", err)
	}
	if direct {
		c.left -= int64(h.values)
		c.page, c.used = nil, 0
		return size, nil
	}
	c.page, c.used = out[:size], 0
	return 0, nil
}

// header parses the page header at c.pos and returns it with the offset of
// the page's payload.
func (c *plainChunk) header() (pageHeader, int, error) {
	if c.pos >= len(c.raw) {
		return pageHeader{}, 0, fmt.Errorf("column chunk ends with %d values unread: %w", c.left, errPlainShape)
	}
	p := thriftReader{b: c.raw, i: c.pos}
	h, err := p.pageHeader()
	if err != nil {
		return pageHeader{}, 0, fmt.Errorf("page header at chunk offset %d: %w", c.pos, err)
	}
	if h.compressed < 0 || p.i+h.compressed > len(c.raw) {
		return pageHeader{}, 0, fmt.Errorf("page of %d bytes at chunk offset %d runs past the chunk's %d bytes: %w", h.compressed, c.pos, len(c.raw), errPlainShape)
	}
	return h, p.i, nil
}

// pageHeader is what the plain path needs of a Parquet PageHeader.
type pageHeader struct {
	uncompressed, compressed int
	values                   int
	// compressedValues is false for a v2 data page stored uncompressed.
	compressedValues bool
}

// The Parquet page types and encodings the plain path accepts.
const (
	pageData   = 0
	pageDataV2 = 3
	encPlain   = 0
)

// thriftReader parses Thrift's compact protocol, as much of it as a page
// header needs; every read is bounds-checked, so a corrupt header is an
// error and never a panic.
type thriftReader struct {
	b []byte
	i int
}

var errThrift = errors.New("corrupt page header")

func (t *thriftReader) byte() (byte, error) {
	if t.i >= len(t.b) {
		return 0, errThrift
	}
	t.i++
	return t.b[t.i-1], nil
}

func (t *thriftReader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(t.b[t.i:])
	if n <= 0 {
		return 0, errThrift
	}
	t.i += n
	return v, nil
}

func (t *thriftReader) varint() (int64, error) {
	u, err := t.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

// int32 reads a zigzag varint that must fit an int32.
func (t *thriftReader) int32() (int, error) {
	v, err := t.varint()
	if err != nil || v != int64(int32(v)) {
		return 0, errThrift
	}
	return int(v), nil
}

// Compact protocol type codes.
const (
	ctStop   = 0
	ctTrue   = 1
	ctFalse  = 2
	ctByte   = 3
	ctI16    = 4
	ctI32    = 5
	ctI64    = 6
	ctDouble = 7
	ctBinary = 8
	ctList   = 9
	ctSet    = 10
	ctMap    = 11
	ctStruct = 12
)

// field reads a field header: the field's id (after the previous id last)
// and its type; typ ctStop ends the struct.
func (t *thriftReader) field(last int) (id, typ int, err error) {
	h, err := t.byte()
	if err != nil {
		return 0, 0, err
	}
	typ = int(h & 0x0f)
	if typ == ctStop {
		return 0, ctStop, nil
	}
	if d := int(h >> 4); d != 0 {
		return last + d, typ, nil
	}
	v, err := t.varint()
	return int(v), typ, err
}

// skip passes over a value of type typ; depth bounds nesting.
func (t *thriftReader) skip(typ, depth int) error {
	if depth > 16 {
		return errThrift
	}
	switch typ {
	case ctTrue, ctFalse:
		return nil
	case ctByte:
		_, err := t.byte()
		return err
	case ctI16, ctI32, ctI64:
		_, err := t.uvarint()
		return err
	case ctDouble:
		if t.i+8 > len(t.b) {
			return errThrift
		}
		t.i += 8
		return nil
	case ctBinary:
		n, err := t.uvarint()
		if err != nil || n > uint64(len(t.b)-t.i) {
			return errThrift
		}
		t.i += int(n)
		return nil
	case ctList, ctSet:
		h, err := t.byte()
		if err != nil {
			return err
		}
		n := uint64(h >> 4)
		if n == 15 {
			if n, err = t.uvarint(); err != nil {
				return err
			}
		}
		if n > uint64(len(t.b)-t.i) { // every element takes a byte at least
			return errThrift
		}
		for ; n > 0; n-- {
			if err := t.skipElem(int(h&0x0f), depth+1); err != nil {
				return err
			}
		}
		return nil
	case ctMap:
		n, err := t.uvarint()
		if err != nil || n == 0 {
			return err
		}
		kv, err := t.byte()
		if err != nil {
			return err
		}
		if n > uint64(len(t.b)-t.i) {
			return errThrift
		}
		for ; n > 0; n-- {
			if err := t.skipElem(int(kv>>4), depth+1); err != nil {
				return err
			}
			if err := t.skipElem(int(kv&0x0f), depth+1); err != nil {
				return err
			}
		}
		return nil
	case ctStruct:
		last := 0
		for {
			id, ft, err := t.field(last)
			if err != nil {
				return err
			}
			if ft == ctStop {
				return nil
			}
			if err := t.skip(ft, depth+1); err != nil {
				return err
			}
			last = id
		}
	}
	return errThrift
}

// skipElem passes over an element of a list, set or map: like skip, but a
// boolean there takes a byte of its own (in a struct it lives in the field
// header).
func (t *thriftReader) skipElem(typ, depth int) error {
	if typ == ctTrue || typ == ctFalse {
		_, err := t.byte()
		return err
	}
	return t.skip(typ, depth)
}

// pageHeader parses a PageHeader, accepting only data pages (v1 or v2) of
// PLAIN values with no levels.
func (t *thriftReader) pageHeader() (pageHeader, error) {
	h := pageHeader{compressedValues: true}
	typ, gotType, gotV1, gotV2 := -1, false, false, false
	last := 0
	for {
		id, ft, err := t.field(last)
		if err != nil {
			return h, err
		}
		if ft == ctStop {
			break
		}
		switch {
		case id == 1 && ft == ctI32:
			typ, err = t.int32()
			gotType = true
		case id == 2 && ft == ctI32:
			h.uncompressed, err = t.int32()
		case id == 3 && ft == ctI32:
			h.compressed, err = t.int32()
		case id == 5 && ft == ctStruct:
			err = t.dataPage(&h, false)
			gotV1 = true
		case id == 8 && ft == ctStruct:
			err = t.dataPage(&h, true)
			gotV2 = true
		default: // crc, index and dictionary page headers, later fields
			err = t.skip(ft, 0)
		}
		if err != nil {
			return h, err
		}
		last = id
	}
	// A data page carries the header of its own version, and only that.
	if !gotType || gotV1 == gotV2 || typ == pageData && !gotV1 || typ == pageDataV2 && !gotV2 ||
		(typ != pageData && typ != pageDataV2) || h.values < 0 || h.uncompressed < 0 {
		return h, fmt.Errorf("page type %d: %w", typ, errPlainShape)
	}
	return h, nil
}

// dataPage parses a DataPageHeader (v2: DataPageHeaderV2) into h.
func (t *thriftReader) dataPage(h *pageHeader, v2 bool) error {
	last := 0
	enc := -1
	for {
		id, ft, err := t.field(last)
		if err != nil {
			return err
		}
		if ft == ctStop {
			break
		}
		var v int
		switch {
		case id == 1 && ft == ctI32:
			h.values, err = t.int32()
		case !v2 && id == 2 && ft == ctI32, v2 && id == 4 && ft == ctI32:
			enc, err = t.int32()
		case v2 && (id == 2 || id == 5 || id == 6) && ft == ctI32:
			// nulls and the two levels' lengths: all zero in a required column
			if v, err = t.int32(); err == nil && v != 0 {
				err = errPlainShape
			}
		case v2 && id == 7 && (ft == ctTrue || ft == ctFalse):
			h.compressedValues = ft == ctTrue
		default:
			err = t.skip(ft, 1)
		}
		if err != nil {
			return err
		}
		last = id
	}
	if enc != encPlain {
		return fmt.Errorf("encoding %d: %w", enc, errPlainShape)
	}
	return nil
}

// bytesOf views a slice of fixed-size numbers as its bytes. Parquet's
// PLAIN values are little-endian; the plain path is used only where the
// machine is too (nativeLittle).
func bytesOf[T int64 | int32 | float32](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

// nativeLittle is whether the machine stores numbers little-endian.
var nativeLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
