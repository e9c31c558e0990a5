package profile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/picasso-ctr/picasso/internal/nonzero"
	"github.com/picasso-ctr/picasso/internal/par"
)

// bisectSteps bounds the log-space bisection; the bracket shrinks by half
// its log-width each step, far below float64 resolution well before this.
const bisectSteps = 200

// Analyze chooses the threshold from a filled logger with opts.Method and
// reports it (Result.LoggerFile is left for the caller to set). Zero
// fields of opts take their defaults.
//
// Threshold optimizer (MethodTInterval and MethodExact): for each table z
// and threshold t the integer cutoff is MinCount(H_zt), H_zt = t·T_z·x/100
// (Eq. 1) with T_z = A_z·100/x. The search is a bisection over log t
// between t_min = 1/max A_z (every cutoff is 1: every seen row hot) and
// t_max = max (k_max,z+1)/A_z (no row of any large table hot) for the
// smallest t whose upper bound of hot bytes (weights and optimizer state of
// the hot rows, plus the small tables kept whole) fits opts.Budget. The
// upper bound is, per table, the interval's high end maximised over all
// larger cutoffs, which makes it non-increasing in t; hence the returned
// t's reported upper bound never exceeds the budget and a larger budget
// never gives a larger t. It is an ErrBudget error when even t_max does not
// fit.
func Analyze(ctx context.Context, lg *Logger, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if lg.Info.RowsSampled == 0 {
		return nil, fmt.Errorf("profile: the sample holds no inputs: %w", ErrEmpty)
	}
	var errs []error
	known := map[string]bool{}
	for _, t := range lg.tables {
		known[t.info.Name] = true
	}
	names := make([]string, 0, len(opts.Dims))
	for name := range opts.Dims {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !known[name] {
			errs = append(errs, fmt.Errorf("profile: dims names table %q, which the data config does not have: %w", name, ErrOptions))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	a := newAnalysis(lg, opts)
	var (
		res *Result
		err error
	)
	switch opts.Method {
	case MethodTopK:
		res = a.topK()
	default:
		res, err = a.threshold()
	}
	if err != nil {
		return nil, err
	}
	minCounts := make([]uint32, len(res.Tables))
	for i, t := range res.Tables {
		minCounts[i] = t.MinCount
	}
	res.HotInputShareUnsampled, res.HotInputShareInSample, res.ShareInputs, err = hotInputShare(ctx, lg, minCounts)
	if err != nil {
		return nil, err
	}
	res.HotInputShare = datasetShare(a.rate, res.HotInputShareInSample, res.HotInputShareUnsampled)
	return res, nil
}

// datasetShare is the expected hot share of the whole dataset when a rate%
// sample, hot at inSample, is part of it and the rest is hot at unsampled.
func datasetShare(rate, inSample, unsampled float64) float64 {
	if unsampled < 0 {
		return -1
	}
	x := rate / 100
	return x*inSample + (1-x)*unsampled
}

type analysis struct {
	lg   *Logger
	opts Options
	rate float64 // x, percent
	tabs []*tableEst
}

func newAnalysis(lg *Logger, opts Options) *analysis {
	a := &analysis{lg: lg, opts: opts, rate: lg.Info.EffectiveRate()}
	if !(a.rate > 0 && a.rate <= 100) {
		a.rate = opts.SampleRate
	}
	// Tables are estimated independently (each from its own counts and a
	// seed of its own), so opts.Workers goroutines share them, largest
	// first.
	a.tabs = make([]*tableEst, len(lg.tables))
	order := make([]int, len(lg.tables))
	for z := range order {
		order[z] = z
	}
	sort.SliceStable(order, func(i, j int) bool { return lg.tables[order[i]].info.Rows > lg.tables[order[j]].info.Rows })
	par.Each(len(order), opts.Workers, func(k int) { a.tabs[order[k]] = estimateTable(lg, order[k], opts) })
	return a
}

// estimateTable builds table z's estimate: its histogram, and for the
// t-interval method its chunks and their steps.
func estimateTable(lg *Logger, z int, opts Options) *tableEst {
	tl := &lg.tables[z]
	dim := opts.dimOf(tl.info.Name)
	te := &tableEst{info: tl.info, dim: dim, bpr: BytesPerRow(dim, opts.Optimizer) + opts.ExtraRowBytes, accesses: tl.accesses}
	te.whole = opts.Method != MethodTopK && opts.SmallTableBytes > 0 &&
		float64(tl.info.Rows)*float64(te.bpr) < float64(opts.SmallTableBytes)
	buf := entryBufs.Get().(*[]uint32)
	defer entryBufs.Put(buf)
	// Room for every entry, and the block appendEntries stores ahead, at
	// once: growing it as it filled copied it several times a table.
	*buf = slices.Grow((*buf)[:0], int(min(tl.info.Rows, tl.accesses)+nonzero.ChunkLen))
	entries := lg.appendEntries(*buf, z)
	*buf = entries
	te.buildHistogram(entries)
	N := (te.logged + int64(opts.ChunkSize) - 1) / int64(opts.ChunkSize)
	if opts.Method == MethodTInterval && !te.whole && N > int64(opts.Chunks) {
		te.drawChunksFrom(entries, z, opts.Chunks, opts.ChunkSize, opts.Seed)
		te.buildSteps(opts.Confidence)
	} else {
		te.N = N
	}
	return te
}

// entryBufs recycles the buffers estimateTable reads a table's entries
// into (Logger.appendEntries); nothing keeps them past the estimate.
var entryBufs = sync.Pool{New: func() any { return new([]uint32) }}

// totalAccesses is T_z estimated from the sample: A_z·100/x.
func (a *analysis) totalAccesses(te *tableEst) float64 {
	return float64(te.accesses) * 100 / a.rate
}

// minCount is the integer cutoff of table te at threshold t.
func (a *analysis) minCount(te *tableEst, t float64) uint32 {
	return MinCount(Cutoff(t, a.totalAccesses(te), a.rate))
}

// upperBytes is the optimizer's upper bound of hot bytes at threshold t.
func (a *analysis) upperBytes(t float64) float64 {
	var sum float64
	for _, te := range a.tabs {
		if te.whole {
			sum += float64(te.info.Rows) * float64(te.bpr)
			continue
		}
		sum += te.upperRows(a.minCount(te, t)) * float64(te.bpr)
	}
	return sum
}

// threshold runs the optimizer for MethodTInterval and MethodExact.
func (a *analysis) threshold() (*Result, error) {
	for _, te := range a.tabs { // undo an earlier call's promotions
		if te.promoted {
			te.whole, te.promoted = false, false
		}
	}
	t, err := a.search()
	if err != nil {
		return nil, err
	}
	if !a.opts.NoPromote {
		a.promote(t)
	}
	return a.resultAt(t), nil
}

// promote spends the budget left at threshold t on whole tables when t
// already makes every sampled row hot (every cutoff is 1), where the
// paper's search has nothing more to give. Taking a table whole costs its
// rows not yet counted (at their upper bound) and gains the accesses that
// hit rows the sample never saw, estimated by Good-Turing as the share of
// the table's sampled accesses whose row was seen once. Tables go whole in
// decreasing order of gain per byte while they fit, so the upper bound of
// hot bytes stays within the budget.
func (a *analysis) promote(t float64) {
	for _, te := range a.tabs {
		if !te.whole && te.accesses > 0 && a.minCount(te, t) > 1 {
			return
		}
	}
	spare := float64(a.opts.Budget) - a.upperBytes(t)
	type cand struct {
		te          *tableEst
		cost, ratio float64
	}
	var cands []cand
	for _, te := range a.tabs {
		if te.whole || te.accesses == 0 {
			continue
		}
		cost := (float64(te.info.Rows) - te.upperRows(1)) * float64(te.bpr)
		gain := te.unseenMass()
		if gain <= 0 {
			continue
		}
		cands = append(cands, cand{te, max(cost, 0), gain / max(cost, 1)})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].ratio > cands[j].ratio })
	for _, c := range cands {
		if c.cost <= spare {
			spare -= c.cost
			c.te.whole, c.te.promoted = true, true
		}
	}
}

