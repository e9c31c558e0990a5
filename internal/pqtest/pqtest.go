// Package pqtest checks, for tests, a Parquet file that picasso wrote
// against what Arrow's own Parquet writer and reader make of its Arrow
// schema. Only tests import it: it links Arrow's Parquet bridge (pqarrow),
// which the picasso binary does not.
package pqtest

import (
	"bytes"
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/flight"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/apache/arrow/go/v15/parquet/schema"
)

// OpenAsArrow opens the Parquet file at path and checks that its Parquet
// schema is the one Arrow's writer gives sc, that its footer holds sc as
// Arrow stores it (the key ARROW:schema) and nothing else, and that
// Arrow's reader reads sc back from it. It returns the file, closed when
// t ends, and Arrow's reader over it, reading batch rows at a time.
func OpenAsArrow(t testing.TB, path string, sc *arrow.Schema, batch int64) (*file.Reader, *pqarrow.FileReader) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { pf.Close() })
	want, err := pqarrow.ToParquet(sc, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if got := pf.MetaData().Schema; !got.Equals(want) {
		var g, w strings.Builder
		schema.PrintSchema(got.Root(), &g, 2)
		schema.PrintSchema(want.Root(), &w, 2)
		t.Errorf("%s: Parquet schema:\n%s\nwant:\n%s", path, g.String(), w.String())
	}
	kv := pf.MetaData().KeyValueMetadata()
	wantMeta := base64.StdEncoding.EncodeToString(flight.SerializeSchema(sc, memory.DefaultAllocator))
	if got := kv.FindValue("ARROW:schema"); kv.Len() != 1 || got == nil || *got != wantMeta {
		t.Errorf("%s: key-value metadata %v; want only the Arrow schema", path, kv)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: batch}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if fr.Manifest.OriginSchema == nil || !fr.Manifest.OriginSchema.Equal(sc) {
		t.Errorf("%s: stored Arrow schema %v; want %v", path, fr.Manifest.OriginSchema, sc)
	}
	if got, err := fr.Schema(); err != nil || !sameFields(got, sc) {
		t.Errorf("%s: Arrow schema %v, %v; want %v", path, got, err, sc)
	}
	return pf, fr
}

// sameFields reports whether a and b have fields of the same names, types
// and nullability: Arrow's reader adds each field's Parquet field ID as
// field metadata.
func sameFields(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i, f := range a.Fields() {
		g := b.Field(i)
		if f.Name != g.Name || !arrow.TypeEqual(f.Type, g.Type) || f.Nullable != g.Nullable {
			return false
		}
	}
	return true
}

// WriteRecord writes rec to path as Arrow's Parquet writer does, with the
// writer properties props and the Arrow schema stored: files shaped as
// other tools write them, for picasso's readers to read.
func WriteRecord(t testing.TB, path string, rec arrow.Record, props ...parquet.WriterProperty) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

// SameFile fails t unless the file at got holds the bytes of the file at
// want (Arrow's writer's, for the same rows and schema).
func SameFile(t testing.TB, want, got string) {
	t.Helper()
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	g, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w, g) {
		t.Errorf("%s (%d bytes) differs from %s (%d bytes)", got, len(g), want, len(w))
	}
}
