//go:build race

package train

// raceEnabled: the race detector changes allocation counts (sync.Pool drops
// items at random), so allocation tests skip.
const raceEnabled = true
