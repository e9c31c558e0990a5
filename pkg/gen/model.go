package gen

import (
	"math"
	"math/rand/v2"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// This file holds the generator's planted model: how each row's features are
// drawn and how its true click probability follows from them. Everything is
// a pure function of the seed and the row's chunk, so any worker can draw any
// chunk and get the same bytes.

const (
	// chunkRows is the number of rows drawn from one random stream. It is
	// fixed, so a row's content depends only on the seed and its index.
	chunkRows = 8192
	// latentDim is the rank of the planted interactions.
	latentDim = 4
	// calibChunks chunks of chunkRows rows, from streams of their own,
	// calibrate the model (65,536 rows).
	calibChunks = 8
	// rankScale shrinks the planted parameters of unpopular rows: the row of
	// popularity rank r (0-based) has effects scaled by 1/sqrt(1 + r/rankScale).
	// Rows seen too rarely to be learned thus carry little of the signal: in
	// kaggle at scale 0.05, rows seen fewer than 200 times in 5M inputs carry
	// 1.2% of the logit's variance (zeroing them costs 0.002 AUC), rows seen
	// fewer than 1000 times 4.1% (0.006 AUC).
	rankScale = 2000.0
)

// The planted logit's terms.
const (
	compDense       = iota // linear in the standardised dense features
	compNonlin             // products of standardised dense features
	compID                 // one effect per (table, row)
	compPair               // dot products of rank-4 row vectors of table pairs
	compDenseSparse        // row vectors against a projection of the dense features
	nComp
)

// Salts separate the random streams and hashes derived from one seed.
const (
	saltSetup = 0x5e7a9c3b1d2f4e60 + iota
	saltRows
	saltCalib
	saltEffect
	saltVector
	saltPerm
	saltOracle
)

// mix64 is the splitmix64 finaliser: a bijective 64-bit mixer.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func hash3(a, b, c uint64) uint64 { return mix64(mix64(mix64(a)^b) ^ c) }

// stream returns the random stream number k of kind salt.
func stream(seed, salt, k uint64) *rand.Rand {
	return rand.New(rand.NewPCG(hash3(seed, salt, k), hash3(seed, salt^0xffff, k)))
}

// gauss4 turns a hash into an approximately standard normal value: the sum of
// four 16-bit uniforms (Irwin-Hall), centred and scaled to variance 1, so
// bounded by ±3.46.
func gauss4(h uint64) float64 {
	s := float64(h&0xffff) + float64(h>>16&0xffff) + float64(h>>32&0xffff) + float64(h>>48)
	return (s/65536 - 2) * math.Sqrt(3)
}

// uniformVec turns a hash into latentDim uniform components of variance 1.
func uniformVec(h uint64) (v [latentDim]float64) {
	for i := range v {
		v[i] = (float64(h>>(16*i)&0xffff)/65536 - 0.5) * math.Sqrt(12)
	}
	return v
}

// zipfHeadRows bounds the popular ranks a zipf sampler tabulates: few
// enough that the table stays in cache, many enough that most draws end
// there.
const zipfHeadRows = 1 << 12

// zipf draws ranks 1..n with P(r) ∝ r^-s, for any s > 0 (math/rand's Zipf
// needs s > 1). The head, ranks 1..min(n, zipfHeadRows), is drawn from an
// alias table (one 64-bit draw) with one extra outcome standing for the
// tail; a tail rank is drawn by rejection-inversion (W. Hörmann and G.
// Derflinger, "Rejection-inversion to generate variates from monotone
// discrete distributions", ACM TOMACS 6(3), 1996), in constant expected time
// whatever n, without tables.
type zipf struct {
	n, s float64
	head int64
	// Alias table over head+1 outcomes: outcome i < head is rank i+1, outcome
	// head is the tail. Keep i when the low 32 bits are below cut[i],
	// otherwise take alias[i].
	cut   []uint32
	alias []int32
	// Rejection-inversion over ranks head+1..n, with its squeeze: accept
	// without the exact test when k - x <= sq.
	hLo, hHi, sq float64
}

func newZipf(n int64, s float64) zipf {
	z := zipf{n: float64(n), s: s, head: min(n, zipfHeadRows)}
	w := make([]float64, z.head+1)
	var sum float64
	for r := int64(1); r <= z.head; r++ {
		w[r-1] = math.Pow(float64(r), -s)
		sum += w[r-1]
	}
	if z.head < n {
		// The tail's mass: the sum of r^-s over head+1..n.
		ps := newPowerSums(s)
		w[z.head] = ps.sum(n) - ps.sum(z.head)
		sum += w[z.head]
		z.hLo = z.hIntegral(float64(z.head)+1.5) - z.h(float64(z.head)+1)
		z.hHi = z.hIntegral(z.n + 0.5)
		// The accepted part of rank k's region starts at
		// hIntegralInv(H(k+0.5) - h(k)), which lies k - 0.5 + (a share that
		// shrinks with k) into it; the distance from k is smallest at the
		// first rank that can be rejected, head+2.
		k := float64(z.head) + 2
		z.sq = k - z.hIntegralInv(z.hIntegral(k+0.5)-z.h(k))
	}
	z.cut, z.alias = zipfAliasTable(w, sum)
	return z
}

// zipfAliasTable builds Vose's alias table for weights w summing to sum.
func zipfAliasTable(w []float64, sum float64) ([]uint32, []int32) {
	k := len(w)
	p := make([]float64, k)
	var small, large []int32
	for i, x := range w {
		p[i] = x / sum * float64(k)
		if p[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	cut := make([]uint32, k)
	alias := make([]int32, k)
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		cut[s] = uint32(p[s] * (1 << 32))
		alias[s] = l
		p[l] -= 1 - p[s]
		if p[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// What is left has probability 1 up to rounding.
	for _, i := range append(small, large...) {
		cut[i] = math.MaxUint32
		alias[i] = i
	}
	return cut, alias
}

func (z *zipf) h(x float64) float64 { return math.Exp(-z.s * math.Log(x)) }

// hIntegral is a primitive of h: (x^(1-s) - 1)/(1-s), log x at s = 1.
func (z *zipf) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return expm1Over((1-z.s)*lx) * lx
}

func (z *zipf) hIntegralInv(x float64) float64 {
	t := x * (1 - z.s)
	if t < -1 {
		t = -1
	}
	return math.Exp(log1pOver(t) * x)
}

// sample returns a rank in [1, n].
func (z *zipf) sample(r *rand.Rand) int64 {
	u := r.Uint64()
	i := int64((u >> 32) * uint64(len(z.cut)) >> 32)
	if uint32(u) >= z.cut[i] {
		i = int64(z.alias[i])
	}
	if i < z.head {
		return i + 1
	}
	// Tail: the region of rank k is (H(k-0.5), H(k+0.5)] for k > head+1, and
	// (H(head+1.5) - h(head+1), H(head+1.5)] for head+1; accept the part of
	// length h(k) at its top.
	lo := float64(z.head + 1)
	for {
		u := z.hHi + r.Float64()*(z.hLo-z.hHi)
		x := z.hIntegralInv(u)
		k := min(max(math.Floor(x+0.5), lo), z.n)
		if k-x <= z.sq || u >= z.hIntegral(k+0.5)-z.h(k) {
			return int64(k)
		}
	}
}

// log1pOver is log(1+x)/x, continuous at 0.
func log1pOver(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}

// expm1Over is (e^x - 1)/x, continuous at 0.
func expm1Over(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x/3*(1+0.25*x))
}

// permCacheRows: the IDs of the most popular ranks, which most draws hit,
// are tabulated; a table small enough to stay in cache.
const permCacheRows = 1 << 14

// permutation is a seeded bijection of [0, n): a 4-round Feistel network on
// the smallest power-of-two domain holding n, walked until it lands in range
// (cycle walking, under two steps on average). It spreads popular ranks over
// the whole ID space.
type permutation struct {
	n              uint64
	loBits         uint
	loMask, hiMask uint64
	keys           [4]uint64
	table          []uint64 // ranks below permCacheRows; IDs may pass 2^31
}

func newPermutation(n int64, key uint64) permutation {
	p := permutation{n: uint64(n)}
	bits := uint(0)
	for uint64(1)<<bits < p.n {
		bits++
	}
	p.loBits = (bits + 1) / 2
	p.loMask = 1<<p.loBits - 1
	p.hiMask = 1<<(bits-p.loBits) - 1
	for i := range p.keys {
		p.keys[i] = mix64(key + uint64(i))
	}
	p.table = make([]uint64, min(n, permCacheRows))
	for r := range p.table {
		p.table[r] = p.walk(uint64(r))
	}
	return p
}

func (p *permutation) apply(r uint64) uint64 {
	if r < uint64(len(p.table)) {
		return p.table[r]
	}
	return p.walk(r)
}

func (p *permutation) walk(x uint64) uint64 {
	for {
		lo, hi := x&p.loMask, x>>p.loBits
		hi ^= mix64(p.keys[0]^lo) & p.hiMask
		lo ^= mix64(p.keys[1]^hi) & p.loMask
		hi ^= mix64(p.keys[2]^lo) & p.hiMask
		lo ^= mix64(p.keys[3]^hi) & p.loMask
		x = hi<<p.loBits | lo
		if x < p.n {
			return x
		}
	}
}

type plantedTable struct {
	zipf   zipf
	perm   permutation
	weight float64 // scale of the per-row effects
	keyEff uint64
	keyVec uint64
	vec    int // slot in the row's vector scratch, or -1
	ds     bool
}

// plantedModel is the planted model of one Run call.
type plantedModel struct {
	seed   uint64
	dense  []denseDef
	cdf    [][]float64 // per denseCycle feature, the cumulative weights
	tables []plantedTable
	nVec   int
	// Dense terms.
	denseW []float64
	denseM []float64 // mean and standard deviation of each written dense value
	denseS []float64
	nonlin [][2]int
	proj   [latentDim][]float64
	pairs  [][2]int // vector slots of table pairs
	scale  [nComp]float64
	bias   float64
}

// newPlantedModel draws the planted model's structure from the seed; calibrate
// then fixes its scales and bias.
func newPlantedModel(def *presetDef, rows []int64, seed uint64) *plantedModel {
	m := &plantedModel{seed: seed, dense: def.dense}
	rng := stream(seed, saltSetup, 0)
	nd, nt := len(def.dense), len(rows)
	m.cdf = make([][]float64, nd)
	for j, d := range def.dense {
		if d.kind != denseCycle {
			continue
		}
		c := make([]float64, d.period)
		for v := range c {
			c[v] = 1 + d.amp*math.Cos(2*math.Pi*float64(v-d.peak)/float64(d.period))
			if v > 0 {
				c[v] += c[v-1]
			}
		}
		for v := range c {
			c[v] /= c[d.period-1]
		}
		m.cdf[j] = c
	}
	m.denseW = make([]float64, nd)
	for j := range m.denseW {
		m.denseW[j] = rng.NormFloat64()
	}
	if nd == 1 {
		m.nonlin = [][2]int{{0, 0}}
	} else if nd > 1 {
		for range 3 {
			m.nonlin = append(m.nonlin, [2]int{rng.IntN(nd), rng.IntN(nd)})
		}
	}
	for k := range m.proj {
		m.proj[k] = make([]float64, nd)
		for j := range m.proj[k] {
			m.proj[k][j] = rng.NormFloat64() / math.Sqrt(float64(nd))
		}
	}
	m.tables = make([]plantedTable, nt)
	for t, n := range rows {
		w := 0.5 + rng.Float64()
		if def.Cardinalities[t] >= 1_000_000 {
			w *= 0.6 // the huge tables' signal is mostly in their long tail
		}
		m.tables[t] = plantedTable{
			zipf:   newZipf(n, def.Exponents[t]),
			perm:   newPermutation(n, hash3(seed, saltPerm, uint64(t))),
			weight: w,
			keyEff: hash3(seed, saltEffect, uint64(t)),
			keyVec: hash3(seed, saltVector, uint64(t)),
			vec:    -1,
		}
	}
	slot := func(t int) int {
		if m.tables[t].vec < 0 {
			m.tables[t].vec = m.nVec
			m.nVec++
		}
		return m.tables[t].vec
	}
	if nt >= 2 {
		seen := map[[2]int]bool{}
		for len(seen) < max(1, nt/2) {
			a, b := rng.IntN(nt), rng.IntN(nt)
			if a == b {
				continue
			}
			a, b = min(a, b), max(a, b)
			if !seen[[2]int{a, b}] {
				seen[[2]int{a, b}] = true
				m.pairs = append(m.pairs, [2]int{slot(a), slot(b)})
			}
		}
	}
	for _, t := range rng.Perm(nt)[:max(1, nt/4)] {
		m.tables[t].ds = true
		slot(t)
	}
	return m
}

// rowLatent is what a row contributes to its logit besides its dense values.
type rowLatent struct {
	id, pair float64
	v        [latentDim]float64 // sum of the dense×table tables' row vectors
}

// drawRow draws row i of b: dense values, IDs and the latent terms. vecs is
// scratch of m.nVec vectors.
func (m *plantedModel) drawRow(rng *rand.Rand, b *dataset.Batch, i int, vecs [][latentDim]float64) rowLatent {
	nd := len(m.dense)
	if nd > 0 {
		act := rng.NormFloat64() // per-row activity, correlating the counts
		dst := b.Dense[i*nd : (i+1)*nd]
		for j := range m.dense {
			d := &m.dense[j]
			switch d.kind {
			case denseCycle:
				u, c := rng.Float64(), m.cdf[j]
				v := 0
				for v < len(c)-1 && c[v] <= u {
					v++
				}
				dst[j] = float32(v) / float32(len(c)-1)
			default:
				var x float64
				if rng.Float64() >= d.zero {
					l := d.mu + d.sigma*(d.rho*act+math.Sqrt(1-d.rho*d.rho)*rng.NormFloat64())
					x = math.Floor(math.Exp(min(l, 40)))
				}
				dst[j] = float32(math.Log1p(x))
			}
		}
	}
	var lat rowLatent
	for t := range m.tables {
		tb := &m.tables[t]
		r := uint64(tb.zipf.sample(rng) - 1)
		b.Sparse[t].IDs[i] = int64(tb.perm.apply(r))
		g := 1 / math.Sqrt(1+float64(r)/rankScale)
		lat.id += tb.weight * g * gauss4(mix64(tb.keyEff^r))
		if tb.vec >= 0 {
			v := uniformVec(mix64(tb.keyVec ^ r))
			for k := range v {
				v[k] *= g
			}
			vecs[tb.vec] = v
			if tb.ds {
				for k := range v {
					lat.v[k] += v[k]
				}
			}
		}
	}
	for _, p := range m.pairs {
		a, c := &vecs[p[0]], &vecs[p[1]]
		lat.pair += (a[0]*c[0] + a[1]*c[1] + a[2]*c[2] + a[3]*c[3]) / 2
	}
	return lat
}

// components returns the row's unscaled logit terms; zs is scratch of one
// value per dense feature.
func (m *plantedModel) components(dense []float32, lat *rowLatent, zs []float64) (c [nComp]float64) {
	for j, v := range dense {
		zs[j] = (float64(v) - m.denseM[j]) / m.denseS[j]
		c[compDense] += m.denseW[j] * zs[j]
	}
	for _, p := range m.nonlin {
		if p[0] == p[1] {
			c[compNonlin] += zs[p[0]]*zs[p[0]] - 1
		} else {
			c[compNonlin] += zs[p[0]] * zs[p[1]]
		}
	}
	c[compID] = lat.id
	c[compPair] = lat.pair
	for k := range lat.v {
		var q float64
		for j, z := range zs {
			q += m.proj[k][j] * z
		}
		c[compDenseSparse] += lat.v[k] * q / 2
	}
	return c
}

func (m *plantedModel) logit(c *[nComp]float64) float64 {
	l := m.bias
	for i, v := range c {
		l += m.scale[i] * v
	}
	return l
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// scratch is one worker's scratch space.
type scratch struct {
	vecs [][latentDim]float64
	zs   []float64
}

func (m *plantedModel) newScratch() *scratch {
	return &scratch{vecs: make([][latentDim]float64, m.nVec), zs: make([]float64, len(m.dense))}
}

func newBatch(nd, nt, n int) *dataset.Batch {
	b := &dataset.Batch{Label: make([]float32, n), Dense: make([]float32, n*nd), PTrue: make([]float32, n),
		Sparse: make([]dataset.SparseColumn, nt)}
	for t := range b.Sparse {
		b.Sparse[t].IDs = make([]int64, n)
	}
	return b
}

// fillChunk draws the n rows of chunk k into b.
func (m *plantedModel) fillChunk(k int64, n int, b *dataset.Batch, sc *scratch) {
	rng := stream(m.seed, saltRows, uint64(k))
	nd := len(m.dense)
	b.N = n
	for i := 0; i < n; i++ {
		lat := m.drawRow(rng, b, i, sc.vecs)
		c := m.components(b.Dense[i*nd:(i+1)*nd], &lat, sc.zs)
		p := sigmoid(m.logit(&c))
		b.PTrue[i] = float32(p)
		b.Label[i] = 0
		if rng.Float64() < p {
			b.Label[i] = 1
		}
	}
}

// calibrate draws calibChunks chunks from streams of their own (run sets
// them going in parallel), then standardises the dense features, scales each
// term to its share of the preset's logit variance and bisects the bias until
// the mean click probability is the target click rate. Everything is summed
// in a fixed order, so the result does not depend on the number of workers.
func (m *plantedModel) calibrate(def *presetDef, run func(n int, f func(i int))) {
	nd, nt := len(m.dense), len(m.tables)
	const n = calibChunks * chunkRows
	dense := make([]float32, n*nd)
	lats := make([]rowLatent, n)
	run(calibChunks, func(k int) {
		rng := stream(m.seed, saltCalib, uint64(k))
		b := newBatch(nd, nt, chunkRows)
		vecs := make([][latentDim]float64, m.nVec)
		for i := 0; i < chunkRows; i++ {
			lats[k*chunkRows+i] = m.drawRow(rng, b, i, vecs)
		}
		copy(dense[k*chunkRows*nd:], b.Dense)
	})
	m.denseM, m.denseS = make([]float64, nd), make([]float64, nd)
	for j := 0; j < nd; j++ {
		var s, ss float64
		for i := 0; i < n; i++ {
			v := float64(dense[i*nd+j])
			s += v
			ss += v * v
		}
		m.denseM[j] = s / n
		m.denseS[j] = math.Sqrt(max(ss/n-m.denseM[j]*m.denseM[j], 0))
		if m.denseS[j] < 1e-9 {
			m.denseS[j] = 1
		}
	}
	comps := make([][nComp]float64, n)
	zs := make([]float64, nd)
	var mean, sq [nComp]float64
	for i := range comps {
		comps[i] = m.components(dense[i*nd:(i+1)*nd], &lats[i], zs)
		for c, v := range comps[i] {
			mean[c] += v
			sq[c] += v * v
		}
	}
	for c := range m.scale {
		mu := mean[c] / n
		sd := math.Sqrt(max(sq[c]/n-mu*mu, 0))
		if sd > 1e-12 {
			m.scale[c] = def.logitStd * math.Sqrt(def.share[c]) / sd
		}
	}
	logits := make([]float64, n)
	for i := range comps {
		m.bias = 0
		logits[i] = m.logit(&comps[i])
	}
	lo, hi := -30.0, 30.0
	for range 100 {
		mid := (lo + hi) / 2
		var s float64
		for _, l := range logits {
			s += sigmoid(l + mid)
		}
		if s/n < def.TargetCTR {
			lo = mid
		} else {
			hi = mid
		}
	}
	m.bias = (lo + hi) / 2
}
