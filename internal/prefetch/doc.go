// Package prefetch asks the CPU to bring memory into its caches before a
// loop reads it: the rows an embedding gather or a shuffle's bundle loop
// will read a few iterations on, which lie at random in memory too large
// for the caches. It is a hint (PREFETCHT0 on amd64, nothing elsewhere or
// with the purego build tag): it never faults, whatever the address, and
// changes no result.
package prefetch
