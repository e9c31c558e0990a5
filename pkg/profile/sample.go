package profile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"

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
// target number of rows, then read in dataset order. SamplingAuto uses row
// groups when the sample takes at least MinSampleGroups groups, or when the
// rows are declared shuffled (dataset.Spec.Shuffled: any set of groups is
// then a random sample) and the groups hold at most twice the target rows;
// rows otherwise.
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
			slices.Sort(picked)
			p := Plan{Sampling: SamplingRowGroups, RowsToRead: rows, RowRate: 1, ExpectedRows: float64(rows)}
			for _, j := range picked {
				p.RowGroups = append(p.RowGroups, groups[j])
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
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, nil, err
	}
	lg, err := Sample(ctx, ds, opts)
	if err != nil {
		return nil, nil, err
	}
	res, err := Analyze(ctx, lg, opts)
	if err != nil {
		return nil, nil, err
	}
	return res, lg, nil
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
	lg.Info = SampleInfo{RowsTotal: ds.Rows(), SampleRate: opts.SampleRate, Sampling: plan.Sampling,
		Seed: opts.Seed, Fingerprint: ds.Fingerprint()}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := min(opts.Workers, max(len(plan.RowGroups), 1))
	// Workers read row groups w, w+workers, ... of the plan, but the logger
	// takes them in plan order: its kept inputs, and so the counts file, are
	// then the same bytes for a seed however the reads interleave. Each
	// worker marks a row group done when it has sent all of its batches; the
	// consumer holds batches of later groups until the earlier ones are done,
	// and a worker waits while it is more than 2·workers groups ahead, which
	// bounds what is held.
	type item struct {
		b    *dataset.Batch // nil: row group p is done
		p    int            // plan index of the batch's row group
		read int64          // rows read for b, before row sampling
	}
	planIndex := make(map[dataset.Position]int, len(plan.RowGroups))
	for i, g := range plan.RowGroups {
		planIndex[dataset.Position{File: g.File, RowGroup: g.Index}] = i
	}
	batches := make(chan item, 2*workers)
	errc := make(chan error, workers)
	var skipped int64
	var mu sync.Mutex
	next := 0 // first plan index not yet given to the logger; under mu
	advanced := sync.NewCond(&mu)
	stopWake := context.AfterFunc(ctx, func() {
		mu.Lock()
		advanced.Broadcast()
		mu.Unlock()
	})
	defer stopWake()
	waitTurn := func(p int) bool {
		mu.Lock()
		defer mu.Unlock()
		for p >= next+2*workers && ctx.Err() == nil {
			advanced.Wait()
		}
		return ctx.Err() == nil
	}
	send := func(it item) bool {
		if !waitTurn(it.p) {
			return false
		}
		select {
		case batches <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var wg sync.WaitGroup
	rowKey := key(opts.Seed, 0x726f7773) // "rows"
	for w := 0; w < workers; w++ {
		var mine []dataset.RowGroup
		for i := w; i < len(plan.RowGroups); i += workers {
			mine = append(mine, plan.RowGroups[i])
		}
		rd, err := ds.NewReader(dataset.ReaderOptions{RowGroups: mine, BatchRows: opts.BatchRows, SkipBad: opts.SkipBad})
		if err != nil {
			cancel()
			wg.Wait()
			return nil, fmt.Errorf("profile: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer rd.Close()
			firsts := map[string]map[int]int64{}
			for _, g := range mine {
				if firsts[g.File] == nil {
					firsts[g.File] = map[int]int64{}
				}
				firsts[g.File][g.Index] = g.First
			}
			j := 0 // mine[j] is the group being read; plan index w+j*workers
			for {
				b, err := rd.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					errc <- err
					cancel()
					return
				}
				p := planIndex[dataset.Position{File: b.Pos.File, RowGroup: b.Pos.RowGroup}]
				for ; w+j*workers < p; j++ { // groups before b's are finished
					if !send(item{p: w + j*workers}) {
						return
					}
				}
				read := int64(b.N)
				if plan.RowRate < 1 {
					b = filterRows(b, plan.RowRate, rowKey, firsts[b.Pos.File][b.Pos.RowGroup])
				}
				if !send(item{b: b, p: p, read: read}) {
					return
				}
			}
			for ; j < len(mine); j++ {
				if !send(item{p: w + j*workers}) {
					return
				}
			}
			mu.Lock()
			skipped += rd.Skipped()
			mu.Unlock()
		}()
	}
	go func() {
		wg.Wait()
		close(batches)
	}()
	var done int64
	var addErr error
	held := map[int][]*dataset.Batch{}
	finished := map[int]bool{}
	for it := range batches {
		if it.b == nil {
			finished[it.p] = true
		} else {
			done += it.read
			if it.b.N > 0 {
				held[it.p] = append(held[it.p], it.b)
			}
		}
		mu.Lock()
		n := next
		mu.Unlock()
		for finished[n] {
			for _, b := range held[n] {
				if addErr == nil {
					if err := lg.Add(b); err != nil {
						addErr = err
						cancel()
					}
				}
			}
			delete(held, n)
			delete(finished, n)
			n++
		}
		mu.Lock()
		if n != next {
			next = n
			advanced.Broadcast()
		}
		mu.Unlock()
		if opts.Progress != nil {
			opts.Progress(done, plan.RowsToRead)
		}
	}
	close(errc)
	for err := range errc {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("profile: %w", err)
		}
	}
	if addErr != nil {
		return nil, addErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lg.Info.RowsSkipped = skipped
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
