package profile

import "math/bits"

// mix64 is a splitmix64 finaliser: a bijective, well-mixing hash of x.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// key derives an independent 64-bit key from a seed and a list of labels.
func key(seed uint64, labels ...uint64) uint64 {
	k := mix64(seed ^ 0x70696361_73736f21)
	for _, l := range labels {
		k = mix64(k ^ mix64(l))
	}
	return k
}

// permRounds is the number of Feistel rounds. Six rounds of a strong round
// function make the permutation indistinguishable from a random one for
// the purpose of drawing chunks.
const permRounds = 6

// permutation is a keyed bijection of [0, n): a balanced Feistel network on
// the smallest domain of 4^h >= n values, restricted to [0, n) by cycle
// walking (re-applying the network until the value falls inside). The
// domain is less than 4n, so a walk takes fewer than 4 steps on average.
type permutation struct {
	n    uint64
	half uint
	mask uint64
	keys [permRounds]uint64
}

func newPermutation(n uint64, k uint64) *permutation {
	b := uint(bits.Len64(n - 1)) // bits needed for values in [0, n)
	if n <= 1 {
		b = 0
	}
	half := (b + 1) / 2
	if half == 0 {
		half = 1
	}
	p := &permutation{n: n, half: half, mask: 1<<half - 1}
	for r := range p.keys {
		p.keys[r] = key(k, uint64(r))
	}
	return p
}

func (p *permutation) round(x uint64) uint64 {
	l, r := x>>p.half, x&p.mask
	for _, k := range p.keys {
		l, r = r, l^(mix64(r^k)&p.mask)
	}
	return l<<p.half | r
}

// at returns the image of i in [0, n); i must be in [0, n).
func (p *permutation) at(i uint64) uint64 {
	if i >= p.n {
		panic("profile: permutation index out of range")
	}
	for {
		i = p.round(i)
		if i < p.n {
			return i
		}
	}
}

// unitFloat maps a hash to [0, 1) with 53 bits.
func unitFloat(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// images writes the images of lo, lo+1, ..., lo+len(dst)-1 into dst, as
// at would, eight values at a time: each value walks the network apart
// from the others, and the eight walks' rounds are interleaved so that
// their multiplications overlap instead of each waiting on the one
// before it. drawChunksFrom maps every drawn entry's index this way; a
// call of at for each was the larger part of the analysis's CPU time.
func (p *permutation) images(dst []uint64, lo uint64) {
	const lanes = 8
	var x [lanes]uint64
	var slot [lanes]int // the index in dst a lane computes; -1 when idle
	next, active := 0, 0
	// start gives lane l the next index, if any is left.
	start := func(l int) {
		slot[l] = -1
		if next == len(dst) {
			return
		}
		if lo+uint64(next) >= p.n {
			panic("profile: permutation index out of range")
		}
		slot[l], x[l] = next, lo+uint64(next)
		next++
		active++
	}
	for l := range lanes {
		start(l)
	}
	h, m := p.half, p.mask
	for active > 0 {
		l0, r0 := x[0]>>h, x[0]&m
		l1, r1 := x[1]>>h, x[1]&m
		l2, r2 := x[2]>>h, x[2]&m
		l3, r3 := x[3]>>h, x[3]&m
		l4, r4 := x[4]>>h, x[4]&m
		l5, r5 := x[5]>>h, x[5]&m
		l6, r6 := x[6]>>h, x[6]&m
		l7, r7 := x[7]>>h, x[7]&m
		for _, k := range p.keys {
			l0, r0 = r0, l0^(mix64(r0^k)&m)
			l1, r1 = r1, l1^(mix64(r1^k)&m)
			l2, r2 = r2, l2^(mix64(r2^k)&m)
			l3, r3 = r3, l3^(mix64(r3^k)&m)
			l4, r4 = r4, l4^(mix64(r4^k)&m)
			l5, r5 = r5, l5^(mix64(r5^k)&m)
			l6, r6 = r6, l6^(mix64(r6^k)&m)
			l7, r7 = r7, l7^(mix64(r7^k)&m)
		}
		x = [lanes]uint64{l0<<h | r0, l1<<h | r1, l2<<h | r2, l3<<h | r3, l4<<h | r4, l5<<h | r5, l6<<h | r6, l7<<h | r7}
		for l := range lanes {
			if slot[l] < 0 || x[l] >= p.n {
				continue // idle, or still outside [0, n): walk on
			}
			dst[slot[l]] = x[l]
			active--
			start(l)
		}
	}
}
