// Package hybridhash is PICASSO's HybridHash (seeds/000 §III-D, Algorithm
// 1): an embedding store for data with no profile, for growing
// vocabularies and for tables larger than host memory.
//
// A Cache counts how often each (table, id) key is looked up with a
// Counter (a blocked count-min sketch with conservative update, halved
// every DecayIters steps so that it follows drift, and a bounded set of
// heavy hitters), so its memory is bounded whatever the number of distinct
// IDs.
// During the first WarmupIters steps every lookup is served from the cold
// storage (Algorithm 1, L8-12). At the end of warm-up and every FlushIters
// steps after it, Refresh picks the top-k keys by count (L23-26) and says
// which keys enter and which leave the hot store, so that only those rows
// move; the caller keeps the hot rows in device memory and serves hits there
// (L15-16).
//
// The cold storage has two tiers: a host tier (a sharded hash map from key
// to row and optimizer state, with a byte budget and CLOCK eviction) and a
// disk tier (an append-only log of rows in one file, with its index in
// host memory, about 25 bytes a row; see diskTier). Dirty rows evicted from
// the host tier are written to disk in batches; clean ones are dropped.
//
// Dynamic vocabulary: an ID seen for the first time gets a row once the
// counter has seen it AdmitAfter times (until then the caller serves it from
// its table's default row), and the row's initial value is a function of
// (table, id, seed) alone (InitRow), so training does not depend on when
// rows were evicted or reloaded.
//
// Checkpoint saves a cache (the disk tier's log so far, hard-linked, after
// the host tier's dirty rows are written to it, and the counter, hot set and
// statistics) and Restore reopens it. Sweep measures the hit ratio against
// the hot store's size on a trace, beside the oracle that keeps the top-k
// keys by true count (the shape of PICASSO's Table VI).
package hybridhash
