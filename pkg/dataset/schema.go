package dataset

import (
	"math"

	"github.com/apache/arrow/go/v15/arrow"
)

// SlotType is the Parquet type picasso writes sparse IDs with.
type SlotType int

const (
	// SlotInt64 writes IDs as int64 (raw datasets, cold mini-batches).
	SlotInt64 SlotType = iota
	// SlotInt32 writes IDs as int32 (slots of the packed hot table, and
	// row indices of tables that fit: see NarrowIDs).
	SlotInt32
)

// NarrowIDs returns the narrowest type that holds spec's IDs: SlotInt32
// when every sparse feature stores row indices (not raw values to hash) of
// a table of at most 2^31-1 rows, else SlotInt64. Half the bytes to store,
// decompress and copy for every stage that reads the data.
func NarrowIDs(spec *Spec) SlotType {
	for _, f := range spec.Sparse {
		if f.IDs == IDHash || f.Rows > math.MaxInt32 {
			return SlotInt64
		}
	}
	return SlotInt32
}

// ArrowSchema is the Arrow schema picasso writes for spec: label float32,
// dense float32, sparse int64/int32 (list of them when multi-hot) and, when
// withPTrue and the spec names it, p_true float32. No column is nullable.
func ArrowSchema(spec *Spec, ids SlotType, withPTrue bool) *arrow.Schema {
	var idType arrow.DataType = arrow.PrimitiveTypes.Int64
	if ids == SlotInt32 {
		idType = arrow.PrimitiveTypes.Int32
	}
	fields := []arrow.Field{{Name: spec.Label, Type: arrow.PrimitiveTypes.Float32}}
	for _, d := range spec.Dense {
		fields = append(fields, arrow.Field{Name: d, Type: arrow.PrimitiveTypes.Float32})
	}
	for _, f := range spec.Sparse {
		t := idType
		if f.MultiHot {
			t = arrow.ListOfNonNullable(idType)
		}
		fields = append(fields, arrow.Field{Name: f.Name, Type: t})
	}
	if withPTrue && spec.PTrue != "" {
		fields = append(fields, arrow.Field{Name: spec.PTrue, Type: arrow.PrimitiveTypes.Float32})
	}
	return arrow.NewSchema(fields, nil)
}
