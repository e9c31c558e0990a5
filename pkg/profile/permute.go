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
