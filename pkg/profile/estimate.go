package profile

import (
	"math"
	"math/bits"
	"slices"
	"sync"
	"unsafe"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/picasso-ctr/picasso/internal/prefetch"
)

// Interval is an estimate with the bounds of its confidence interval. An
// exact figure has Low == Estimate == High.
type Interval struct {
	Low      float64 `json:"low"`
	Estimate float64 `json:"estimate"`
	High     float64 `json:"high"`
}

func exactInterval(v float64) Interval { return Interval{v, v, v} }

func (iv Interval) add(o Interval) Interval {
	return Interval{iv.Low + o.Low, iv.Estimate + o.Estimate, iv.High + o.High}
}

func (iv Interval) scale(f float64) Interval {
	return Interval{iv.Low * f, iv.Estimate * f, iv.High * f}
}

// Contains reports whether v lies in [Low, High].
func (iv Interval) Contains(v float64) bool { return iv.Low <= v && v <= iv.High }

// Cutoff is Eq. 1: the sample cutoff H_zt = t·T·x/100 of a table with T
// accesses in the full data, for threshold t and sample rate x (percent).
// picasso estimates T from the sample as A·100/x (A = sampled accesses),
// which makes H_zt = t·A.
func Cutoff(t, totalAccesses, sampleRate float64) float64 {
	return t * totalAccesses * sampleRate / 100
}

// MinCount turns a cutoff H into the integer rule the classifier applies:
// a row is hot when its sampled count k >= H, that is k >= ceil(H). It is
// at least 1: a row never seen in the sample is never hot (unless its table
// is hot whole). A relative tolerance of 1e-9 absorbs rounding in t·T·x/100,
// so a cutoff meant to be an integer stays that integer.
func MinCount(h float64) uint32 {
	if !(h > 1) {
		return 1
	}
	c := math.Ceil(h - 1e-9*h)
	if c >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(c)
}

// ChunkCount is Eq. 2: C_i, the number of entries of a chunk whose count k
// is at least the cutoff h.
func ChunkCount(chunk []uint32, h float64) int {
	n := 0
	for _, k := range chunk {
		if float64(k) >= h {
			n++
		}
	}
	return n
}

// ChunkStats is Eq. 3: the mean ȳ of the chunk counts C_i and their
// standard deviation s (the sample standard deviation, divisor n-1).
func ChunkStats(c []int) (mean, sd float64) {
	n := float64(len(c))
	var sum, sumsq float64
	for _, v := range c {
		sum += float64(v)
		sumsq += float64(v) * float64(v)
	}
	mean = sum / n
	if len(c) > 1 {
		v := (sumsq - sum*sum/n) / (n - 1)
		sd = math.Sqrt(max(v, 0))
	}
	return mean, sd
}

// TQuantile returns t_{α/2, n-1}, the upper α/2 quantile of Student's t
// with n-1 degrees of freedom, for confidence 1-α.
func TQuantile(confidence float64, n int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(1 - (1-confidence)/2)
}

// TInterval is Eq. 4 for the mean chunk count: ȳ ± t_{α/2,n-1}·
// sqrt((N-n)/N · s²/n), where n = len(c) chunks were drawn without
// replacement from the N chunks of the logger.
func TInterval(c []int, N int64, confidence float64) Interval {
	mean, sd := ChunkStats(c)
	n := len(c)
	half := TQuantile(confidence, n) * math.Sqrt(float64(N-int64(n))/float64(N)*sd*sd/float64(n))
	return Interval{mean - half, mean, mean + half}
}

// tableEst holds what the optimizer needs of one table: an exact histogram
// of its counts and, for tables with more than n chunks, the chunk
// estimator's step function of the cutoff.
type tableEst struct {
	info     TableInfo
	dim      int
	bpr      int64 // bytes per hot row
	accesses int64 // A_z
	whole    bool  // hot whole (small table, or promoted)
	promoted bool  // made whole by the spare budget
	logged   int64 // E: logger entries, the rows with a non-zero count

	// Histogram: hv holds the distinct counts in decreasing order, hcum[j]
	// the number of entries whose count is >= hv[j], hn[j] the number equal.
	hv   []uint32
	hcum []int64
	hn   []int64

	// Chunk estimator (chunked only): N chunks of m entries in the logger,
	// n drawn; chunks holds the drawn chunks' counts.
	chunked bool
	N       int64
	chunks  [][]uint32
	// Step function of the cutoff: at a cutoff c with sv[j] >= c > sv[j+1]
	// the chunk counts C_i, hence the interval, are those at sv[j]. est is
	// N·ȳ, lo and hi the interval scaled by N, env the running maximum of
	// hi (non-increasing in c) that the optimizer uses.
	sv  []uint32
	lo  []float64
	est []float64
	hi  []float64
	env []float64
}

