package hybridhash

import "fmt"

// hostTier is the host-memory level of the cold storage: a hash map from
// key to row (the embedding row and its optimizer state, width floats),
// split into shards by key hash, each holding at most its share of the
// budget's rows. A full shard evicts with CLOCK (second chance): a row
// looked up since the hand last passed it is kept once more. Evicting a
// dirty row hands it to spill (the disk tier); a clean one is dropped, as
// the disk already holds it.
type hostTier struct {
	width  int
	shards []hostShard
	spill  func(k Key, v []float32) error
	rows   int64 // rows held
	evicts int64 // rows evicted
}

type hostShard struct {
	idx   []map[int64]int32 // per table (int64 keys hash fast)
	keys  []Key
	vals  []float32 // cap × width
	ref   []bool
	dirty []bool
	live  []bool
	free  []int32
	used  int // slots handed out so far
	hand  int
}

// hostEntryOverhead is the bytes a host-tier row costs beyond its floats:
// the map entry, the key and the flags.
const hostEntryOverhead = 64

// hostShards is the number of shards of the host tier.
const hostShards = 16

// newHostTier returns a host tier of rows of width floats holding at most
// capRows rows.
func newHostTier(width int, capRows int64, spill func(Key, []float32) error) *hostTier {
	h := &hostTier{width: width, shards: make([]hostShard, hostShards), spill: spill}
	per := max(1, int(capRows/hostShards))
	for i := range h.shards {
		s := &h.shards[i]
		s.keys = make([]Key, per)
		s.vals = make([]float32, per*width)
		s.ref = make([]bool, per)
		s.dirty = make([]bool, per)
		s.live = make([]bool, per)
	}
	return h
}

func (h *hostTier) shard(k Key) *hostShard {
	return &h.shards[k.hash(0x686f7374)&(hostShards-1)]
}

// index returns the map of table t (≥ 0) in s.
func (s *hostShard) index(t int32) map[int64]int32 {
	for int(t) >= len(s.idx) {
		s.idx = append(s.idx, map[int64]int32{})
	}
	return s.idx[t]
}

// capacity returns the most rows the tier holds.
func (h *hostTier) capacity() int64 { return int64(len(h.shards) * len(h.shards[0].keys)) }

// get copies k's row into dst and reports whether the tier holds it.
func (h *hostTier) get(k Key, dst []float32) bool {
	if k.Table < 0 { // rows the caller saves under its own keys live on disk only
		return false
	}
	s := h.shard(k)
	i, ok := s.index(k.Table)[k.ID]
	if !ok {
		return false
	}
	s.ref[i] = true
	copy(dst, s.vals[int(i)*h.width:(int(i)+1)*h.width])
	return true
}

// put stores k's row, marking it dirty when it differs from the disk's
// copy (or the disk has none). It may evict another row.
func (h *hostTier) put(k Key, v []float32, dirty bool) error {
	if k.Table < 0 {
		return fmt.Errorf("hybridhash: host tier: table %d id %d: negative tables are not rows of the model: %w", k.Table, k.ID, ErrInvalidOptions)
	}
	s := h.shard(k)
	m := s.index(k.Table)
	i, ok := m[k.ID]
	if !ok {
		var err error
		if i, err = h.slot(s); err != nil {
			return err
		}
		m[k.ID] = i
		s.keys[i], s.live[i], s.dirty[i] = k, true, false
		h.rows++
	}
	s.ref[i] = true
	s.dirty[i] = s.dirty[i] || dirty
	copy(s.vals[int(i)*h.width:(int(i)+1)*h.width], v)
	return nil
}

// take removes k's row, copying it into dst, and reports whether the tier
// held it and whether it was dirty.
func (h *hostTier) take(k Key, dst []float32) (ok, dirty bool) {
	if k.Table < 0 {
		return false, false
	}
	s := h.shard(k)
	m := s.index(k.Table)
	i, ok := m[k.ID]
	if !ok {
		return false, false
	}
	copy(dst, s.vals[int(i)*h.width:(int(i)+1)*h.width])
	dirty = s.dirty[i]
	delete(m, k.ID)
	s.live[i], s.dirty[i], s.ref[i] = false, false, false
	s.free = append(s.free, i)
	h.rows--
	return true, dirty
}

// slot returns a free slot of s, evicting a row when s is full.
func (h *hostTier) slot(s *hostShard) (int32, error) {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return i, nil
	}
	if s.used < len(s.keys) {
		s.used++
		return int32(s.used - 1), nil
	}
	for {
		i := s.hand
		s.hand = (s.hand + 1) % len(s.keys)
		if !s.live[i] {
			continue
		}
		if s.ref[i] {
			s.ref[i] = false
			continue
		}
		k := s.keys[i]
		if s.dirty[i] {
			if err := h.spill(k, s.vals[i*h.width:(i+1)*h.width]); err != nil {
				return 0, err
			}
		}
		delete(s.idx[k.Table], k.ID)
		s.live[i], s.dirty[i] = false, false
		h.rows--
		h.evicts++
		return int32(i), nil
	}
}

// eachDirty calls fn with every dirty row, in shard and slot order, and
// marks it clean when fn succeeds.
func (h *hostTier) eachDirty(fn func(k Key, v []float32) error) error {
	for si := range h.shards {
		s := &h.shards[si]
		for i := range s.used {
			if s.live[i] && s.dirty[i] {
				if err := fn(s.keys[i], s.vals[i*h.width:(i+1)*h.width]); err != nil {
					return err
				}
				s.dirty[i] = false
			}
		}
	}
	return nil
}
