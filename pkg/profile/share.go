package profile

import (
	"context"
	"errors"
	"runtime"
	"slices"

	"github.com/picasso-ctr/picasso/internal/par"
)

// hotInputShare estimates the share of inputs whose IDs are all hot under
// the per-table cutoffs minCounts (0: table hot whole), on the inputs the
// logger kept.
//
// Leave-one-out: an input counts as hot when, for every ID it looks up, the
// ID's sampled count minus this input's own accesses of it is still >= the
// table's cutoff. Each sampled input contributed to the counts it would be
// tested against; without taking its own accesses out, rows seen only in
// that input look hot for it and the share comes out optimistic (picasso
// reports that figure too, as inSample). Inputs kept at rate p weigh 1/p.
// Memory: the logger holds 1 to 4 bytes per kept ID, by table (8 for
// tables above 2^32 rows) plus 4 per multi-hot feature per kept input;
// Options.ShareInputs
// bounds the kept inputs. Returns -1 shares when no input was kept.
func hotInputShare(ctx context.Context, lg *Logger, minCounts []uint32) (loo, inSample float64, kept int64, err error) {
	simple := simpleFeatures(lg)
	fast := newOneHotShare(lg, minCounts, simple)
	// The blocks are counted side by side, each into its own pair of
	// integers, and the weighted sums are formed in block order after, so
	// the result is the same bits whatever the number of workers.
	hot := make([]int64, 2*len(lg.blocks)) // hot, hotIn of block b at 2b, 2b+1
	errs := make([]error, len(lg.blocks))
	par.Each(len(lg.blocks), runtime.GOMAXPROCS(0), func(b int) {
		hot[2*b], hot[2*b+1], errs[b] = blockHot(ctx, lg, lg.blocks[b], minCounts, simple, fast)
	})
	if err := ctx.Err(); err != nil { // one cancellation, not one a worker
		return 0, 0, 0, err
	}
	if err := errors.Join(errs...); err != nil {
		return 0, 0, 0, err
	}
	var wHot, wHotIn, wAll float64
	for b, blk := range lg.blocks {
		wHot += blk.weight * float64(hot[2*b])
		wHotIn += blk.weight * float64(hot[2*b+1])
		wAll += blk.weight * float64(blk.n)
		kept += blk.n
	}
	if kept == 0 {
		return -1, -1, 0, nil
	}
	return wHot / wAll, wHotIn / wAll, kept, nil
}

// simpleFeatures reports, per feature, whether it is one-hot on a table no
// other feature looks up, so that an input's own accesses of its ID are
// exactly 1.
func simpleFeatures(lg *Logger) []bool {
	uses := make([]int, len(lg.tables))
	for _, f := range lg.features {
		uses[f.Table]++
	}
	simple := make([]bool, len(lg.features))
	for i, f := range lg.features {
		simple[i] = !f.MultiHot && uses[f.Table] == 1
	}
	return simple
}

// shareRef is a (table, ID) that an input looks up through a feature that
// shares its table or is multi-hot.
type shareRef struct {
	z  int
	id int64
}

// blockHot counts the inputs of blk that are hot leave-one-out (hot) and
// in-sample (hotIn), as hotInputShare describes.
func blockHot(ctx context.Context, lg *Logger, blk *inputBlock, minCounts []uint32, simple []bool, fast *oneHotShare) (hot, hotIn int64, _ error) {
	if fast != nil && !lg.wide {
		return fast.block(ctx, &lg.lay, blk)
	}
	var buf []shareRef // the input's references to check against shared counts
	pos, lpos := 0, 0  // pos: in ids64, or the byte in packed
	for in := int64(0); in < blk.n; in++ {
		if in%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
		}
		isHot, isHotIn := true, true
		buf = buf[:0]
		for f, fi := range lg.features {
			n := 1
			if fi.MultiHot {
				n = int(blk.lens[lpos])
				lpos++
			}
			z := fi.Table
			mc := minCounts[z]
			for j := 0; j < n; j++ {
				var id int64
				if lg.wide {
					id = blk.ids64[pos]
					pos++
				} else {
					w := lg.lay.feats[f].width
					id = int64(idAt(blk.packed, pos, w))
					pos += w
				}
				if mc == 0 {
					continue
				}
				if !simple[f] {
					buf = append(buf, shareRef{z, id})
					continue
				}
				c := int64(lg.Count(z, id))
				if c < int64(mc) {
					isHotIn = false
				}
				if c-1 < int64(mc) {
					isHot = false
				}
			}
		}
		if len(buf) > 0 {
			slices.SortFunc(buf, func(a, b shareRef) int {
				if a.z != b.z {
					return a.z - b.z
				}
				switch {
				case a.id < b.id:
					return -1
				case a.id > b.id:
					return 1
				}
				return 0
			})
			for i := 0; i < len(buf); {
				j := i + 1
				for j < len(buf) && buf[j] == buf[i] {
					j++
				}
				c := int64(lg.Count(buf[i].z, buf[i].id))
				mc := int64(minCounts[buf[i].z])
				if c < mc {
					isHotIn = false
				}
				if c-int64(j-i) < mc {
					isHot = false
				}
				i = j
			}
		}
		if isHot {
			hot++
		}
		if isHotIn {
			hotIn++
		}
	}
	return hot, hotIn, nil
}

// oneHotShare is blockHot for the common case: every feature one-hot, on a
// table of its own counted densely (or kept whole), so an input is its
// features' IDs in a row and each ID is tested against its table's counts
// directly.
type oneHotShare struct {
	counts [][]uint32 // per feature: its table's dense counts; nil when the table is hot whole
	min    []uint32   // per feature: its table's cutoff
	check  []int      // the features whose table is not hot whole
}

// newOneHotShare returns the fast path for lg's features, or nil when a
// feature is multi-hot, shares its table, or its table is counted sparsely.
func newOneHotShare(lg *Logger, minCounts []uint32, simple []bool) *oneHotShare {
	o := &oneHotShare{counts: make([][]uint32, len(lg.features)), min: make([]uint32, len(lg.features))}
	for f, fi := range lg.features {
		if fi.MultiHot { // its IDs are not one a row, even when its table is hot whole
			return nil
		}
		mc := minCounts[fi.Table]
		if mc == 0 {
			continue
		}
		d := lg.tables[fi.Table].dense
		if !simple[f] || d == nil {
			return nil
		}
		o.counts[f], o.min[f] = d, mc
		o.check = append(o.check, f)
	}
	return o
}

// block counts blk's inputs that are hot leave-one-out and in-sample, as
// blockHot does.
func (o *oneHotShare) block(ctx context.Context, lay *idLayout, blk *inputBlock) (hot, hotIn int64, _ error) {
	if len(o.check) == 0 { // every table hot whole: so is every input
		return blk.n, blk.n, nil
	}
	for in := int64(0); in < blk.n; in++ {
		if in%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
		}
		at := int(in) * lay.per
		isHot, isHotIn := true, true
		for _, f := range o.check {
			d := o.counts[f]
			id := idAt(blk.packed, at+lay.off[f], lay.feats[f].width)
			var c uint32
			if int(id) < len(d) {
				c = d[id]
			}
			if c < o.min[f] { // cold in the sample, and without this input
				isHot, isHotIn = false, false
				break
			}
			if c == o.min[f] { // hot only with this input's own access
				isHot = false
			}
		}
		if isHot {
			hot++
		}
		if isHotIn {
			hotIn++
		}
	}
	return hot, hotIn, nil
}
