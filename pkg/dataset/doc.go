// Package dataset is picasso's data layout: the Spec that names a dataset's
// label, dense and sparse columns and its embedding tables, the Arrow schema
// written for it, a streaming Parquet reader (Open, Dataset.NewReader) that
// decodes row groups into Batches and checks every value (a bad one is a
// RowError naming file, row group, row and column), and a Writer that writes
// Batches to one Parquet file through a temporary name.
//
// Files of the shape picasso writes (required columns, PLAIN values, no
// dictionary, Snappy) are read and, without list columns, written by
// picasso's own page decoder and writer (plain.go, plainwrite.go), which
// skip the Parquet library's per-page copies and per-chunk overhead; any
// other file goes through the library. IDs are INT32 where every table
// fits (NarrowIDs), INT64 otherwise.
//
// Every other stage reads and writes data through this package; the
// programs that make data live in packages of their own: gen (synthetic
// data) and convert (Criteo and Avazu text logs).
package dataset
