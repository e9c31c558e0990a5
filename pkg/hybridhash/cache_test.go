package hybridhash

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// zipf returns a sampler of IDs in [0, n) with P(i) ∝ 1/(i+1)^s, and the
// probabilities.
func zipf(n int, s float64, seed uint64) (func() int64, []float64) {
	p := make([]float64, n)
	var sum float64
	for i := range p {
		p[i] = 1 / math.Pow(float64(i+1), s)
		sum += p[i]
	}
	cdf := make([]float64, n)
	acc := 0.0
	for i := range p {
		p[i] /= sum
		acc += p[i]
		cdf[i] = acc
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	return func() int64 {
		i, _ := slices.BinarySearch(cdf, rng.Float64())
		return int64(min(i, n-1))
	}, p
}

func testOptions(t *testing.T) Options {
	return Options{Tables: 2, Dim: 4, Width: 5, Bounds: []float64{0.1, 0.2}, Seed: 7, HotRows: 500,
		HostBytes: 1 << 20, DiskDir: t.TempDir(), WarmupIters: 20, FlushIters: 50}
}

// runZipf drives a cache with batches of Zipf IDs in table 0 (perm maps a
// rank to its ID) and returns the hit ratio of the steps from measureFrom.
func runZipf(t *testing.T, c *Cache, steps, batch int, draw func() int64, perm func(step int, rank int64) int64, measureFrom int) Stats {
	t.Helper()
	ids := make([]int64, batch)
	out := make([]int32, batch)
	row := make([]float32, c.o.Width)
	var before Stats
	for s := range steps {
		if c.RefreshDue() {
			p := c.Refresh()
			for _, k := range p.Leave {
				if err := c.Store(k, row); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range p.Enter {
				if err := c.Take(k, row); err != nil {
					t.Fatal(err)
				}
			}
		}
		if s == measureFrom {
			before = c.Stats()
		}
		for i := range ids {
			ids[i] = perm(s, draw())
		}
		misses := c.Resolve(0, ids, out, nil, true)
		for _, id := range misses {
			if _, err := c.Fetch(Key{0, id}, row, true); err != nil {
				t.Fatal(err)
			}
		}
		c.Reset()
		c.EndStep()
	}
	after := c.Stats()
	after.Lookups -= before.Lookups
	after.Hits -= before.Hits
	after.Unique -= before.Unique
	after.UniqueHits -= before.UniqueHits
	return after
}

// TestHitRatioZipf checks that after warm-up the hot store's hit ratio is
// within 3 points of the oracle's: the top-k IDs by true probability.
func TestHitRatioZipf(t *testing.T) {
	for _, tc := range []struct {
		n    int
		s    float64
		hot  int
		heav int
	}{
		{100000, 1.05, 1000, 0},
		{100000, 0.9, 5000, 0},
		{20000, 1.2, 200, 0},
		{100000, 1.05, 1000, 1500}, // a tight heavy-hitter set
	} {
		draw, p := zipf(tc.n, tc.s, 3)
		o := testOptions(t)
		o.HotRows, o.Heavy = tc.hot, tc.heav
		o.SketchWidth = 1 << 16
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		st := runZipf(t, c, 400, 1024, draw, func(_ int, r int64) int64 { return r }, 100)
		c.Close()
		var oracle float64
		for _, x := range p[:tc.hot] {
			oracle += x
		}
		got := st.HitRatio()
		t.Logf("n %d s %.2f k %d: hit ratio %.4f, oracle %.4f, unique %.4f", tc.n, tc.s, tc.hot, got, oracle, st.UniqueHitRatio())
		if got < oracle-0.03 || got > oracle+0.03 {
			t.Errorf("n %d s %v k %d: hit ratio %.4f; want within 0.03 of the oracle %.4f", tc.n, tc.s, tc.hot, got, oracle)
		}
	}
}

// TestHitRatioDrift checks that the counter follows drift: after the
// popular IDs change, the hit ratio comes back to the oracle's.
func TestHitRatioDrift(t *testing.T) {
	draw, p := zipf(50000, 1.05, 5)
	o := testOptions(t)
	o.HotRows, o.SketchWidth, o.DecayIters = 1000, 1<<16, 50
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// From step 300 on, rank r is ID r+1_000_000: the old hot set is cold.
	perm := func(s int, r int64) int64 {
		if s >= 300 {
			return r + 1_000_000
		}
		return r
	}
	st := runZipf(t, c, 700, 1024, draw, perm, 500)
	var oracle float64
	for _, x := range p[:o.HotRows] {
		oracle += x
	}
	if got := st.HitRatio(); got < oracle-0.03 {
		t.Errorf("after drift: hit ratio %.4f; want within 0.03 of the oracle %.4f", got, oracle)
	}
}

// TestTiersRoundTrip stores 10 times more rows than the host tier holds and
// reads each back with its last value: evicted dirty rows went to disk.
func TestTiersRoundTrip(t *testing.T) {
	o := testOptions(t)
	o.HostBytes = 200 * int64(4*o.Width+hostEntryOverhead)
	o.DiskBatchRows = 7
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	capRows := c.host.capacity()
	n := int(10 * capRows)
	row := make([]float32, o.Width)
	val := func(i, v int) []float32 {
		for j := range row {
			row[j] = float32(i*100 + j + v)
		}
		return row
	}
	for v := range 2 { // write each row twice: the second value must win
		for i := range n {
			if err := c.Store(Key{int32(i % 2), int64(i) * 7919}, val(i, v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := c.Stats()
	if st.HostRows > capRows || st.Evictions == 0 || st.DiskBytesWritten == 0 {
		t.Errorf("host rows %d (cap %d), evictions %d, disk bytes written %d; want ≤ cap and > 0, > 0", st.HostRows, capRows, st.Evictions, st.DiskBytesWritten)
	}
	got := make([]float32, o.Width)
	for i := range n {
		ok, err := c.Fetch(Key{int32(i % 2), int64(i) * 7919}, got, false)
		if err != nil || !ok {
			t.Fatalf("Fetch(%d) = %v, %v; want true, nil", i, ok, err)
		}
		if want := val(i, 1); !slices.Equal(got, want) {
			t.Fatalf("row %d = %v; want %v", i, got, want)
		}
	}
	if st := c.Stats(); st.DiskBytesRead == 0 {
		t.Errorf("disk bytes read %d; want > 0", st.DiskBytesRead)
	}
}

// TestAdmission: an ID gets a row on its AdmitAfter-th sighting, with the
// value InitRow gives whatever the order.
func TestAdmission(t *testing.T) {
	o := testOptions(t)
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	row := make([]float32, o.Width)
	out := make([]int32, 1)
	k := Key{1, -12345}
	c.Resolve(1, []int64{k.ID}, out, nil, true)
	if ok, _ := c.Fetch(k, row, true); ok {
		t.Fatalf("Fetch after one sighting = true; want false (admission after 2)")
	}
	c.Reset()
	c.Resolve(1, []int64{k.ID}, out, nil, true)
	if ok, _ := c.Fetch(k, row, true); !ok {
		t.Fatalf("Fetch after two sightings = false; want true")
	}
	want := make([]float32, o.Dim)
	InitRow(want, k, o.Seed, o.Bounds[1])
	if !slices.Equal(row[:o.Dim], want) || row[o.Dim] != 0 {
		t.Errorf("new row = %v; want %v and zero state", row, want)
	}
	for _, x := range want {
		if x < -0.2 || x >= 0.2 || x == 0 {
			t.Errorf("InitRow value %v outside [-0.2, 0.2) or zero", x)
		}
	}
}

// TestCounterBounded: the counter's memory does not grow with distinct keys
// and its estimates never fall below the true counts.
func TestCounterBounded(t *testing.T) {
	c, err := NewCounter(1<<12, 4, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	b0 := c.Bytes()
	truth := map[Key]uint32{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		k := Key{0, rng.Int64N(100000)}
		if rng.IntN(4) == 0 {
			k.ID = rng.Int64N(10)
		}
		truth[k]++
		c.Add(k)
	}
	if c.Bytes() != b0 || c.hhN >= 128 || len(c.hh[0]) != c.hhN {
		t.Errorf("counter holds %d bytes, %d hitters (%d in the map); want %d, < 128", c.Bytes(), c.hhN, len(c.hh[0]), b0)
	}
	for k, n := range truth {
		if e := c.Estimate(k); e < n {
			t.Fatalf("Estimate(%v) = %d; want ≥ %d", k, e, n)
		}
	}
	top := c.Top(10)
	for _, k := range top {
		if k.ID >= 10 {
			t.Errorf("Top(10) holds %v; want the 10 popular IDs", k)
		}
	}
}