// buildHistogram fills hv, hcum, hn and logged from a table's entries (its
// non-zero counts, Logger.entries). Counts below 8,192 are tallied in an
// array, larger ones in a map.
func (te *tableEst) buildHistogram(entries []uint32) {
	// Counts below small are tallied in lowH, swept and cleared up to the
	// largest seen (most tables' counts in a sample are small: clearing
	// and sweeping all 64 KiB for every table cost more than the tally).
	// Few distinct counts lie above it, and 512 KiB (1<<16 counts) cost a
	// 5% profile more in fresh pages than the map costs an exact pass.
	const small = 1 << 13
	lowP := lowHists.Get().(*[]int64)
	lowH := *lowP // all zeros: cleared up to what was used before it went back
	if cap(lowH) < small {
		// Mapped writable at once: a tally is read before it is written,
		// so each fresh page would be mapped twice (see prefault), and
		// perf put most of the analysis's time in those faults.
		lowH = make([]int64, small)
		prefault(lowH)
	}
	lowH = lowH[:small]
	// Most entries of a sample hold the same few small counts (1, 2, ...).
	// Counts below tiny go to one of four small tallies by the entry's
	// position, so that consecutive increments seldom share a slot (each
	// would wait for the store of the one before), and are summed into
	// lowH after; larger ones are rarer and spread out, and only they
	// move top, the largest count tallied in lowH. (Finding top in a pass
	// of its own first was a third of the histogram's time.)
	const tiny = 16
	var lanes [4][tiny]int64
	top := uint32(tiny - 1)
	high := map[uint32]int64{}
	for i, c := range entries {
		switch {
		case c < tiny:
			lanes[i&3][c]++
		case c < small:
			lowH[c]++
			top = max(top, c)
		default:
			high[c]++
		}
	}
	for c := 1; c < tiny; c++ {
		lowH[c] += lanes[0][c] + lanes[1][c] + lanes[2][c] + lanes[3][c]
	}
	lowH = lowH[:top+1]
	defer func() {
		clear(lowH)
		*lowP = lowH[:0]
		lowHists.Put(lowP)
	}()
	logged := int64(len(entries))
	te.logged = logged
	hv := make([]uint32, 0, len(high))
	for v := range high {
		hv = append(hv, v)
	}
	slices.Sort(hv)
	slices.Reverse(hv)
	hn := make([]int64, len(hv))
	for j, v := range hv {
		hn[j] = high[v]
	}
	for v := len(lowH) - 1; v >= 1; v-- {
		if lowH[v] != 0 {
			hv = append(hv, uint32(v))
			hn = append(hn, lowH[v])
		}
	}
	hcum := make([]int64, len(hv))
	var cum int64
	for j := range hv {
		cum += hn[j]
		hcum[j] = cum
	}
	te.hv, te.hcum, te.hn = hv, hcum, hn
}

// lowHists recycles buildHistogram's tallies of small counts (64
// KiB each), one per table: a fresh one per table cost its allocation and
// page faults, a large share of a small sample's profile.
var lowHists = sync.Pool{New: func() any { return new([]int64) }}

// maxCount is the table's largest sampled count (0 when nothing was seen).
func (te *tableEst) maxCount() uint32 {
	if len(te.hv) == 0 {
		return 0
	}
	return te.hv[0]
}

// unseenMass is the Good-Turing estimate of the probability that an access
// outside the sample hits a row the sample never saw: the entries seen
// exactly once over the accesses sampled.
func (te *tableEst) unseenMass() float64 {
	if te.accesses == 0 || len(te.hv) == 0 || te.hv[len(te.hv)-1] != 1 {
		return 0
	}
	return float64(te.hn[len(te.hn)-1]) / float64(te.accesses)
}

// exactHot returns the number of logger entries with count >= c (c >= 1).
func (te *tableEst) exactHot(c uint32) int64 {
	// hv is decreasing: j is the number of values >= c.
	j, _ := slices.BinarySearchFunc(te.hv, c, atLeast)
	if j == 0 {
		return 0
	}
	return te.hcum[j-1]
}

