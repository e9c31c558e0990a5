// Package layout is the FAE layout (seeds/001 §4.2): the on-disk format in
// which pkg/classify stores a dataset rewritten into mini-batches that are
// entirely hot or entirely cold, and the reader that pkg/train and
// pkg/bench train from.
//
// A layout is a directory:
//
//	manifest.json          counts, batch size, threshold, per-table hot rows, digests
//	hotmap.bin             per table, the hot IDs in slot order
//	hotmap.parquet         the same map for other tools: table, table_name, slot, id
//	hot/part-NNNNN.parquet one row group per mini-batch; sparse columns hold
//	                       int32 slots of the packed hot table
//	cold/part-NNNNN.parquet one row group per mini-batch; original IDs
//	test/                  the dataset's test split, copied unchanged
//
// The packed hot table holds every table's hot rows one after another:
// table t's hot rows take slots [Offset(t), Offset(t)+TableRows(t)) of the
// HotSet, in ascending ID order. Open reads the manifest and the hotmap and
// indexes the mini-batches; Stream reads chosen mini-batches of one class,
// optionally decoding ahead on a background goroutine (dataset.Prefetch)
// and, for readers that keep no hot table, with hot slots mapped back to
// the table IDs they stand for.
//
// The manifest is written last, so a directory without one is not a
// complete layout; pkg/classify builds a layout beside its final name and
// renames it into place.
package layout
