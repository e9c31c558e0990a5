package dataset

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/schema"
)

// levelRow is one row as the level path must return it, or bad.
type levelRow struct {
	bad   bool
	label float32
	dense [2]float32
	a, c  int64
	b     []int64
	p     float32
}

func levelSpec() *Spec {
	return &Spec{Train: "x", Label: "y", Dense: []string{"d0", "d1"}, PTrue: "p",
		Sparse: []SparseFeature{{Name: "a", Rows: 1000}, {Name: "b", Rows: 50, MultiHot: true}, {Name: "c", Rows: 7, IDs: IDHash}}}
}

// levelRecord makes n random rows in one of two schemas of types and
// nulls that picasso never writes, each with its expected reading: nulls,
// NaNs, labels of 2 and IDs out of range make rows bad; lists are empty,
// null, hold nulls or run to maxList IDs.
func levelRecord(variant, n, maxList int, rng *rand.Rand) (arrow.Record, []levelRow) {
	listType := arrow.ListOf(arrow.PrimitiveTypes.Int64)
	fields := []arrow.Field{
		{Name: "y", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
		{Name: "d0", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "d1", Type: arrow.PrimitiveTypes.Int16},
		{Name: "a", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "b", Type: listType, Nullable: true},
		{Name: "c", Type: arrow.PrimitiveTypes.Int8},
		{Name: "p", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}
	if variant == 1 {
		listType = arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)
		fields[0] = arrow.Field{Name: "y", Type: arrow.FixedWidthTypes.Boolean}
		fields[2] = arrow.Field{Name: "d1", Type: arrow.PrimitiveTypes.Uint64, Nullable: true}
		fields[3] = arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64}
		fields[4] = arrow.Field{Name: "b", Type: listType}
		fields[5] = arrow.Field{Name: "c", Type: arrow.PrimitiveTypes.Uint32, Nullable: true}
		fields[6] = arrow.Field{Name: "p", Type: arrow.PrimitiveTypes.Float64}
	}
	sc := arrow.NewSchema(fields, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	rows := make([]levelRow, n)
	null := func() bool { return rng.IntN(40) == 0 }
	for i := range rows {
		r := &rows[i]
		// label
		if variant == 0 {
			lb := bld.Field(0).(*array.Uint8Builder)
			switch v := uint8(rng.IntN(2)); {
			case null():
				lb.AppendNull()
				r.bad = true
			case rng.IntN(50) == 0:
				lb.Append(2)
				r.bad = true
			default:
				lb.Append(v)
				r.label = float32(v)
			}
		} else {
			v := rng.IntN(2) == 1
			bld.Field(0).(*array.BooleanBuilder).Append(v)
			if v {
				r.label = 1
			}
		}
		// d0: float64, nullable, sometimes NaN or infinite
		db := bld.Field(1).(*array.Float64Builder)
		switch v := rng.NormFloat64(); {
		case null():
			db.AppendNull()
			r.bad = true
		case rng.IntN(60) == 0:
			db.Append([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}[rng.IntN(3)])
			r.bad = true
		default:
			db.Append(v)
			r.dense[0] = float32(v)
		}
		// d1: an integer column read as a dense float
		if variant == 0 {
			v := int16(rng.IntN(2000) - 1000)
			bld.Field(2).(*array.Int16Builder).Append(v)
			r.dense[1] = float32(v)
		} else if null() {
			bld.Field(2).(*array.Uint64Builder).AppendNull()
			r.bad = true
		} else {
			v := uint64(rng.IntN(1 << 20))
			bld.Field(2).(*array.Uint64Builder).Append(v)
			r.dense[1] = float32(v)
		}
		// a: one-hot IDs of a 1000-row table
		v := int64(rng.IntN(1000))
		if rng.IntN(70) == 0 {
			v = 1000 + int64(rng.IntN(5))
			r.bad = true
		}
		if variant == 0 {
			ab := bld.Field(3).(*array.Uint32Builder)
			if null() {
				ab.AppendNull()
				r.bad = true
			} else {
				ab.Append(uint32(v))
				r.a = v
			}
		} else {
			if rng.IntN(70) == 0 {
				v = -1 - int64(rng.IntN(3))
				r.bad = true
			}
			bld.Field(3).(*array.Int64Builder).Append(v)
			r.a = v
		}
		// b: multi-hot IDs of a 50-row table
		lb := bld.Field(4).(*array.ListBuilder)
		if variant == 0 && null() {
			lb.AppendNull()
			r.bad = true
		} else {
			lb.Append(true)
			k := rng.IntN(4)
			if rng.IntN(30) == 0 {
				k = rng.IntN(maxList + 1)
			}
			r.b = []int64{}
			for range k {
				id := int64(rng.IntN(50))
				if rng.IntN(500) == 0 {
					id = 50
					r.bad = true
				}
				if variant == 0 {
					eb := lb.ValueBuilder().(*array.Int64Builder)
					if rng.IntN(300) == 0 {
						eb.AppendNull()
						r.bad = true
						continue
					}
					eb.Append(id)
				} else {
					lb.ValueBuilder().(*array.Int32Builder).Append(int32(id))
				}
				r.b = append(r.b, id)
			}
		}
		// c: hashed IDs
		if variant == 0 {
			v := int8(rng.IntN(256) - 128)
			bld.Field(5).(*array.Int8Builder).Append(v)
			r.c = HashID(int64(v), 7)
		} else if null() {
			bld.Field(5).(*array.Uint32Builder).AppendNull()
			r.bad = true
		} else {
			v := rng.Uint32() // half of them past 2^31: read unsigned, not sign-extended
			bld.Field(5).(*array.Uint32Builder).Append(v)
			r.c = HashID(int64(v), 7)
		}
		// p
		pv := rng.Float64()
		if variant == 0 {
			pb := bld.Field(6).(*array.Float32Builder)
			if null() {
				pb.AppendNull()
				r.bad = true
			} else {
				pb.Append(float32(pv))
				r.p = float32(pv)
			}
		} else {
			bld.Field(6).(*array.Float64Builder).Append(pv)
			r.p = float32(pv)
		}
	}
	return bld.NewRecord(), rows
}

// TestLevelPath reads files of types and nulls picasso never writes,
// through the level path, and checks every value, every bad row and the
// error of a read that does not skip them, across row groups, pages,
// batches and lists that cross all three.
func TestLevelPath(t *testing.T) {
	cases := []struct {
		name      string
		variant   int
		rows      int
		groupRows int64
		batchRows int
		maxList   int
		dict      bool
	}{
		{"small groups", 0, 300, 7, 5, 4, true},
		{"long lists", 0, 2000, 500, 64, 3000, false},
		{"dictionary, big batches", 0, 3000, 1100, 8192, 20, true},
		{"required lists, bools, unsigned", 1, 3000, 256, 100, 2500, false},
		{"required lists, dictionary", 1, 500, 33, 7, 40, true},
	}
	for k, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(k), 9))
			rec, want := levelRecord(c.variant, c.rows, c.maxList, rng)
			defer rec.Release()
			path := filepath.Join(t.TempDir(), "x.parquet")
			writeRawProps(t, path, rec, parquet.WithMaxRowGroupLength(c.groupRows), parquet.WithDictionaryDefault(c.dict),
				parquet.WithDataPageSize(512), parquet.WithCompression(compress.Codecs.Snappy))
			spec := levelSpec()
			ds, err := Open(spec, path)
			if err != nil {
				t.Fatal(err)
			}
			var good []levelRow
			for _, r := range want {
				if !r.bad {
					good = append(good, r)
				}
			}
			if len(good) == len(want) || len(good) == 0 {
				t.Fatalf("%d of %d rows good: the case tests no bad rows", len(good), len(want))
			}
			r, err := ds.NewReader(ReaderOptions{SkipBad: true, BatchRows: c.batchRows, WithPTrue: true})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := 0
			eachBatch(t, r, func(b *Batch) {
				if r.levels == nil {
					t.Fatal("the batch was not read on the level path")
				}
				for i := range b.N {
					if got >= len(good) {
						t.Fatalf("more than the %d good rows", len(good))
					}
					checkLevelRow(t, b, i, good[got], got)
					got++
				}
			})
			if got != len(good) || r.Skipped() != int64(len(want)-len(good)) {
				t.Fatalf("read %d rows, skipped %d; want %d and %d", got, r.Skipped(), len(good), len(want)-len(good))
			}

			// Without SkipBad the read stops at a bad row, having returned
			// only the good rows before it.
			r2, err := ds.NewReader(ReaderOptions{BatchRows: c.batchRows, WithPTrue: true})
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Close()
			seen := 0
			for {
				b, err := r2.Next(context.Background())
				if err == io.EOF {
					t.Fatal("no error for the bad rows")
				}
				var re *RowError
				if errors.As(err, &re) {
					if !errors.Is(err, ErrBadData) {
						t.Fatalf("%v is not ErrBadData", err)
					}
					at := int(ds.RowGroups()[re.Pos.RowGroup].First + re.Pos.Row)
					if !want[at].bad || re.Column == "" {
						t.Fatalf("error %v at row %d, which is good", err, at)
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				for i := range b.N {
					checkLevelRow(t, b, i, good[seen], seen)
					seen++
				}
			}
		})
	}
}

