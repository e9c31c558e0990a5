package hybridhash

// InitRow writes the initial value of row (table, id) into dst: values
// uniform in [-bound, bound), from a stream of splitmix64 numbers seeded by
// (table, id, seed) alone. A row evicted, reloaded or created in another
// order gets the same value.
func InitRow(dst []float32, k Key, seed uint64, bound float64) {
	s := k.hash(seed ^ 0x696e6974726f77) // "introw"
	for i := range dst {
		s += 0x9e3779b97f4a7c15
		u := float64(mix64(s)>>11) / (1 << 53)
		dst[i] = float32((2*u - 1) * bound)
	}
}
