package dataset

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/klauspost/compress/s2"
)

// plainFile writes a Parquet file of required FLOAT, INT32 and INT64
// columns the way plain.go reads them: PLAIN values, v1 data pages of at
// most 32 KiB before compression, Snappy, no statistics, no dictionary; the
// page headers and the footer are encoded here. It replaces the Parquet
// library's writer for files without list columns: a layout writes a row
// group of 40 short column chunks per mini-batch, and the library spent as
// much on each chunk's buffers, encoders and metadata builders as on
// compressing it.
type plainFile struct {
	w    io.Writer
	pos  int64 // bytes written
	err  error
	cols []plainCol
	kv   [][2]string // footer key-value metadata, in order
	by   string      // created_by

	groups   []plainGroup
	comp     []byte // compressed page scratch
	th       thriftWriter
	pageSize int // bytes of values a page, before compression
}

// plainCol is one leaf of the schema.
type plainCol struct {
	name string
	typ  int32 // Parquet physical type: plainFloat, plainInt32 or plainInt64
}

// width is the bytes of one value.
func (c plainCol) width() int {
	if c.typ == plainInt64 {
		return 8
	}
	return 4
}

// Parquet's codes for what plainFile writes.
const (
	plainInt32 = 1 // Type INT32
	plainInt64 = 2 // Type INT64
	plainFloat = 4 // Type FLOAT

	plainRequired = 0  // FieldRepetitionType REQUIRED
	plainInt32CT  = 17 // ConvertedType INT_32
	plainInt64CT  = 18 // ConvertedType INT_64
	plainSnappy   = 1  // CompressionCodec SNAPPY
	plainRLE      = 3  // Encoding RLE (the levels', named in page headers)
	plainPageSize = 32 << 10
)

// plainGroup is the footer's record of a row group.
type plainGroup struct {
	rows   int64
	chunks []plainChunkMeta
}

type plainChunkMeta struct {
	offset             int64 // of the chunk's first page header
	values             int64
	uncompressed, size int64 // page headers included
}

func newPlainFile(w io.Writer, cols []plainCol, kv [][2]string, createdBy string) *plainFile {
	p := &plainFile{w: w, cols: cols, kv: kv, by: createdBy, pageSize: plainPageSize}
	p.write([]byte("PAR1"))
	return p
}

func (p *plainFile) write(b []byte) {
	if p.err != nil {
		return
	}
	n, err := p.w.Write(b)
	p.pos += int64(n)
	p.err = err
}

// writeGroup writes a row group of rows rows (at least one); col(k)
// returns column k's values as bytes, little-endian, rows of them.
func (p *plainFile) writeGroup(rows int, col func(k int) []byte) error {
	if rows < 1 {
		return fmt.Errorf("a row group of %d rows", rows)
	}
	for k, c := range p.cols { // all checked before any is written
		if n := len(col(k)); n != rows*c.width() {
			return fmt.Errorf("column %s: %d bytes for %d rows", c.name, n, rows)
		}
	}
	g := plainGroup{rows: int64(rows), chunks: make([]plainChunkMeta, len(p.cols))}
	for k, c := range p.cols {
		width := c.width()
		vals := col(k)
		m := plainChunkMeta{offset: p.pos, values: int64(rows)}
		per := max(p.pageSize/width, 1)
		for lo := 0; lo < rows; lo += per {
			page := vals[lo*width : min(rows, lo+per)*width]
			// s2's Snappy-compatible encoder: any Snappy decoder reads its
			// blocks, which on picasso's columns come out 8-12% smaller
			// than golang/snappy's and decode about 45% faster (longer
			// matches), for 17% less time encoding.
			p.comp = s2.EncodeSnappy(p.comp[:cap(p.comp)], page)
			th := &p.th
			th.reset()
			th.i32(1, 0) // type: DATA_PAGE
			th.i32(2, int32(len(page)))
			th.i32(3, int32(len(p.comp)))
			th.begin(5) // data_page_header
			th.i32(1, int32(len(page)/width))
			th.i32(2, 0)        // encoding: PLAIN
			th.i32(3, plainRLE) // definition levels (none: the column is required)
			th.i32(4, plainRLE) // repetition levels (none)
			th.end()
			th.end()
			p.write(th.b)
			p.write(p.comp)
			m.uncompressed += int64(len(th.b) + len(page))
			m.size += int64(len(th.b) + len(p.comp))
		}
		g.chunks[k] = m
	}
	p.groups = append(p.groups, g)
	return p.err
}

