package profile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// BatchSource yields batches of inputs; Next returns io.EOF after the last.
// *dataset.Reader is one.
type BatchSource interface {
	Next(ctx context.Context) (*dataset.Batch, error)
}

// Collect counts every batch of src into lg until src returns io.EOF.
func Collect(ctx context.Context, lg *Logger, src BatchSource) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := lg.Add(b); err != nil {
			return err
		}
	}
}

// Plan is what a sample reads: the row groups, and for row sampling the
// probability each row is kept.
type Plan struct {
	Sampling  Sampling
	RowGroups []dataset.RowGroup
	// RowsToRead is the number of rows in RowGroups.
	RowsToRead int64
	// RowRate is the probability of keeping a read row (1 for row groups).
	RowRate float64
	// ExpectedRows is the expected number of sampled rows.
	ExpectedRows float64
}

// PlanSample decides what to read for a sample of opts.SampleRate percent
// of the rows in groups (which hold totalRows rows). Row groups: a seeded
// shuffle of the groups is taken in order until it holds at least the
// target number of rows, then read in dataset order; when the rows are
// declared shuffled (dataset.Spec.Shuffled: any set of rows is then a
// random sample), only the first rows of the last group taken are read, up
// to the target. SamplingAuto uses row groups when the sample takes at
// least MinSampleGroups groups, or when the rows are declared shuffled and
// the groups hold at most twice the target rows; rows otherwise.
func PlanSample(groups []dataset.RowGroup, shuffled bool, opts Options) Plan {
	opts = opts.withDefaults()
	var total int64
	for _, g := range groups {
		total += g.Rows
	}
	rate := opts.SampleRate / 100
	if opts.Sampling != SamplingRows {
		target := int64(math.Ceil(rate * float64(total)))
		perm := newPermutation(uint64(max(len(groups), 1)), key(opts.Seed, 0x726f7767)) // "rowg"
		var picked []int
		var rows int64
		for i := 0; i < len(groups) && rows < target; i++ {
			j := int(perm.at(uint64(i)))
			picked = append(picked, j)
			rows += groups[j].Rows
		}
		if opts.Sampling == SamplingRowGroups || len(picked) >= MinSampleGroups || rate >= 1 ||
			shuffled && float64(rows) <= 2*float64(target) {
			cut, cutRows := -1, int64(0)
			if shuffled && rows > target {
				// The last group taken is read only up to the target: its
				// first rows are as random as any.
				cut = picked[len(picked)-1]
				cutRows = groups[cut].Rows - (rows - target)
				rows = target
			}
			slices.Sort(picked)
			p := Plan{Sampling: SamplingRowGroups, RowsToRead: rows, RowRate: 1, ExpectedRows: float64(rows)}
			for _, j := range picked {
				g := groups[j]
				if j == cut {
					g.Rows = cutRows
				}
				p.RowGroups = append(p.RowGroups, g)
			}
			return p
		}
	}
	return Plan{Sampling: SamplingRows, RowGroups: slices.Clone(groups), RowsToRead: total, RowRate: rate,
		ExpectedRows: rate * float64(total)}
}

// Run samples ds as opts says, counts the sample into a logger and
// analyses it (see Analyze). It returns the result and the logger, which
// the caller writes as the side file (Logger.WriteFile) and names in
// Result.LoggerFile. Row groups are read by opts.Workers concurrent readers;
// the counts do not depend on their order, and every random choice is a
// keyed hash of the seed, so the same seed gives the same result.
func Run(ctx context.Context, ds *dataset.Dataset, opts Options) (*Result, *Logger, error) {
	opts, lg, err := sampleChecked(ctx, ds, opts)
	if err != nil {
		return nil, nil, err
	}
	res, err := Analyze(ctx, lg, opts)
	if err != nil {
		return nil, nil, err
	}
	return res, lg, nil
}

// RunAndWrite is Run writing the pair as `picasso profile` does: the
// counts file to countsPath while the analysis runs, then the result to
// jsonPath (AnalyzeAndWrite).
func RunAndWrite(ctx context.Context, ds *dataset.Dataset, opts Options, jsonPath, countsPath string) (*Result, *Logger, error) {
	opts, lg, err := sampleChecked(ctx, ds, opts)
	if err != nil {
		return nil, nil, err
	}
	res, err := AnalyzeAndWrite(ctx, lg, opts, jsonPath, countsPath)
	if err != nil {
		return nil, nil, err
	}
	return res, lg, nil
}

// sampleChecked fills opts' defaults, validates them and samples ds.
func sampleChecked(ctx context.Context, ds *dataset.Dataset, opts Options) (Options, *Logger, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return opts, nil, err
	}
	lg, err := Sample(ctx, ds, opts)
	return opts, lg, err
}

