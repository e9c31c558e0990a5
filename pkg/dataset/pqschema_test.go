package dataset

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/flight"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/apache/arrow/go/v15/parquet/schema"
)

// TestParquetSchemaAsArrow checks ParquetSchema and ArrowSchemaMetadata
// against Arrow's own Parquet writer, field by field, for every type they
// take, nullable or not.
func TestParquetSchemaAsArrow(t *testing.T) {
	types := []arrow.DataType{
		arrow.FixedWidthTypes.Boolean,
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Uint16,
		arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint64,
		arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
		arrow.BinaryTypes.String, arrow.BinaryTypes.Binary,
		arrow.ListOf(arrow.PrimitiveTypes.Int64), arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32),
		arrow.ListOfNonNullable(arrow.BinaryTypes.String),
	}
	var fields []arrow.Field
	for i, typ := range types {
		for _, nullable := range []bool{false, true} {
			fields = append(fields, arrow.Field{Name: string(rune('a'+i)) + map[bool]string{false: "r", true: "n"}[nullable], Type: typ, Nullable: nullable})
		}
	}
	for _, sc := range []*arrow.Schema{
		arrow.NewSchema(fields, nil),
		ArrowSchema(testSpec(), SlotInt32, true),
		ArrowSchema(testSpec(), SlotInt64, false),
	} {
		got, err := ParquetSchema(sc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := pqarrow.ToParquet(sc, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equals(want) {
			t.Fatalf("schema:\n%s\nwant:\n%s", printSchema(got), printSchema(want))
		}
		if got.NumColumns() != want.NumColumns() {
			t.Fatalf("%d columns, want %d", got.NumColumns(), want.NumColumns())
		}
		for i := 0; i < got.NumColumns(); i++ {
			g, w := got.Column(i), want.Column(i)
			if g.Path() != w.Path() || g.MaxDefinitionLevel() != w.MaxDefinitionLevel() || g.MaxRepetitionLevel() != w.MaxRepetitionLevel() ||
				!g.LogicalType().Equals(w.LogicalType()) || g.ConvertedType() != w.ConvertedType() {
				t.Fatalf("column %d: %s def %d rep %d %s; want %s def %d rep %d %s", i, g.Path(), g.MaxDefinitionLevel(), g.MaxRepetitionLevel(),
					g.LogicalType(), w.Path(), w.MaxDefinitionLevel(), w.MaxRepetitionLevel(), w.LogicalType())
			}
		}
		meta, err := ArrowSchemaMetadata(sc)
		if err != nil {
			t.Fatal(err)
		}
		if want := base64.StdEncoding.EncodeToString(flight.SerializeSchema(sc, memory.DefaultAllocator)); meta != want {
			t.Fatalf("Arrow schema metadata %q; want %q", meta, want)
		}
	}
	bad := arrow.NewSchema([]arrow.Field{{Name: "t", Type: arrow.FixedWidthTypes.Timestamp_us}}, nil)
	if _, err := ParquetSchema(bad); err == nil {
		t.Fatal("a timestamp column: no error")
	}
}

func printSchema(s *schema.Schema) string {
	var b strings.Builder
	schema.PrintSchema(s.Root(), &b, 2)
	return b.String()
}