// close writes the footer.
func (p *plainFile) close() error {
	var rows int64
	for _, g := range p.groups {
		rows += g.rows
	}
	th := &p.th
	th.reset()
	th.i32(1, 2) // version
	th.list(2, ctStruct, len(p.cols)+1)
	th.fields() // the schema's root
	th.str(4, "schema")
	th.i32(5, int32(len(p.cols)))
	th.end()
	for _, c := range p.cols {
		th.fields()
		th.i32(1, c.typ)
		th.i32(3, plainRequired)
		th.str(4, c.name)
		if c.typ != plainFloat { // signed integers, annotated as the library does
			ct, bits := int32(plainInt32CT), byte(32)
			if c.typ == plainInt64 {
				ct, bits = plainInt64CT, 64
			}
			th.i32(6, ct)
			th.begin(10) // logicalType: LogicalType
			th.begin(10) // INTEGER: IntType
			th.field(1, ctByte)
			th.b = append(th.b, bits)
			th.field(2, ctTrue) // isSigned
			th.end()
			th.end()
		}
		th.end()
	}
	th.i64(3, rows)
	th.list(4, ctStruct, len(p.groups))
	for _, g := range p.groups {
		th.fields()
		th.list(1, ctStruct, len(g.chunks))
		var total, size int64
		for k, m := range g.chunks {
			th.fields()
			th.i64(2, m.offset) // file_offset
			th.begin(3)         // meta_data
			th.i32(1, p.cols[k].typ)
			th.list(2, ctI32, 2)
			th.elemI32(0)        // PLAIN
			th.elemI32(plainRLE) // named for the (empty) levels
			th.list(3, ctBinary, 1)
			th.elemStr(p.cols[k].name)
			th.i32(4, plainSnappy)
			th.i64(5, m.values)
			th.i64(6, m.uncompressed)
			th.i64(7, m.size)
			th.i64(9, m.offset) // data_page_offset
			th.end()
			th.end()
			total += m.uncompressed
			size += m.size
		}
		th.i64(2, total)
		th.i64(3, g.rows)
		th.i64(5, g.chunks[0].offset) // file_offset
		th.i64(6, size)               // total_compressed_size
		th.end()
	}
	th.list(5, ctStruct, len(p.kv))
	for _, kv := range p.kv {
		th.fields()
		th.str(1, kv[0])
		th.str(2, kv[1])
		th.end()
	}
	th.str(6, p.by)
	th.end()
	if len(th.b) > math.MaxInt32 { // readers take the length as signed
		return fmt.Errorf("footer of %d bytes", len(th.b))
	}
	p.write(th.b)
	p.write(binary.LittleEndian.AppendUint32(nil, uint32(len(th.b))))
	p.write([]byte("PAR1"))
	return p.err
}

// thriftWriter encodes Thrift's compact protocol, what page headers and
// the footer need of it. Fields are written in increasing order within a
// struct; begin and fields open a struct (as a field, or as a list
// element), end closes it.
type thriftWriter struct {
	b    []byte
	last []int16 // the last field id of each open struct
}

func (t *thriftWriter) reset() { t.b, t.last = t.b[:0], append(t.last[:0], 0) }

func (t *thriftWriter) field(id int16, typ byte) {
	n := len(t.last) - 1
	if d := id - t.last[n]; d > 0 && d <= 15 {
		t.b = append(t.b, byte(d)<<4|typ)
	} else {
		t.b = append(t.b, typ)
		t.b = binary.AppendVarint(t.b, int64(id)) // zigzag, as Thrift's i16
	}
	t.last[n] = id
}

func (t *thriftWriter) i32(id int16, v int32) {
	t.field(id, ctI32)
	t.b = binary.AppendVarint(t.b, int64(v))
}

func (t *thriftWriter) i64(id int16, v int64) {
	t.field(id, ctI64)
	t.b = binary.AppendVarint(t.b, v)
}

func (t *thriftWriter) str(id int16, s string) {
	t.field(id, ctBinary)
	t.elemStr(s)
}

func (t *thriftWriter) elemStr(s string) {
	t.b = binary.AppendUvarint(t.b, uint64(len(s)))
	t.b = append(t.b, s...)
}

func (t *thriftWriter) elemI32(v int32) { t.b = binary.AppendVarint(t.b, int64(v)) }

// begin opens a struct as field id.
func (t *thriftWriter) begin(id int16) {
	t.field(id, ctStruct)
	t.fields()
}

// fields opens a struct whose header was written (a list element).
func (t *thriftWriter) fields() { t.last = append(t.last, 0) }

// end closes the innermost struct.
func (t *thriftWriter) end() {
	t.b = append(t.b, ctStop)
	t.last = t.last[:len(t.last)-1]
}

// list writes the header of field id, a list of n elements of type elem.
func (t *thriftWriter) list(id int16, elem byte, n int) {
	t.field(id, ctList)
	if n < 15 {
		t.b = append(t.b, byte(n)<<4|elem)
		return
	}
	t.b = append(t.b, 0xf0|elem)
	t.b = binary.AppendUvarint(t.b, uint64(n))
}
