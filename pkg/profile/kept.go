package profile

import "encoding/binary"

// Kept inputs of a logger whose tables all fit 32-bit IDs are held packed,
// in memory as in the counts file: per input, feature by feature (lens
// gives each multi-hot feature's count of IDs, in order), each ID in the
// bytes its table needs (idWidth). An ID is read as 4 bytes and masked to
// its width, so a packed slice keeps 3 bytes of spare capacity.

// idFeature is what a kept ID of one feature needs: the bytes it takes,
// the rows of its table (every ID is below them), and whether the feature
// is multi-hot (a length an input gives its count of IDs).
type idFeature struct {
	width int
	rows  uint64
	multi bool
}

// idLayout is how a logger packs its kept inputs.
type idLayout struct {
	feats  []idFeature
	oneHot bool  // no multi-hot feature: every input takes per bytes
	per    int   // the bytes of an input of one-hot features
	off    []int // where feature f's ID lies in such an input
}

func newIDLayout(tables []TableInfo, feats []FeatureInfo) idLayout {
	lay := idLayout{feats: make([]idFeature, len(feats)), off: make([]int, len(feats)), oneHot: true}
	for f, ft := range feats {
		rows := tables[ft.Table].Rows
		lay.feats[f] = idFeature{width: idWidth(rows), rows: uint64(rows), multi: ft.MultiHot}
		lay.off[f] = lay.per
		lay.per += lay.feats[f].width
		lay.oneHot = lay.oneHot && !ft.MultiHot
	}
	return lay
}

// idWidth is the bytes a kept ID of a table of rows rows takes.
func idWidth(rows int64) int {
	switch {
	case rows <= 1<<8:
		return 1
	case rows <= 1<<16:
		return 2
	case rows <= 1<<24:
		return 3
	}
	return 4
}

// idMask keeps the low w bytes of a value read as 4.
var idMask = [5]uint32{0, 0xff, 0xffff, 0xffffff, 0xffffffff}

// idAt is the ID of width w at byte p of packed IDs b (cap(b) >= p+4).
func idAt(b []byte, p, w int) uint32 {
	return binary.LittleEndian.Uint32(b[p:p+4]) & idMask[w]
}

// appendID appends the w low bytes of v to b.
func appendID(b []byte, v uint32, w int) []byte {
	b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	return b[:len(b)-4+w]
}

// putIDs writes, for each kept row k of rows, the ID ids[rows[k]] in its
// w bytes at dst[k*per:]: one feature's IDs of a block of one-hot inputs,
// dst starting at the feature's offset. Only the IDs' own bytes are
// written, so goroutines may fill other features of the same inputs.
func putIDs(dst []byte, per, w int, rows []int32, ids []int64) {
	le := binary.LittleEndian
	switch w { // an ID is below its table's rows, so it fits
	case 1:
		for k, i := range rows {
			dst[k*per] = byte(ids[i])
		}
	case 2:
		for k, i := range rows {
			le.PutUint16(dst[k*per:], uint16(ids[i]))
		}
	case 3:
		for k, i := range rows {
			le.PutUint16(dst[k*per:], uint16(ids[i]))
			dst[k*per+2] = byte(ids[i] >> 16)
		}
	default:
		for k, i := range rows {
			le.PutUint32(dst[k*per:], uint32(ids[i]))
		}
	}
}

// spare gives packed IDs the 3 bytes of capacity past their end that
// idAt reads.
func spare(b []byte) []byte {
	if cap(b)-len(b) < 3 {
		b = append(b, 0, 0, 0)[:len(b)]
	}
	return b
}

// idCount is the number of IDs of n inputs with multi-hot lengths lens.
func (lay *idLayout) idCount(n int64, lens []uint32) uint64 {
	oneHot := 0
	for _, f := range lay.feats {
		if !f.multi {
			oneHot++
		}
	}
	ids := uint64(n) * uint64(oneHot)
	for _, c := range lens {
		ids += uint64(c)
	}
	return ids
}

// eachID calls fn with the feature of each kept ID of n inputs, in order.
// *li indexes the inputs' first multi-hot length in lens, and moves past
// their last.
func (lay *idLayout) eachID(n int64, lens []uint32, li *int, fn func(f int)) {
	for range n {
		for f := range lay.feats {
			cnt := 1
			if lay.feats[f].multi {
				cnt = int(lens[*li])
				*li++
			}
			for range cnt {
				fn(f)
			}
		}
	}
}
