package hybridhash

import (
	"slices"
)

// Cache is one HybridHash: the counter, the hot set's keys and the cold
// storage (host and disk tiers). The hot rows themselves live with the
// caller (in device memory): Refresh says which keys enter and leave, Take
// hands over an entering row and Store takes back a leaving one.
//
// A training step resolves each table's IDs (Resolve, which counts them),
// fetches the rows of the misses (Fetch), stores them back after the
// update (Store) and ends with EndStep. A Cache is not safe for concurrent
// use.
type Cache struct {
	o     Options
	cnt   *Counter
	host  *hostTier
	disk  *diskTier
	itr   int64
	hot   []map[int64]int32 // per table: hot ID → index in HotIDs(t)
	hotID [][]int64         // per table: hot IDs, increasing
	seen  []map[int64]int32 // per table: this batch's distinct IDs → index in ent
	ent   [][]entry         // per table: this batch's distinct IDs
	count bool              // ent holds sightings the counter has not had
	st    Stats
	zero  []float32
}

// entry is one distinct ID of a batch: where it is served from (see
// Resolve) and its sightings not yet counted.
type entry struct {
	id   int64
	code int32
	n    uint32
}

// Stats are a cache's counters since it was created (or restored).
type Stats struct {
	// Lookups and Hits count ID occurrences in training batches (hits:
	// served by the hot store); Unique and UniqueHits count distinct IDs
	// per batch and table, summed over batches (PICASSO Table VI's "unique
	// IDs" ratio).
	Lookups    int64 `json:"lookups"`
	Hits       int64 `json:"hits"`
	Unique     int64 `json:"unique"`
	UniqueHits int64 `json:"unique_hits"`
	// Admitted rows were created on first sight (after AdmitAfter
	// sightings); Refused counts misses served by a default row.
	Admitted int64 `json:"admitted"`
	Refused  int64 `json:"refused"`
	// Entered and Left count rows moved into and out of the hot store;
	// Refreshes the hot-set refreshes.
	Entered   int64 `json:"entered"`
	Left      int64 `json:"left"`
	Refreshes int64 `json:"refreshes"`
	// Evictions from the host tier; disk traffic in bytes and rows.
	Evictions        int64 `json:"evictions"`
	DiskBytesRead    int64 `json:"disk_bytes_read"`
	DiskBytesWritten int64 `json:"disk_bytes_written"`
	DiskRowsRead     int64 `json:"disk_rows_read"`
	DiskRowsWritten  int64 `json:"disk_rows_written"`
	// Rows per tier now: in the hot store, in the host tier, and on disk
	// only (every admitted row is in exactly one of hot, host or disk
	// only; a host row may also have an older copy on disk).
	HotRows      int64 `json:"hot_rows"`
	HostRows     int64 `json:"host_rows"`
	DiskOnlyRows int64 `json:"disk_only_rows"`
}

// HitRatio returns Hits/Lookups (0 without lookups).
func (s Stats) HitRatio() float64 { return ratio(s.Hits, s.Lookups) }

// UniqueHitRatio returns UniqueHits/Unique.
func (s Stats) UniqueHitRatio() float64 { return ratio(s.UniqueHits, s.Unique) }

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// New opens a cache; its disk tier is created in o.DiskDir.
func New(o Options) (*Cache, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	cnt, err := NewCounter(o.SketchWidth, o.SketchDepth, o.Heavy, o.Seed)
	if err != nil {
		return nil, err
	}
	disk, err := openDisk(o.DiskDir, o.DiskBatchRows)
	if err != nil {
		return nil, err
	}
	c := &Cache{o: o, cnt: cnt, disk: disk, zero: make([]float32, o.Width)}
	c.host = newHostTier(o.Width, HostRows(o.HostBytes, o.Width), disk.put)
	c.hot = make([]map[int64]int32, o.Tables)
	c.hotID = make([][]int64, o.Tables)
	c.seen = make([]map[int64]int32, o.Tables)
	c.ent = make([][]entry, o.Tables)
	for t := range o.Tables {
		c.hot[t] = map[int64]int32{}
		c.seen[t] = map[int64]int32{}
	}
	return c, nil
}

// Close closes the disk tier (uncommitted rows are dropped: a run resumes
// from its last checkpoint).
func (c *Cache) Close() error { return c.disk.close() }

// Options returns the cache's options, defaults filled in.
func (c *Cache) Options() Options { return c.o }

// Iter returns the number of steps ended so far.
func (c *Cache) Iter() int64 { return c.itr }

// HotIDs returns table t's hot IDs, increasing: hot index i is HotIDs(t)[i].
func (c *Cache) HotIDs(t int) []int64 { return c.hotID[t] }

// Resolve looks up the IDs of table t of one batch: out[i] is the hot index
// of ids[i] (≥ 0) or -1-j when it misses, j indexing the batch's distinct
// misses of t, which it appends to misses in first-seen order (call it
// with the same misses for every feature of a table). With train it counts
// every ID (Algorithm 1, L10 and L20; the counter gets each distinct ID's
// sightings at once, before the next Fetch or at EndStep) and the hit
// statistics; evaluations resolve without counting. Call Reset between
// batches.
func (c *Cache) Resolve(t int, ids []int64, out []int32, misses []int64, train bool) []int64 {
	hot, seen, ent := c.hot[t], c.seen[t], c.ent[t]
	warm := c.itr >= c.o.WarmupIters
	hits := int64(0)
	for i, id := range ids {
		j, ok := seen[id]
		if !ok {
			code := int32(-1 - len(misses))
			if h, isHot := hot[id]; isHot && warm {
				code = h
			} else {
				misses = append(misses, id)
			}
			j = int32(len(ent))
			ent = append(ent, entry{id: id, code: code})
			seen[id] = j
			if train {
				c.st.Unique++
				if code >= 0 {
					c.st.UniqueHits++
				}
			}
		}
		e := &ent[j]
		e.n++
		out[i] = e.code
		if e.code >= 0 {
			hits++
		}
	}
	c.ent[t] = ent
	if train {
		c.st.Lookups += int64(len(ids))
		c.st.Hits += hits
		c.count = true
	}
	return misses
}