// Sample draws the sample of ds that opts describes and counts it into a
// new logger, without analysing it.
func Sample(ctx context.Context, ds *dataset.Dataset, opts Options) (*Logger, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	plan := PlanSample(ds.RowGroups(), ds.Spec().Shuffled, opts)
	if plan.RowsToRead == 0 {
		return nil, fmt.Errorf("profile: %s: the dataset has no rows to sample: %w", ds.Spec().Train, ErrEmpty)
	}
	keep := 0.0
	if opts.ShareInputs > 0 && plan.ExpectedRows > 0 {
		keep = math.Min(1, float64(opts.ShareInputs)/plan.ExpectedRows)
	}
	lg, err := NewLogger(ds.Spec(), LoggerOptions{KeepInputs: keep, Seed: opts.Seed})
	if err != nil {
		return nil, err
	}
	lg.prefaultFor(plan.ExpectedRows)
	lg.Info = SampleInfo{RowsTotal: ds.Rows(), SampleRate: opts.SampleRate, Sampling: plan.Sampling,
		Seed: opts.Seed, Fingerprint: ds.Fingerprint()}

	if useColumns(ds, plan, lg, opts) {
		if err := sampleColumns(ctx, ds, plan, lg, opts); err != nil {
			return nil, err
		}
		return lg, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := min(opts.Workers, max(len(plan.RowGroups), 1))
	// Workers read row groups round robin (worker w reads groups w,
	// w+workers, ...). Each counts its batches straight into lg, table by
	// table under that table's lock (starting at a different feature, so
	// that workers seldom wait on each other), keeps the chosen inputs of
	// each group in a segment of its own, and hands the batch back to its
	// reader at once: a worker holds one batch and lg is the only set of
	// counts, so memory does not grow with the workers or the sample. The
	// consumer appends the segments in plan order, so the inputs kept for
	// the hot-input share, and with them the counts file, come out the same
	// for the same seed however the workers are scheduled.
	type segment struct {
		kept inputBlock // the group's kept inputs
		read int64      // rows read from the group, before row sampling
	}
	chans := make([]chan *segment, workers)
	errs := make([]error, workers)
	locks := make([]sync.Mutex, len(lg.tables))
	var skipped, sampled atomic.Int64
	var wg sync.WaitGroup
	rowKey := key(opts.Seed, 0x726f7773) // "rows"
	for w := 0; w < workers; w++ {
		var mine []dataset.RowGroup
		for i := w; i < len(plan.RowGroups); i += workers {
			mine = append(mine, plan.RowGroups[i])
		}
		rd, err := ds.NewReader(dataset.ReaderOptions{RowGroups: mine, BatchRows: opts.BatchRows, SkipBad: opts.SkipBad, SparseOnly: true})
		if err != nil {
			cancel()
			wg.Wait()
			return nil, fmt.Errorf("profile: %w", err)
		}
		ch := make(chan *segment, 1)
		chans[w] = ch
		start := w * len(lg.features) / workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ch)
			defer rd.Close()
			fail := func(err error) {
				errs[w] = err
				cancel()
			}
			// newSeg returns an empty segment for a group of rows rows, with
			// room for the IDs it should keep (grown a batch at a time, the
			// list was copied again and again). Its kept inputs become one
			// of the logger's blocks as they are (appendKept).
			newSeg := func(rows int64) *segment {
				sg := &segment{}
				if want := int(float64(rows)*lg.keepRate*1.05+64) * lg.lay.per; lg.keepRate > 0 && !lg.wide && rows > 0 {
					sg.kept.packed = make([]byte, 0, want+3)
				}
				return sg
			}
			groupRows := func(i int) int64 {
				if i < len(mine) {
					return mine[i].Rows
				}
				return 0
			}
			send := func(sg *segment) bool {
				select {
				case ch <- sg:
					return true
				case <-ctx.Done():
					return false
				}
			}
			cur, sg := 0, newSeg(groupRows(0)) // index in mine of the group being read, and its segment
			for {
				b, err := rd.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					fail(fmt.Errorf("profile: %w", err))
					return
				}
				for cur < len(mine) && (mine[cur].File != b.Pos.File || mine[cur].Index != b.Pos.RowGroup) {
					if !send(sg) {
						return
					}
					cur, sg = cur+1, newSeg(groupRows(cur+1))
				}
				if cur == len(mine) {
					fail(fmt.Errorf("profile: %s: row group %d: read out of the planned order", b.Pos.File, b.Pos.RowGroup))
					return
				}
				sg.read += int64(b.N)
				orig := b
				if plan.RowRate < 1 {
					b = filterRows(b, plan.RowRate, rowKey, mine[cur].First)
				}
				if b.N > 0 {
					if err := lg.countShared(b, locks, start); err != nil {
						fail(err)
						return
					}
					sampled.Add(int64(b.N))
					if lg.keepRate > 0 {
						lg.keepInto(&sg.kept, b)
					}
				}
				rd.Release(orig)
			}
			for ; cur < len(mine); cur++ {
				if !send(sg) {
					return
				}
				sg = newSeg(0)
			}
			skipped.Add(rd.Skipped())
		}()
	}
	var done int64
	complete := true
	for i := range plan.RowGroups {
		sg, ok := <-chans[i%workers]
		if !ok {
			complete = false
			break
		}
		done += sg.read
		if sg.kept.n > 0 {
			lg.appendKept(&sg.kept)
		}
		if opts.Progress != nil {
			opts.Progress(done, plan.RowsToRead)
		}
	}
	if !complete {
		cancel()
	}
	for _, ch := range chans {
		for range ch {
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lg.Info.RowsSampled += sampled.Load()
	lg.Info.RowsSkipped = skipped.Load()
	return lg, nil
}

// filterRows keeps each row of b with probability rate, decided by a keyed
// hash of its dataset-wide row index (first is the index of the row
// group's first row).
func filterRows(b *dataset.Batch, rate float64, k uint64, first int64) *dataset.Batch {
	keep := make([]int, 0, int(float64(b.N)*rate*1.2)+8)
	for i := 0; i < b.N; i++ {
		if unitFloat(mix64(k^mix64(uint64(first+b.Pos.Row+int64(i))))) < rate {
			keep = append(keep, i)
		}
	}
	out := &dataset.Batch{N: len(keep), Pos: b.Pos, Sparse: make([]dataset.SparseColumn, len(b.Sparse))}
	for s := range b.Sparse {
		out.Sparse[s] = b.Sparse[s].Select(keep)
	}
	return out
}