func checkLevelRow(t *testing.T, b *Batch, i int, w levelRow, n int) {
	t.Helper()
	got := levelRow{label: b.Label[i], dense: [2]float32{b.Dense[2*i], b.Dense[2*i+1]},
		a: b.Sparse[0].IDs[i], b: b.Sparse[1].Row(i), c: b.Sparse[2].IDs[i], p: b.PTrue[i]}
	if w.b == nil {
		w.b = []int64{}
	}
	if got.b == nil {
		got.b = []int64{}
	}
	if fmt.Sprint(got) != fmt.Sprint(w) {
		t.Fatalf("good row %d: %+v; want %+v", n, got, w)
	}
}

// TestLevelPathOldLists reads the list shapes of older writers, which
// Arrow's writer never makes: a two-level LIST group over a repeated
// leaf, and a bare repeated leaf, with empty lists among them.
func TestLevelPathOldLists(t *testing.T) {
	two, err := schema.NewPrimitiveNode("element", parquet.Repetitions.Repeated, parquet.Types.Int64, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	twoLevel, err := schema.NewGroupNodeConverted("b", parquet.Repetitions.Optional, schema.FieldList{two}, schema.ConvertedTypes.List, -1)
	if err != nil {
		t.Fatal(err)
	}
	bare, err := schema.NewPrimitiveNode("b", parquet.Repetitions.Repeated, parquet.Types.Int32, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	lists := [][]int64{{1, 2}, {}, {3}, {4, 5, 6}, {}, {}, {7}}
	for _, c := range []struct {
		name string
		node schema.Node
		def  int16 // of a present ID
	}{{"two levels", twoLevel, 2}, {"bare repeated", bare, 1}} {
		t.Run(c.name, func(t *testing.T) {
			y, _ := schema.NewPrimitiveNode("y", parquet.Repetitions.Required, parquet.Types.Float, -1, -1)
			root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{y, c.node}, -1)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "old.parquet")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			pw := file.NewParquetWriter(f, root, file.WithWriterProps(parquet.NewWriterProperties(parquet.WithDictionaryDefault(false))))
			rg := pw.AppendRowGroup()
			cw, _ := rg.NextColumn()
			if _, err := cw.(*file.Float32ColumnChunkWriter).WriteBatch(make([]float32, len(lists)), nil, nil); err != nil {
				t.Fatal(err)
			}
			cw, _ = rg.NextColumn()
			var vals []int64
			var defs, reps []int16
			for _, l := range lists {
				if len(l) == 0 {
					defs, reps = append(defs, c.def-1), append(reps, 0)
				}
				for j, v := range l {
					vals = append(vals, v)
					defs = append(defs, c.def)
					reps = append(reps, min(int16(j), 1))
				}
			}
			switch w := cw.(type) {
			case *file.Int64ColumnChunkWriter:
				_, err = w.WriteBatch(vals, defs, reps)
			case *file.Int32ColumnChunkWriter:
				v32 := make([]int32, len(vals))
				for i, v := range vals {
					v32[i] = int32(v)
				}
				_, err = w.WriteBatch(v32, defs, reps)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := pw.Close(); err != nil {
				t.Fatal(err)
			}
			spec := &Spec{Train: "x", Label: "y", Sparse: []SparseFeature{{Name: "b", Rows: 10, MultiHot: true}}}
			ds, err := Open(spec, path)
			if err != nil {
				t.Fatal(err)
			}
			r, _ := ds.NewReader(ReaderOptions{BatchRows: 3})
			defer r.Close()
			var got [][]int64
			eachBatch(t, r, func(b *Batch) {
				for i := range b.N {
					got = append(got, append([]int64{}, b.Sparse[0].Row(i)...))
				}
			})
			if fmt.Sprint(got) != fmt.Sprint(lists) {
				t.Fatalf("lists %v; want %v", got, lists)
			}
		})
	}
}

// TestLevelPathSchemaErrors checks that columns of types picasso does not
// read are schema errors naming the file, the column and its type.
func TestLevelPathSchemaErrors(t *testing.T) {
	cases := []struct {
		name, col string
		typ       arrow.DataType
		want      string
	}{
		{"string IDs", "a", arrow.BinaryTypes.String, `column "a" has type BYTE_ARRAY (String)`},
		{"float IDs", "a", arrow.PrimitiveTypes.Float64, `column "a" has type float64, want int64`},
		{"list for a one-hot feature", "a", arrow.ListOf(arrow.PrimitiveTypes.Int64), `column "a" has type list<int64>, want int64`},
		{"flat multi-hot", "b", arrow.PrimitiveTypes.Int64, `column "b" has type int64, want list<int64>`},
		{"list of strings", "b", arrow.ListOf(arrow.BinaryTypes.String), `column "b" has type list<BYTE_ARRAY (String)>`},
		{"list of structs", "b", arrow.ListOf(arrow.StructOf(arrow.Field{Name: "u", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int64})), `column "b" has type list<struct>`},
		{"list of one-field structs", "b", arrow.ListOf(arrow.StructOf(arrow.Field{Name: "u", Type: arrow.PrimitiveTypes.Int64})), `column "b" has type list<struct>`},
		{"list of lists", "b", arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int64)), `column "b" has type list<struct>`},
		{"timestamp label", "y", arrow.FixedWidthTypes.Timestamp_ms, `column "y" has type INT64 (Timestamp`},
		{"struct dense", "d0", arrow.StructOf(arrow.Field{Name: "u", Type: arrow.PrimitiveTypes.Float32}), `column "d0" has type struct`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fields := []arrow.Field{
				{Name: "y", Type: arrow.PrimitiveTypes.Float32}, {Name: "d0", Type: arrow.PrimitiveTypes.Float32},
				{Name: "d1", Type: arrow.PrimitiveTypes.Float32}, {Name: "a", Type: arrow.PrimitiveTypes.Int64},
				{Name: "b", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}, {Name: "c", Type: arrow.PrimitiveTypes.Int64},
			}
			for i := range fields {
				if fields[i].Name == c.col {
					fields[i].Type = c.typ
				}
			}
			bld := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
			defer bld.Release()
			for _, f := range bld.Fields() {
				f.AppendEmptyValue()
			}
			rec := bld.NewRecord()
			defer rec.Release()
			path := filepath.Join(t.TempDir(), "t.parquet")
			writeRaw(t, path, rec)
			_, err := Open(levelSpec(), path)
			if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open: %v; want ErrSchema naming %s and %s", err, path, c.want)
			}
		})
	}
}