// search returns the smallest threshold whose upper bound of hot bytes fits
// the budget (see Analyze).
func (a *analysis) search() (float64, error) {
	L := float64(a.opts.Budget)
	var maxA int64
	tMax := 0.0
	for _, te := range a.tabs {
		if te.whole || te.accesses == 0 {
			continue
		}
		maxA = max(maxA, te.accesses)
		tMax = math.Max(tMax, (float64(te.maxCount())+1)/float64(te.accesses))
	}
	if maxA == 0 {
		// No large table was accessed: only the whole tables can be hot.
		if u := a.upperBytes(1); u > L {
			return 0, a.budgetError(u)
		}
		return 1, nil
	}
	tMin := 1 / float64(maxA)
	if u := a.upperBytes(tMax); u > L {
		return 0, a.budgetError(u)
	}
	if a.upperBytes(tMin) <= L {
		return tMin, nil
	}
	// Invariant: upperBytes(exp(lo)) > L >= upperBytes(tHi), tHi = exp(hi).
	lo, hi := math.Log(tMin), math.Log(tMax)
	tHi := tMax
	for i := 0; i < bisectSteps && hi-lo > 1e-13; i++ {
		mid := (lo + hi) / 2
		if tm := math.Exp(mid); a.upperBytes(tm) <= L {
			hi, tHi = mid, tm
		} else {
			lo = mid
		}
	}
	return tHi, nil
}

// resultAt reports every table at threshold t.
func (a *analysis) resultAt(t float64) *Result {
	res := a.newResult()
	res.Threshold = t
	for _, te := range a.tabs {
		tr := a.tableBase(te)
		tr.Promoted = te.promoted
		if te.whole {
			tr.MinCount = 0
			tr.HotRows = exactInterval(float64(te.info.Rows))
			tr.HotRowsExactSample = te.info.Rows
		} else {
			tr.Cutoff = Cutoff(t, a.totalAccesses(te), a.rate)
			tr.MinCount = MinCount(tr.Cutoff)
			tr.HotRows = te.rows(tr.MinCount)
			tr.HotRowsExactSample = te.exactHot(tr.MinCount)
		}
		a.finishTable(res, &tr)
	}
	return res
}

