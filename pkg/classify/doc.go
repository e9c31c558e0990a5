// Package classify is the second stage of FAE (seeds/001 §4.2): it tags
// embedding rows hot or cold from a profile, tags each input hot only when
// every ID it looks up is hot, and rewrites the dataset into mini-batches
// that are entirely hot or entirely cold (the FAE layout), so that hot
// mini-batches train without touching host memory.
//
// The layout is a directory:
//
//	manifest.json          counts, batch size, threshold, per-table hot rows, digests
//	hotmap.bin             per table, the hot IDs in slot order
//	hot/part-NNNNN.parquet one row group per mini-batch; sparse columns hold
//	                       int32 slots of the packed hot table
//	cold/part-NNNNN.parquet one row group per mini-batch; original IDs
//	test/                  the dataset's test split, copied unchanged
//
// Each class is shuffled with the seed by an external shuffle: rows are
// ordered by a keyed hash of their global row index, bucketed on disk by the
// hash's top bits and sorted within each bucket, so memory stays bounded and
// the output does not depend on how many workers read the input.
package classify
