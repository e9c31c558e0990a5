package profile

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/picasso-ctr/picasso/internal/par"
	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// noColumns makes Sample read every plan in batches (tests compare the
// two paths).
var noColumns bool

// useColumns reports whether Sample reads plan by the column path: whole
// or cut row groups (no row sampling), every group's sparse columns of a
// shape the path decodes, kept IDs of 32 bits, and no bad rows to skip (a
// column at a time, a bad row would be found after its other IDs were
// counted).
func useColumns(ds *dataset.Dataset, plan Plan, lg *Logger, opts Options) bool {
	return !noColumns && plan.RowRate >= 1 && !opts.SkipBad && !lg.wide && ds.ColumnPathOK(plan.RowGroups)
}

// sampleColumns is Sample for a plan of whole (or cut) row groups whose
// sparse columns the column path decodes (dataset.SparseGroup): every
// (group, feature) pair is a task, taken in plan order by opts.Workers
// goroutines, which decode the feature's IDs of the group, count them
// under the table's lock and copy the kept inputs' IDs into the group's
// segment. Tasks this small share the work evenly: with a row group a
// worker, a 5% sample of the kaggle preset (four groups, the last one cut)
// gave one worker 131,072 rows and the other 93,928. A column's IDs are
// also counted while they are in cache, and no batch is built. The
// segments are appended in plan order, so the counts file is the same
// bytes as the batch path's, whatever the scheduling.
func sampleColumns(parent context.Context, ds *dataset.Dataset, plan Plan, lg *Logger, opts Options) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	nf := len(lg.features)
	per := lg.lay.per
	groups := plan.RowGroups
	type group struct {
		once sync.Once
		sg   *dataset.SparseGroup
		err  error
		rows []int32      // the rows whose inputs are kept
		kept inputBlock   // their IDs, packed
		left atomic.Int32 // features still to count
		done chan struct{}
	}
	gs := make([]*group, len(groups))
	for i := range gs {
		gs[i] = &group{done: make(chan struct{})}
		gs[i].left.Store(int32(nf))
	}
	open := func(i int) *group {
		st := gs[i]
		st.once.Do(func() {
			sg, ok, err := ds.OpenSparseGroup(groups[i])
			if err == nil && !ok {
				err = fmt.Errorf("profile: %s: row group %d: the column path cannot read it", groups[i].File, groups[i].Index)
			}
			if err != nil {
				st.err = fmt.Errorf("profile: %w", err)
				return
			}
			if g := sg.Group(); g.Rows != groups[i].Rows {
				sg.Close()
				st.err = fmt.Errorf("profile: %s: row group %d holds %d rows, not the %d planned: %w", g.File, g.Index, g.Rows, groups[i].Rows, dataset.ErrBadData)
				return
			}
			st.sg = sg
		})
		return st
	}
	// A group is opened (its chunks mapped, a few tenths of a millisecond)
	// ahead of the workers: the first while the kept rows are found, each
	// next one as the workers start on the one before. Opened by the
	// first worker to reach it, it kept the other waiting on it.
	var ahead sync.WaitGroup
	openAhead := func(i int) {
		if i < len(groups) {
			ahead.Add(1)
			go func() {
				defer ahead.Done()
				open(i)
			}()
		}
	}
	openAhead(0)
	// Each group's kept rows, and room for their IDs (mapped at once, see
	// prefault), are found before the workers start, by as many
	// goroutines. Found as a group was opened, the first group's kept the
	// other worker waiting, and the IDs' fresh pages faulted one at a time
	// as the first feature filled them. A plan's groups hold their exact
	// rows to read (PlanSample): open checks them against the file.
	if lg.keepRate > 0 {
		par.Each(len(groups), max(1, opts.Workers), func(i int) {
			if ctx.Err() != nil {
				return // the workers will not start
			}
			g, st := groups[i], gs[i]
			st.rows = lg.keptRows(dataset.Position{File: g.File, RowGroup: g.Index}, int(g.Rows))
			st.kept.n = int64(len(st.rows))
			st.kept.packed = make([]byte, len(st.rows)*per, len(st.rows)*per+3)
			prefault(st.kept.packed)
		})
	}
	locks := make([]sync.Mutex, len(lg.tables))
	var next atomic.Int64
	workers := max(1, opts.Workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf dataset.ColumnBuf
			for ctx.Err() == nil {
				t := int(next.Add(1) - 1)
				if t >= len(groups)*nf {
					return
				}
				i, f := t/nf, t%nf
				if f == 0 {
					openAhead(i + 1)
				}
				st := open(i)
				if st.err != nil {
					errs[w] = st.err
					cancel()
					return
				}
				if err := countFeature(lg, st.sg, f, &buf, locks, st.rows, &st.kept); err != nil {
					errs[w] = err
					cancel()
					return
				}
				if st.left.Add(-1) == 0 {
					st.sg.Close()
					close(st.done)
				}
			}
		}()
	}
	var rows int64
	complete := true
	for _, st := range gs {
		select {
		case <-st.done:
		case <-ctx.Done():
			complete = false
		}
		if !complete {
			break
		}
		g := st.sg.Group()
		rows += g.Rows
		if st.kept.n > 0 {
			lg.appendKept(&st.kept)
		}
		if opts.Progress != nil {
			opts.Progress(rows, plan.RowsToRead)
		}
	}
	cancel()
	wg.Wait()
	ahead.Wait()
	for _, st := range gs { // groups opened but not finished (Close is idempotent)
		if st.sg != nil {
			st.sg.Close()
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if !complete {
		if err := parent.Err(); err != nil {
			return err
		}
		return context.Canceled
	}
	lg.Info.RowsSampled += rows
	return nil
}

// countFeature counts feature f of group sg into lg under its table's
// lock, and writes the IDs of the kept rows (one-hot inputs) into kept's
// packed IDs: only their own bytes, while other workers write the other
// features'.
func countFeature(lg *Logger, sg *dataset.SparseGroup, f int, buf *dataset.ColumnBuf, locks []sync.Mutex, rows []int32, kept *inputBlock) error {
	ids, err := sg.Column(f, buf)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	g := sg.Group()
	mu := &locks[lg.features[f].Table]
	mu.Lock()
	err = lg.countIDs(f, ids, nil, dataset.Position{File: g.File, RowGroup: g.Index})
	mu.Unlock()
	if err != nil {
		return err
	}
	if len(rows) > 0 {
		putIDs(kept.packed[lg.lay.off[f]:], lg.lay.per, lg.lay.feats[f].width, rows, ids)
	}
	return nil
}
