package compute

// Row gathers and scatters: the hot-row synchronisation moves the rows a
// phase changed between a packed table and a contiguous staging buffer,
// which then crosses the link in one copy.

// rowIndex is a host view of an int32 or int64 index buffer.
type rowIndex struct {
	i32 []int32
	i64 []int64
}

func (x rowIndex) len() int {
	if x.i32 != nil {
		return len(x.i32)
	}
	return len(x.i64)
}

func (x rowIndex) at(k int) int64 {
	if x.i32 != nil {
		return int64(x.i32[k])
	}
	return x.i64[k]
}

func rowIndexOf(m *hostMem, kernel string, b Buffer) rowIndex {
	if b.kind == Int32 {
		return rowIndex{i32: m.i32(kernel, "idx", b)}
	}
	return rowIndex{i64: m.i64(kernel, "idx", b)}
}

// checkRowsCopy panics unless packed has idx.len() rows of width and every
// index is a row of table.
func checkRowsCopy(kernel string, packed, table []float32, idx rowIndex, width int) {
	if width < 1 {
		shapePanic(kernel, "width %d < 1", width)
	}
	needLen(kernel, "packed rows", packed, idx.len()*width)
	rows := int64(len(table) / width)
	for k := range idx.len() {
		if r := idx.at(k); r < 0 || r >= rows {
			shapePanic(kernel, "idx[%d] = %d not in [0, %d)", k, r, rows)
		}
	}
}

func gatherRange(dst, src []float32, idx rowIndex, width, lo, hi int) {
	for k := lo; k < hi; k++ {
		r := int(idx.at(k))
		copy(dst[k*width:(k+1)*width], src[r*width:(r+1)*width])
	}
}

func scatterRange(dst, src []float32, idx rowIndex, width, lo, hi int) {
	for k := lo; k < hi; k++ {
		r := int(idx.at(k))
		copy(dst[r*width:(r+1)*width], src[k*width:(k+1)*width])
	}
}

// GatherRows implements Backend.
func (c *CPU) GatherRows(db, sb, ib Buffer, width int) {
	dst, src := c.f32("GatherRows", "dst", db), c.f32("GatherRows", "src", sb)
	idx := rowIndexOf(c.hostMem, "GatherRows", ib)
	checkRowsCopy("GatherRows", dst, src, idx, width)
	c.pool.rangeChunks(idx.len(), max(1, elemGrain/width), 1, func(lo, hi int) {
		gatherRange(dst, src, idx, width, lo, hi)
	})
}

// ScatterRows implements Backend.
func (c *CPU) ScatterRows(db, sb, ib Buffer, width int) {
	dst, src := c.f32("ScatterRows", "dst", db), c.f32("ScatterRows", "src", sb)
	idx := rowIndexOf(c.hostMem, "ScatterRows", ib)
	checkRowsCopy("ScatterRows", src, dst, idx, width)
	c.pool.rangeChunks(idx.len(), max(1, elemGrain/width), 1, func(lo, hi int) {
		scatterRange(dst, src, idx, width, lo, hi)
	})
}
