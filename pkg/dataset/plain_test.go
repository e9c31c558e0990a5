package dataset

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPageHeaderCorrupt: page headers that lie (a container claiming more
// elements than there are bytes, a page type with the other version's
// header) are errors, and no run of bytes makes the parser panic or loop.
func TestPageHeaderCorrupt(t *testing.T) {
	// Field 9, a map of 2^64-1 boolean pairs: booleans in a map take a byte
	// each, so the count cannot fit the bytes left.
	hugeMap := append(append([]byte{0x9b}, bytes.Repeat([]byte{0xff}, 9)...), 0x01, 0x11, 0x00)
	// type, uncompressed 8, compressed 8, then a v2 header (field 8: 1 value,
	// PLAIN), then stop.
	page := func(typ byte) []byte {
		return []byte{0x15, typ, 0x15, 0x10, 0x15, 0x10, 0x5c, 0x15, 0x02, 0x35, 0x00, 0x00, 0x00}
	}
	for name, b := range map[string][]byte{
		"huge map":           hugeMap,
		"huge list":          append(append([]byte{0x99, 0xf1}, bytes.Repeat([]byte{0xff}, 9)...), 0x01),
		"v1 type, v2 header": page(0x00), // zigzag(0): DATA_PAGE
		"dictionary page":    page(0x04), // zigzag(2): DICTIONARY_PAGE
	} {
		p := thriftReader{b: b}
		if _, err := p.pageHeader(); err == nil {
			t.Errorf("%s: parsed; want an error", name)
		}
	}
	p := thriftReader{b: page(0x06)} // zigzag(3): DATA_PAGE_V2
	h, err := p.pageHeader()
	if err != nil || h.values != 1 || h.uncompressed != 8 || h.compressed != 8 || !h.compressedValues {
		t.Fatalf("v2 page: %+v, %v; want 1 value of 8 bytes", h, err)
	}
	// Random bytes, and the good header with bytes flipped: an error or a
	// header, always at once.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		var b []byte
		if i%2 == 0 {
			b = make([]byte, 1+rng.IntN(40))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
		} else {
			b = page(0x06)
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		}
		p := thriftReader{b: b}
		if h, err := p.pageHeader(); err == nil && (p.i > len(b) || h.values < 0) {
			t.Fatalf("% x: header %+v ends at %d of %d bytes", b, h, p.i, len(b))
		} else if err != nil && !errors.Is(err, errThrift) && !errors.Is(err, errPlainShape) {
			t.Fatalf("% x: error %v is neither corrupt nor unexpected shape", b, err)
		}
	}
}

// FuzzPlainChunk decodes arbitrary bytes as a column chunk of 300 INT64
// values, Snappy-compressed or not: an error or the values, never a panic
// or a hang. The seeds are chunks plainFile writes, in one page and in
// several.
func FuzzPlainChunk(f *testing.F) {
	const n = 300
	vals := make([]int64, n)
	for i := range vals {
		vals[i] = int64(i * 7919 % 1000)
	}
	for _, page := range []int{n * 8, 512} {
		var buf bytes.Buffer
		p := newPlainFile(&buf, []plainCol{{"a", plainInt64}}, nil, "picasso")
		p.pageSize = page
		if err := p.writeGroup(n, func(int) []byte { return bytesOf(vals) }); err != nil {
			f.Fatal(err)
		}
		chunk := buf.Bytes()[4:] // after the magic
		c := plainChunk{raw: chunk, snappy: true, width: 8, left: n}
		got := make([]int64, n)
		if err := c.read(bytesOf(got)); err != nil || !slices.Equal(got, vals) {
			f.Fatalf("pages of %d bytes: read back %v (%v); want the values written", page, got[:5], err)
		}
		f.Add(chunk, true)
	}
	f.Add([]byte{0x15, 0x00}, false)
	f.Fuzz(func(t *testing.T, raw []byte, compressed bool) {
		c := plainChunk{raw: raw, snappy: compressed, width: 8, left: n}
		dst := make([]byte, n*8)
		if err := c.read(dst); err == nil && c.left != 0 {
			t.Fatalf("read all %d values but %d are left", n, c.left)
		}
	})
}
