// Package classify is the second stage of FAE (seeds/001 §4.2): it tags
// embedding rows hot or cold from a profile, tags each input hot only when
// every ID it looks up is hot, and rewrites the dataset into mini-batches
// that are entirely hot or entirely cold (the FAE layout), so that hot
// mini-batches train without touching host memory.
//
// The layout's format (manifest, hot and cold part files, hotmap) and its
// reader are pkg/layout; this package builds layouts and verifies them.
//
// Each class is shuffled with the seed by an external shuffle: rows are
// ordered by a keyed hash of their global row index, bucketed on disk by the
// hash's top bits and sorted within each bucket, so memory stays bounded and
// the output does not depend on how many workers read the input.
package classify