func (a *analysis) budgetError(u float64) error {
	var whole float64
	for _, te := range a.tabs {
		if te.whole {
			whole += float64(te.info.Rows) * float64(te.bpr)
		}
	}
	return fmt.Errorf("profile: budget %s: even the largest meaningful threshold needs %s (tables under %s kept whole take %s): %w",
		FormatBytes(float64(a.opts.Budget)), FormatBytes(u), FormatBytes(float64(a.opts.SmallTableBytes)), FormatBytes(whole), ErrBudget)
}

// topK reproduces the FAE artifact's rule: rank the rows of all tables by
// sampled count (decreasing; ties by table order, then ID) and keep the
// first K = Budget/(4·dim), the budget counting only the float32 weights.
// With different dims per table, rows are taken in rank order while their
// 4·dim bytes fit. Rows never seen in the sample are not ranked (the
// artifact could pad with arbitrary unseen rows when K exceeds the seen
// rows). Each table's implied cutoff is the smallest count it kept; the
// classifier's cutoff rule also tags the rest of a tie class that K cut, so
// HotRowsExactSample can exceed the K-selection in HotRows. Reported bytes
// include the optimizer state the artifact left out.
func (a *analysis) topK() *Result {
	res := a.newResult()
	type class struct {
		v   uint32
		z   int
		cnt int64
	}
	var classes []class
	for z, te := range a.tabs {
		for j, v := range te.hv {
			classes = append(classes, class{v, z, te.hn[j]})
		}
	}
	sort.SliceStable(classes, func(i, j int) bool {
		if classes[i].v != classes[j].v {
			return classes[i].v > classes[j].v
		}
		return classes[i].z < classes[j].z
	})
	kept := make([]int64, len(a.tabs))
	minKept := make([]uint32, len(a.tabs))
	remaining := a.opts.Budget
	uniform := true
	for _, te := range a.tabs {
		uniform = uniform && te.dim == a.tabs[0].dim
	}
	if uniform && len(a.tabs) > 0 {
		res.TopKRows = a.opts.Budget / (4 * int64(a.tabs[0].dim))
	}
	for _, c := range classes {
		cost := 4 * int64(a.tabs[c.z].dim)
		take := min(c.cnt, remaining/cost)
		if take > 0 {
			kept[c.z] += take
			minKept[c.z] = c.v
			remaining -= take * cost
		}
		if take < c.cnt {
			break
		}
	}
	if !uniform {
		for _, k := range kept {
			res.TopKRows += k
		}
	}
	for z, te := range a.tabs {
		tr := a.tableBase(te)
		tr.Exact = true
		if kept[z] > 0 {
			tr.MinCount = minKept[z]
		} else {
			tr.MinCount = satAdd(te.maxCount(), 1)
		}
		tr.Cutoff = float64(tr.MinCount)
		tr.HotRows = exactInterval(float64(kept[z]))
		tr.HotRowsExactSample = te.exactHot(tr.MinCount)
		a.finishTable(res, &tr)
	}
	return res
}

func (a *analysis) newResult() *Result {
	info := &a.lg.Info
	o := &a.opts
	return &Result{
		Version:             ResultVersion,
		Method:              o.Method,
		BudgetBytes:         o.Budget,
		SampleRate:          a.rate,
		SampleRateRequested: info.SampleRate,
		Sampling:            info.Sampling,
		RowsSampled:         info.RowsSampled,
		RowsTotal:           info.RowsTotal,
		RowsSkipped:         info.RowsSkipped,
		Seed:                info.Seed,
		Confidence:          o.Confidence,
		Chunks:              o.Chunks,
		ChunkSize:           o.ChunkSize,
		Optimizer:           o.Optimizer,
		SmallTableBytes:     o.SmallTableBytes,
		Fingerprint:         info.Fingerprint,
	}
}

func (a *analysis) tableBase(te *tableEst) TableResult {
	return TableResult{
		Name:                  te.info.Name,
		Rows:                  te.info.Rows,
		Dim:                   te.dim,
		BytesPerRow:           te.bpr,
		AccessesSampled:       te.accesses,
		AccessesTotalEstimate: a.totalAccesses(te),
		LoggedRows:            te.logged,
		LoggerChunks:          te.N,
		Whole:                 te.whole,
		Exact:                 !te.chunked,
		UnseenMass:            te.unseenMass(),
	}
}

// finishTable fills a table's bytes and adds it to the totals.
func (a *analysis) finishTable(res *Result, tr *TableResult) {
	tr.HotBytes = tr.HotRows.scale(float64(tr.BytesPerRow))
	tr.HotBytesExactSample = tr.HotRowsExactSample * tr.BytesPerRow
	res.HotRows = res.HotRows.add(tr.HotRows)
	res.HotRowsExactSample += tr.HotRowsExactSample
	res.HotBytes = res.HotBytes.add(tr.HotBytes)
	res.HotBytesExactSample += tr.HotBytesExactSample
	res.Tables = append(res.Tables, *tr)
}