// flushCounts gives the counter the sightings of the batch's IDs.
func (c *Cache) flushCounts() {
	if !c.count {
		return
	}
	for t, ent := range c.ent {
		for i := range ent {
			if e := &ent[i]; e.n > 0 {
				c.cnt.AddN(Key{Table: int32(t), ID: e.id}, e.n)
				e.n = 0
			}
		}
	}
	c.count = false
}

// Reset forgets the batch's distinct IDs (before the next batch).
func (c *Cache) Reset() {
	c.flushCounts()
	for t := range c.seen {
		clear(c.seen[t])
		c.ent[t] = c.ent[t][:0]
	}
}

// EndStep ends a training step: it counts the iteration and decays the
// counter every DecayIters steps.
func (c *Cache) EndStep() {
	c.flushCounts()
	c.itr++
	if d := c.o.DecayIters; d > 0 && c.itr%d == 0 {
		c.cnt.Decay()
	}
}

// RefreshDue reports whether the hot set is to be refreshed before the
// next step: at the end of warm-up and every FlushIters steps after.
func (c *Cache) RefreshDue() bool {
	w := c.o.WarmupIters
	return c.itr >= w && (c.itr-w)%c.o.FlushIters == 0
}

// Plan is a refresh of the hot set.
type Plan struct {
	// Enter lists the keys entering the hot store and Leave those leaving
	// it, by table then ID.
	Enter, Leave []Key
}

// Refresh makes the top HotRows keys by count the hot set (Algorithm 1,
// L24-25) and returns the keys that enter and leave. The caller moves the
// leaving rows out of its hot store (Store) and the entering ones in
// (Take); rows that stay do not move.
func (c *Cache) Refresh() Plan {
	top := c.cnt.Top(c.o.HotRows)
	slices.SortFunc(top, Key.Compare)
	var p Plan
	next := make([][]int64, c.o.Tables)
	for _, k := range top {
		if int(k.Table) >= c.o.Tables || k.Table < 0 {
			continue
		}
		next[k.Table] = append(next[k.Table], k.ID)
		if _, ok := c.hot[k.Table][k.ID]; !ok {
			p.Enter = append(p.Enter, k)
		}
	}
	for t := range c.o.Tables {
		for _, id := range c.hotID[t] {
			if _, ok := slices.BinarySearch(next[t], id); !ok {
				p.Leave = append(p.Leave, Key{Table: int32(t), ID: id})
			}
		}
	}
	c.setHot(next)
	c.st.Entered += int64(len(p.Enter))
	c.st.Left += int64(len(p.Leave))
	c.st.Refreshes++
	return p
}

// setHot makes ids (per table, increasing) the hot set.
func (c *Cache) setHot(ids [][]int64) {
	for t := range c.o.Tables {
		m := make(map[int64]int32, len(ids[t]))
		for i, id := range ids[t] {
			m[id] = int32(i)
		}
		c.hot[t], c.hotID[t] = m, ids[t]
	}
}

// Fetch reads the row of a missed key into dst (Width floats) and reports
// whether it has one: from the host tier, else from disk (kept in the host
// tier when training), else, when training and the counter has seen it
// AdmitAfter times, a new row (InitRow, state zero). Without a row the
// caller serves the key with its table's default row.
func (c *Cache) Fetch(k Key, dst []float32, train bool) (bool, error) {
	if train {
		c.flushCounts()
	}
	if c.host.get(k, dst) {
		return true, nil
	}
	ok, err := c.disk.get(k, dst)
	if err != nil {
		return false, err
	}
	if ok {
		if train {
			return true, c.host.put(k, dst, false)
		}
		return true, nil
	}
	if !train {
		return false, nil
	}
	if c.cnt.Estimate(k) < c.o.AdmitAfter {
		c.st.Refused++
		return false, nil
	}
	c.newRow(k, dst)
	return true, c.host.put(k, dst, true)
}

func (c *Cache) newRow(k Key, dst []float32) {
	InitRow(dst[:c.o.Dim], k, c.o.Seed, c.o.Bounds[k.Table])
	clear(dst[c.o.Dim:])
	c.st.Admitted++
}

// Store takes back a row the caller changed (a miss after its update, or
// a row leaving the hot store): it goes to the host tier, dirty.
func (c *Cache) Store(k Key, v []float32) error { return c.host.put(k, v, true) }

// Take hands over the row of a key entering the hot store, removing it
// from the host tier (its disk copy, if any, is stale from then on and
// never read while the key is hot). A key with no row gets a new one.
func (c *Cache) Take(k Key, dst []float32) error {
	if ok, _ := c.host.take(k, dst); ok {
		return nil
	}
	ok, err := c.disk.get(k, dst)
	if err != nil || ok {
		return err
	}
	c.newRow(k, dst)
	return nil
}

// Stats returns the cache's counters and the rows in each tier.
func (c *Cache) Stats() Stats {
	s := c.st
	s.Evictions = c.host.evicts
	s.DiskBytesRead, s.DiskBytesWritten = c.disk.read, c.disk.written
	s.DiskRowsRead, s.DiskRowsWritten = c.disk.readRows, c.disk.writtenRows
	for t := range c.hotID {
		s.HotRows += int64(len(c.hotID[t]))
	}
	s.HostRows = c.host.rows
	s.DiskOnlyRows = s.Admitted - s.HotRows - s.HostRows
	return s
}