// TestCorruptPagesShiftNothing flips bytes across the pages of an
// uncompressed file whose IDs are the row's index, read by the level path
// (nullable columns) and by the direct path through the library's column
// readers (required ones, the plain path off). A read either fails with
// bad data naming the file, or returns every row, each with its own index
// but for the few a flipped value changed: a page the library could not
// read (a flipped size in its header) must not be skipped, shifting every
// row after it.
func TestCorruptPagesShiftNothing(t *testing.T) {
	for _, nullable := range []bool{true, false} {
		t.Run(map[bool]string{true: "level path", false: "direct path"}[nullable], func(t *testing.T) {
			testCorruptPagesShiftNothing(t, nullable)
		})
	}
}

func testCorruptPagesShiftNothing(t *testing.T, nullable bool) {
	const n, part = 4000, 3000
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "y", Type: arrow.PrimitiveTypes.Float32, Nullable: nullable},
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: nullable},
	}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	for i := range n {
		bld.Field(0).(*array.Float32Builder).Append(float32(i % 2))
		bld.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	rec := bld.NewRecord()
	defer rec.Release()
	dir := t.TempDir()
	src := filepath.Join(dir, "src.parquet")
	writeRawProps(t, src, rec, parquet.WithDataPageSize(1024), parquet.WithDictionaryDefault(false), parquet.WithMaxRowGroupLength(n))
	clean, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	spec := &Spec{Train: "x", Label: "y", Sparse: []SparseFeature{{Name: "a", Rows: 1 << 40}}}
	footer := int(binary.LittleEndian.Uint32(clean[len(clean)-8:]))
	fn := filepath.Join(dir, "part-0.parquet")
	// Flips: every 13th byte of the pages, and a low bit of each page
	// header's sizes (a data page header starts with its type, 0, then
	// its uncompressed and compressed sizes, equal here: 15 00 15 v 15 v
	// in Thrift's compact encoding).
	type flip struct {
		off int
		bit byte
	}
	var flips []flip
	end := len(clean) - 8 - footer
	for off := 4; off < end; off += 13 {
		flips = append(flips, flip{off, 0x10})
	}
	headers := 0
	for o := 4; o+8 < end; o++ {
		if clean[o] != 0x15 || clean[o+1] != 0 || clean[o+2] != 0x15 {
			continue
		}
		v, k := binary.Uvarint(clean[o+3:])
		if w, k2 := binary.Uvarint(clean[o+4+k:]); k <= 0 || clean[o+3+k] != 0x15 || k2 <= 0 || w != v {
			continue
		}
		headers++
		flips = append(flips, flip{o + 3, 0x02}, flip{o + 4 + k, 0x02})
	}
	if headers < 4 {
		t.Fatalf("found %d page headers; the test corrupts none of their sizes", headers)
	}
	failed := 0
	for _, fl := range flips {
		off := fl.off
		bad := append([]byte(nil), clean...)
		bad[off] ^= fl.bit
		if err := os.WriteFile(fn, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		ds, err := Open(spec, fn)
		if err != nil {
			t.Fatal(err)
		}
		// The first 3,000 rows only, as a sample's cut group reads them:
		// a shortfall at the group's end cannot reveal a skipped page.
		groups := ds.RowGroups()
		groups[0].Rows = part
		r, _ := ds.NewReader(ReaderOptions{BatchRows: 333, RowGroups: groups})
		r.noPlain = true
		rows, wrong := 0, 0
		for err == nil {
			var b *Batch
			if b, err = r.Next(context.Background()); err != nil {
				break
			}
			if (r.levels != nil) != nullable {
				t.Fatalf("level path %v; want %v", r.levels != nil, nullable)
			}
			for i, id := range b.Sparse[0].IDs {
				if id != int64(rows+i) {
					wrong++
				}
			}
			rows += b.N
		}
		r.Close()
		if err != io.EOF {
			failed++
			if !errors.Is(err, ErrBadData) || !strings.Contains(err.Error(), fn) {
				t.Fatalf("byte %d flipped: %v; want bad data naming %s", off, err, fn)
			}
			continue
		}
		if rows != part || wrong > 8 {
			t.Fatalf("byte %d flipped: read %d rows, %d of them with another row's ID, and no error", off, rows, wrong)
		}
	}
	if failed == 0 {
		t.Fatal("no flipped byte made a read fail: the test corrupts nothing")
	}
}
