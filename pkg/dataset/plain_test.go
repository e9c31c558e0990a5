package dataset

import (
	"bytes"
	"errors"
	"math/rand/v2"
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
