package dataset

// Batch is a block of consecutive rows of one Parquet file, decoded into the
// flat layout the rest of picasso works on. Sparse IDs are already mapped to
// rows of their feature's table (see IDMode) and checked to be in range.
type Batch struct {
	// N is the number of rows.
	N int
	// Label holds N values, each 0 or 1.
	Label []float32
	// Dense is row-major: N rows of len(Spec.Dense) values.
	Dense []float32
	// Sparse holds one column per Spec.Sparse feature, in spec order.
	Sparse []SparseColumn
	// PTrue holds N true probabilities when the spec names p_true and the
	// reader was asked for it; nil otherwise.
	PTrue []float32
	// Pos locates the batch's first row in the dataset.
	Pos Position
}

// SparseColumn holds the IDs of one sparse feature for the rows of a batch.
// One-hot: Offsets is nil and IDs[i] is row i's ID. Multi-hot: row i's IDs are
// IDs[Offsets[i]:Offsets[i+1]] (len(Offsets) == N+1).
type SparseColumn struct {
	IDs     []int64
	Offsets []int32
}

// Row returns the IDs of row i.
func (c *SparseColumn) Row(i int) []int64 {
	if c.Offsets == nil {
		return c.IDs[i : i+1]
	}
	return c.IDs[c.Offsets[i]:c.Offsets[i+1]]
}

// Select returns a new column holding rows keep[0], keep[1], ... of c, in
// that order.
func (c *SparseColumn) Select(keep []int) SparseColumn {
	if c.Offsets == nil {
		ids := make([]int64, len(keep))
		for j, i := range keep {
			ids[j] = c.IDs[i]
		}
		return SparseColumn{IDs: ids}
	}
	out := SparseColumn{Offsets: make([]int32, 1, len(keep)+1)}
	for _, i := range keep {
		out.IDs = append(out.IDs, c.Row(i)...)
		out.Offsets = append(out.Offsets, int32(len(out.IDs)))
	}
	return out
}

// Position names where a row is: file, row group and row within the group.
type Position struct {
	File     string
	RowGroup int
	Row      int64
}