// drawChunksFrom draws n of the logger's N = ceil(E/m) chunks of table t
// without replacement, the logger being the table's E entries (its
// non-zero counts in ID order, Logger.entries) cut into N chunks of
// balanced sizes (chunkBounds: m, or one less where E is not a multiple of
// N) after a random shuffle, so that a chunk is a random set of entries
// whatever the order of the IDs. The chunk indices are the first n images
// of a keyed permutation of [0, N), which sets their sizes; their entries
// are drawn one by one, uniformly among those not yet drawn: the union of
// n chunks of a uniformly shuffled logger has that law. Drawing them as
// the images of a keyed permutation of [0, E) instead (the same law) cost
// a fifth of the analysis's CPU time: six Feistel rounds, and up to four
// walks, an entry.
func (te *tableEst) drawChunksFrom(entries []uint32, t, n, m int, seed uint64) {
	E := int64(len(entries))
	te.chunked = true
	te.N = (E + int64(m) - 1) / int64(m)
	pick := newPermutation(uint64(te.N), key(seed, uint64(t), 0x63686b)) // "chk"
	// Entry indices come from the SplitMix64 sequence of the key (a
	// multiply-high maps a draw to [0, E)), those drawn before skipped:
	// fewer than n·m of E are ever taken, as N > n.
	k := key(seed, uint64(t), 0x656e74) // "ent"
	at := func(draw uint64) uint64 {
		p, _ := bits.Mul64(rowHash(k, int64(draw)), uint64(E))
		return p
	}
	// The entries lie at random in megabytes of a table: each draw's is
	// asked of the cache drawAhead draws before it is read (the draws are
	// a fixed sequence, so which entries are taken does not change); a
	// read waiting on memory was most of a draw's time.
	const drawAhead = 16
	var ring [drawAhead]uint64
	for d := range ring {
		ring[d] = at(uint64(d))
		prefetch.Lines(unsafe.Pointer(&entries[ring[d]]), 1)
	}
	draw := uint64(0)
	taken := make([]uint64, (E+63)/64)
	te.chunks = make([][]uint32, n)
	for i := range te.chunks {
		lo, hi := chunkBounds(int64(pick.at(uint64(i))), te.N, E)
		ch := make([]uint32, hi-lo)
		for j := range ch {
			for {
				slot := draw % drawAhead
				p := ring[slot]
				next := at(draw + drawAhead)
				ring[slot] = next
				prefetch.Lines(unsafe.Pointer(&entries[next]), 1)
				draw++
				if w, bit := p>>6, uint64(1)<<(p&63); taken[w]&bit == 0 {
					taken[w] |= bit
					ch[j] = entries[p]
					break
				}
			}
		}
		te.chunks[i] = ch
	}
}

// buildSteps computes the chunk estimator at every distinct count of the
// drawn chunks, sweeping the cutoff downwards and updating C_i, Σ C_i and
// Σ C_i² as entries pass it. Intervals are clamped to what the chunks prove:
// at least the hot entries seen in them, at most E minus the cold entries
// seen in them (the true count always lies there, so coverage can only
// improve).
func (te *tableEst) buildSteps(confidence float64) {
	// Each drawn entry is packed as (^k)<<32 | chunk, so an increasing
	// sort orders entries by decreasing count k.
	n := len(te.chunks)
	var seen int64
	for _, ch := range te.chunks {
		seen += int64(len(ch))
	}
	bufs := pairBufs.Get().(*[2][]uint64)
	defer pairBufs.Put(bufs)
	pairs := slices.Grow(bufs[0][:0], int(seen))
	for i, ch := range te.chunks {
		for _, k := range ch {
			pairs = append(pairs, uint64(^k)<<32|uint64(i))
		}
	}
	pairs, bufs[1] = sortUint64s(pairs, bufs[1])
	bufs[0] = pairs
	tq := TQuantile(confidence, n)
	fpc := float64(te.N-int64(n)) / float64(te.N)
	C := make([]int64, n)
	var sum, sumsq int64
	N := float64(te.N)
	fn := float64(n)
	for p := 0; p < len(pairs); {
		v := ^uint32(pairs[p] >> 32)
		for ; p < len(pairs) && ^uint32(pairs[p]>>32) == v; p++ {
			i := uint32(pairs[p])
			sumsq += 2*C[i] + 1
			C[i]++
			sum++
		}
		mean := float64(sum) / fn
		variance := math.Max(0, (fn*float64(sumsq)-float64(sum)*float64(sum))/(fn*(fn-1)))
		half := tq * math.Sqrt(fpc*variance/fn)
		hardLo := float64(sum)
		hardHi := float64(te.logged - (seen - sum))
		clamp := func(x float64) float64 { return math.Min(math.Max(x, hardLo), hardHi) }
		lo, est, hi := clamp(N*(mean-half)), clamp(N*mean), clamp(N*(mean+half))
		env := hi
		if j := len(te.env); j > 0 {
			env = math.Max(env, te.env[j-1])
		}
		te.sv = append(te.sv, v)
		te.lo = append(te.lo, lo)
		te.est = append(te.est, est)
		te.hi = append(te.hi, hi)
		te.env = append(te.env, env)
	}
}

