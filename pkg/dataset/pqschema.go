package dataset

import (
	"bytes"
	"encoding/base64"
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/schema"
)

// ArrowSchemaKey is the footer key under which a Parquet file keeps the
// Arrow schema it was written from, so that Arrow readers (pyarrow, DuckDB's
// Arrow export) restore its exact types.
const ArrowSchemaKey = "ARROW:schema"

// ParquetSchema returns the Parquet schema that Arrow's Parquet writer
// gives Arrow schema sc, for the types picasso writes and reads back
// (booleans, integers, floats, strings, binaries and lists of them): a
// root group "schema", every field required unless nullable, integers
// annotated with their width and sign, strings as UTF-8 byte arrays, and a
// list as the three-level LIST group whose element is optional. Files
// written with it read back through Arrow as they would had Arrow written
// them. picasso writes its Parquet with the library's column writers
// instead of Arrow's record writer: that writer's package starts Arrow's
// compute registry and an RPC stack on every run of every command.
func ParquetSchema(sc *arrow.Schema) (*schema.Schema, error) {
	nodes := make(schema.FieldList, 0, sc.NumFields())
	for _, f := range sc.Fields() {
		n, err := parquetNode(f.Name, f.Type, f.Nullable)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Repeated, nodes, -1)
	if err != nil {
		return nil, err
	}
	return schema.NewSchema(root), nil
}

func parquetNode(name string, t arrow.DataType, nullable bool) (schema.Node, error) {
	rep := parquet.Repetitions.Required
	if nullable {
		rep = parquet.Repetitions.Optional
	}
	var lt schema.LogicalType = schema.NoLogicalType{}
	var pt parquet.Type
	if id := t.ID(); arrow.IsInteger(id) { // INT32 up to 32 bits, INT64 above
		bits := t.(arrow.FixedWidthDataType).BitWidth()
		pt, lt = parquet.Types.Int32, schema.NewIntLogicalType(int8(bits), arrow.IsSignedInteger(id))
		if bits == 64 {
			pt = parquet.Types.Int64
		}
		return schema.NewPrimitiveNodeLogical(name, rep, lt, pt, -1, -1)
	}
	switch t.ID() {
	case arrow.BOOL:
		pt = parquet.Types.Boolean
	case arrow.FLOAT32:
		pt = parquet.Types.Float
	case arrow.FLOAT64:
		pt = parquet.Types.Double
	case arrow.STRING:
		pt, lt = parquet.Types.ByteArray, schema.StringLogicalType{}
	case arrow.BINARY:
		pt = parquet.Types.ByteArray
	case arrow.LIST:
		elem, err := parquetNode(name, t.(*arrow.ListType).Elem(), true)
		if err != nil {
			return nil, err
		}
		return schema.ListOf(elem, rep, -1)
	default:
		return nil, fmt.Errorf("dataset: column %q: no Parquet type for %s", name, t)
	}
	return schema.NewPrimitiveNodeLogical(name, rep, lt, pt, -1, -1)
}

// ArrowSchemaMetadata returns the value of ArrowSchemaKey for sc: the
// schema as an Arrow IPC stream without batches, in base64, as Arrow's
// Parquet writer stores it.
func ArrowSchemaMetadata(sc *arrow.Schema) (string, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(sc), ipc.WithAllocator(memory.DefaultAllocator))
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("dataset: Arrow schema: %w", err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}
