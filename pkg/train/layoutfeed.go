package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// layoutFeeder reads the mini-batches of a FAE layout, epoch after epoch,
// each class in an order shuffled per epoch with the seed, through one
// prefetching stream per class. The trainer decides which class to take
// next; in mixed order (the modes that are not FAE's) a seeded per-epoch
// interleaving of the two classes decides.
//
// A run shorter than an epoch trains a proportional epoch: each class's
// share of the run is its share of the layout, so the hot/cold phases, the
// bytes moved and the time per phase of a short timing run stand for a
// whole epoch's rather than for whichever class the first phase reads.
//
// In mixed order the hot mini-batches are read with their slots mapped
// back to table IDs, since those modes keep no hot table.
type layoutFeeder struct {
	l       *layout.Layout
	seed    uint64
	depth   int
	full    [2]int // mini-batches of each class in the layout
	n       [2]int // mini-batches of each class per epoch of this run
	epoch   int
	order   [2][]int
	taken   [2]int
	streams [2]*layout.Stream
	mixed   bool
	mix     []layout.Class // mixed order of this epoch
}

func newLayoutFeeder(l *layout.Layout, seed uint64, depth int, mixed bool, steps int64) *layoutFeeder {
	f := &layoutFeeder{l: l, seed: seed, depth: depth, mixed: mixed}
	f.full = [2]int{l.NumBatches(layout.Cold), l.NumBatches(layout.Hot)}
	f.n = proportionalEpoch(f.full, steps)
	return f
}

// epochOrder returns the order in which an epoch reads the full
// mini-batches of class c: a permutation shuffled with the seed.
func epochOrder(seed uint64, c layout.Class, epoch, full int) []int {
	stream := uint64(streamColdOrder)
	if c == layout.Hot {
		stream = streamHotOrder
	}
	rng := rand.New(rand.NewPCG(seed, stream+uint64(epoch)<<32))
	return rng.Perm(full)
}

// proportionalEpoch returns the mini-batches of each class an epoch of a
// run of steps takes: all of them when the run is an epoch or longer, else
// steps split in the classes' proportion (the cold share rounded).
func proportionalEpoch(full [2]int, steps int64) [2]int {
	total := int64(full[0] + full[1])
	if steps <= 0 || steps >= total {
		return full
	}
	cold := int((steps*int64(full[0]) + total/2) / total)
	cold = min(cold, full[0])
	hot := min(int(steps)-cold, full[1])
	return [2]int{cold, hot}
}

// perEpoch returns the number of mini-batches of an epoch.
func (f *layoutFeeder) perEpoch() int { return f.n[0] + f.n[1] }

// left returns the mini-batches of class c not yet taken this epoch.
func (f *layoutFeeder) left(c layout.Class) int { return f.n[c] - f.taken[c] }

// start positions the feeder at epoch, with taken mini-batches of each
// class already consumed, and opens the streams.
func (f *layoutFeeder) start(epoch int, taken [2]int) error {
	f.close()
	f.epoch, f.taken = epoch, taken
	for c := layout.Cold; c <= layout.Hot; c++ {
		f.order[c] = epochOrder(f.seed, c, epoch, f.full[c])[:f.n[c]]
		if f.taken[c] > f.n[c] {
			return fmt.Errorf("train: position %d of %d %s mini-batches: %w", f.taken[c], f.n[c], c, ErrCheckpoint)
		}
		rest := f.order[c][f.taken[c]:]
		if len(rest) == 0 {
			continue
		}
		st, err := f.l.Stream(c, rest, layout.StreamOptions{Prefetch: f.depth, TableIDs: f.mixed})
		if err != nil {
			return fmt.Errorf("train: open %s mini-batches: %w", c, err)
		}
		f.streams[c] = st
	}
	if f.mixed {
		rng := rand.New(rand.NewPCG(f.seed, streamMixOrder+uint64(epoch)<<32))
		f.mix = make([]layout.Class, f.perEpoch())
		for i := f.n[0]; i < len(f.mix); i++ {
			f.mix[i] = layout.Hot
		}
		rng.Shuffle(len(f.mix), func(i, j int) { f.mix[i], f.mix[j] = f.mix[j], f.mix[i] })
	}
	return nil
}

// nextMixed returns the class of the next mini-batch in mixed order, or
// false at the end of the epoch.
func (f *layoutFeeder) nextMixed() (layout.Class, bool) {
	k := f.taken[0] + f.taken[1]
	if k >= len(f.mix) {
		return 0, false
	}
	return f.mix[k], true
}

// take returns the next mini-batch of class c.
func (f *layoutFeeder) take(ctx context.Context, c layout.Class) (*dataset.Batch, error) {
	if f.left(c) <= 0 || f.streams[c] == nil {
		return nil, fmt.Errorf("train: no %s mini-batch left in epoch %d", c, f.epoch)
	}
	b, err := f.streams[c].Next(ctx)
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("train: layout ended after %d of %d %s mini-batches: %w", f.taken[c], f.n[c], c, io.ErrUnexpectedEOF)
	}
	if err != nil {
		return nil, err
	}
	f.taken[c]++
	return b, nil
}

func (f *layoutFeeder) close() {
	for c := range f.streams {
		if f.streams[c] != nil {
			f.streams[c].Close()
			f.streams[c] = nil
		}
	}
}
