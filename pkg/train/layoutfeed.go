package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/picasso-ctr/picasso/pkg/dataset"
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
type layoutFeeder struct {
	l       Layout
	seed    uint64
	depth   int
	full    [2]int // mini-batches of each class in the layout
	n       [2]int // mini-batches of each class per epoch of this run
	epoch   int
	order   [2][]int
	taken   [2]int
	streams [2]*dataset.Prefetch[*dataset.Batch]
	mixed   bool
	mix     []Class // mixed order of this epoch

	// translate hot slots back to table IDs (for modes that keep no hot table)
	translate bool
	hotmap    [][]int64
	hotOff    []int64
	featTab   []int
}

func newLayoutFeeder(l Layout, seed uint64, depth int, mixed bool, featTab []int, hotOff []int64, steps int64) *layoutFeeder {
	f := &layoutFeeder{l: l, seed: seed, depth: depth, mixed: mixed, translate: mixed,
		hotmap: l.Hotmap(), hotOff: hotOff, featTab: featTab}
	f.full = [2]int{l.NumBatches(Cold), l.NumBatches(Hot)}
	f.n = proportionalEpoch(f.full, steps)
	return f
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
func (f *layoutFeeder) left(c Class) int { return f.n[c] - f.taken[c] }

// start positions the feeder at epoch, with taken mini-batches of each
// class already consumed, and opens the streams.
func (f *layoutFeeder) start(epoch int, taken [2]int) error {
	f.close()
	f.epoch, f.taken = epoch, taken
	for c := Cold; c <= Hot; c++ {
		stream := uint64(streamColdOrder)
		if c == Hot {
			stream = streamHotOrder
		}
		rng := rand.New(rand.NewPCG(f.seed, stream+uint64(epoch)<<32))
		f.order[c] = rng.Perm(f.full[c])[:f.n[c]]
		if f.taken[c] > f.n[c] {
			return fmt.Errorf("train: position %d of %d %s mini-batches: %w", f.taken[c], f.n[c], c, ErrCheckpoint)
		}
		rest := f.order[c][f.taken[c]:]
		if len(rest) == 0 {
			continue
		}
		st, err := f.l.Open(c, rest)
		if err != nil {
			return fmt.Errorf("train: open %s mini-batches: %w", c, err)
		}
		hot := c == Hot
		f.streams[c] = dataset.NewPrefetch(f.depth, func(ctx context.Context) (*dataset.Batch, error) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			b, err := st.Next(ctx)
			if err == nil && hot && f.translate {
				b, err = f.toTableIDs(b)
			}
			return b, err
		}, st.Close)
	}
	if f.mixed {
		rng := rand.New(rand.NewPCG(f.seed, streamMixOrder+uint64(epoch)<<32))
		f.mix = make([]Class, f.perEpoch())
		for i := f.n[0]; i < len(f.mix); i++ {
			f.mix[i] = Hot
		}
		rng.Shuffle(len(f.mix), func(i, j int) { f.mix[i], f.mix[j] = f.mix[j], f.mix[i] })
	}
	return nil
}

// nextMixed returns the class of the next mini-batch in mixed order, or
// false at the end of the epoch.
func (f *layoutFeeder) nextMixed() (Class, bool) {
	k := f.taken[0] + f.taken[1]
	if k >= len(f.mix) {
		return 0, false
	}
	return f.mix[k], true
}

// take returns the next mini-batch of class c.
func (f *layoutFeeder) take(ctx context.Context, c Class) (*dataset.Batch, error) {
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

// toTableIDs returns a copy of a hot batch with its global slots replaced
// by the table IDs they stand for.
func (f *layoutFeeder) toTableIDs(b *dataset.Batch) (*dataset.Batch, error) {
	out := *b
	out.Sparse = make([]dataset.SparseColumn, len(b.Sparse))
	for i, c := range b.Sparse {
		if i >= len(f.featTab) {
			return nil, fmt.Errorf("train: hot batch has %d sparse columns; the model has %d: %w", len(b.Sparse), len(f.featTab), ErrInvalidOptions)
		}
		t := f.featTab[i]
		hm := f.hotmap[t]
		ids := make([]int64, len(c.IDs))
		for k, slot := range c.IDs {
			r := slot - f.hotOff[t]
			if r < 0 || r >= int64(len(hm)) {
				return nil, fmt.Errorf("train: hot batch at %s row group %d: feature %d: slot %d outside table %d's hot slots [%d, %d): %w",
					b.Pos.File, b.Pos.RowGroup, i, slot, t, f.hotOff[t], f.hotOff[t]+int64(len(hm)), dataset.ErrBadData)
			}
			ids[k] = hm[r]
		}
		out.Sparse[i] = dataset.SparseColumn{IDs: ids, Offsets: c.Offsets}
	}
	return &out, nil
}

func (f *layoutFeeder) close() {
	for c := range f.streams {
		if f.streams[c] != nil {
			f.streams[c].Close()
			f.streams[c] = nil
		}
	}
}