// pairBufs recycles buildSteps' drawn entries and their sort's buffer
// (a few hundred KiB a chunked table): one pair a goroutine instead of
// fresh pages for every table.
var pairBufs = sync.Pool{New: func() any { return new([2][]uint64) }}

// stepIndex returns the index j of the step in force at cutoff c (the last
// j with sv[j] >= c), or -1 when no drawn entry reaches c.
func (te *tableEst) stepIndex(c uint32) int {
	j, _ := slices.BinarySearchFunc(te.sv, c, atLeast)
	return j - 1
}

// rows returns the table's hot rows at integer cutoff c: the interval of
// the chunk estimator for chunked tables, the exact count otherwise, all
// rows when the table is hot whole.
func (te *tableEst) rows(c uint32) Interval {
	switch {
	case te.whole:
		return exactInterval(float64(te.info.Rows))
	case !te.chunked:
		return exactInterval(float64(te.exactHot(c)))
	}
	j := te.stepIndex(c)
	if j < 0 {
		return Interval{}
	}
	return Interval{te.lo[j], te.est[j], te.hi[j]}
}

// upperRows is the optimizer's upper bound of hot rows at cutoff c: for
// chunked tables the largest upper bound over all cutoffs >= c, so that it
// never increases with c (the raw upper bound can, because s may grow as
// ȳ falls); it is never below the raw upper bound.
func (te *tableEst) upperRows(c uint32) float64 {
	switch {
	case te.whole:
		return float64(te.info.Rows)
	case !te.chunked:
		return float64(te.exactHot(c))
	}
	j := te.stepIndex(c)
	if j < 0 {
		return 0
	}
	return te.env[j]
}

// atLeast orders a decreasing slice for binary search: values >= target
// come first, so the search returns how many there are.
func atLeast(v, target uint32) int {
	if v >= target {
		return -1
	}
	return 1
}

// chunkBounds returns the permuted positions [lo, hi) of chunk c of N
// chunks over E entries. Sizes differ by at most one, all close to m =
// ceil(E/N): a short last chunk of E mod m entries would be an outlier among
// the C_i that the t-interval does not model (in a 51-chunk logger it cut a
// 95% interval's coverage to about 82%).
func chunkBounds(c, N, E int64) (lo, hi int64) {
	return c * E / N, (c + 1) * E / N
}

// sortUint64s sorts a in increasing order and returns it, or a sorted
// copy in tmp (grown as needed, returned too): a least-significant-digit
// radix sort on bytes, skipping every byte all values share. buildSteps
// sorts each chunked table's drawn entries, tens of thousands of values
// of which only three bytes differ (the chunk and a small count's
// complement); a comparison sort of them was a sixth of the analysis's
// CPU time. The bytes that differ are found first (the bits set in some
// value and clear in another), so only theirs are tallied.
func sortUint64s(a, tmp []uint64) (sorted, buf []uint64) {
	if len(a) < 256 {
		slices.Sort(a)
		return a, tmp
	}
	or, and := uint64(0), ^uint64(0)
	for _, v := range a {
		or, and = or|v, and&v
	}
	var digits []uint
	for d := range uint(8) {
		if byte((or^and)>>(8*d)) != 0 {
			digits = append(digits, 8*d)
		}
	}
	tmp = slices.Grow(tmp[:0], len(a))[:len(a)]
	var counts [256]int
	for _, shift := range digits {
		clear(counts[:])
		for _, v := range a {
			counts[byte(v>>shift)]++
		}
		sum := 0
		for b := range counts {
			counts[b], sum = sum, sum+counts[b]
		}
		for _, v := range a {
			b := byte(v >> shift)
			tmp[counts[b]] = v
			counts[b]++
		}
		a, tmp = tmp, a
	}
	return a, tmp
}
