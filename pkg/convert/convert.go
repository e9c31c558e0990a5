package convert

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// ID modes of Run.
const (
	// Hash hashes each categorical value into a table of fixed size.
	Hash = "hash"
	// Reindex numbers the values of each table in order of first appearance.
	Reindex = "reindex"
)

// DefaultRows is the number of rows of each hashed table when
// Options.Rows is empty.
const DefaultRows = 1 << 20

// DefaultFileRows is the number of rows per output file when
// Options.FileRows is 0.
const DefaultFileRows = 1 << 22

// Options configures Run.
type Options struct {
	// Format is "criteo" (Criteo Kaggle / Terabyte: TSV, or CSV with a
	// header line), "avazu" (CSV, with or without its header line) or
	// "csv" (any delimited log with a header line; Columns gives the roles).
	Format string
	// Columns gives the roles of a csv input's columns (Format "csv" only,
	// and required there).
	Columns *Columns
	// Inputs are the training text files, read in order; each may be plain
	// or gzip-compressed (recognised by its magic bytes, not its name).
	Inputs []string
	// TestInputs are optional test files, converted with the same mapping
	// into OutDir/test. Their values do not count towards Counts, nor (in
	// reindex mode) towards the vocabulary.
	TestInputs []string
	// OutDir receives train/part-NNNNN.parquet (and test/...). OutDir/train
	// and OutDir/test must not exist yet; they appear, complete, only when
	// Run succeeds.
	OutDir string
	// IDs is Hash (default) or Reindex.
	//
	// hash: table t has Rows[t] rows; row 0 holds missing values and value
	// v goes to row 1 + dataset.HashID(v, Rows[t]-1). One pass, memory bounded.
	//
	// reindex: a first pass over Inputs numbers each table's values in
	// order of first appearance; ID 0 is missing, ID 1 is shared by values
	// seen fewer than MinCount times (and by test values never seen in
	// training), kept values get 2, 3, ... The table has 2 + kept rows. Memory
	// grows with the number of distinct values (one map entry each).
	IDs string
	// Rows is the number of rows of each hashed table: empty means
	// DefaultRows for all, one number applies to all tables, or one
	// per table in the format's order. Each must be at least 2. Hash mode only.
	Rows []int64
	// MinCount (reindex only) is the number of occurrences a value needs to
	// get an ID of its own; 0 or 1 keeps every value.
	MinCount int
	// SkipBad skips lines with a wrong number of fields or a bad value and
	// counts them, instead of failing on the first one.
	SkipBad bool
	// RowGroupRows is the number of rows per Parquet row group (default 65536).
	RowGroupRows int
	// FileRows is the number of rows per output file (default DefaultFileRows).
	FileRows int64
	// Workers is the number of parsing goroutines (default GOMAXPROCS).
	Workers int
	// Progress, when set, is called from one goroutine after each block of
	// input with the input bytes processed so far (compressed bytes for gzip
	// files; a reindex conversion reads the training inputs twice) and the
	// total.
	Progress func(bytesDone, bytesTotal int64)
	// Overwrite replaces a dataset already in OutDir: its splits, and what
	// was made from it (dataset.yaml, ids.json, a profile, an FAE layout),
	// removed before the new splits go in. Without it, an existing split
	// is an error.
	Overwrite bool
	// Mapping, when set, fixes the IDs to those of an earlier conversion
	// (Format must match; IDs and Rows are ignored; reindex makes one pass).
	Mapping *Mapping

	// Split, when set, divides the rows of Inputs into the parts train,
	// valid and test (OutDir/train, OutDir/valid, OutDir/test) by their
	// fractions; see SplitBy for how. Parts not named get no directory.
	// A split with a test part excludes TestInputs.
	Split []SplitPart
	// SplitBy, when set with Split, names the format's time column (csv:
	// Columns.Time; avazu: "hour"; criteo has none): the earliest rows go
	// to train, the latest to test. It costs one more pass over Inputs.
	// Otherwise each row's part comes from a hash of its text and SplitSeed.
	SplitBy string
	// SplitSeed seeds the row hash that assigns parts (and orders rows of
	// equal time with SplitBy).
	SplitSeed uint64
	// blockBytes is the size of the blocks of lines handed to the parsers
	// (tests make it small).
	blockBytes int
}

// Result reports a conversion.
type Result struct {
	// Spec describes the output, with paths relative to OutDir: Train
	// "train", Test "test" when there were test inputs, Label "label", the
	// format's dense columns and one sparse feature per categorical column,
	// holding row indices (IDs "index") of a table of Rows rows.
	Spec dataset.Spec
	// Rows, ValidRows and TestRows are the rows written to each part;
	// Skipped and TestSkipped the bad lines skipped (SkipBad) in Inputs
	// and TestInputs.
	Rows, ValidRows, TestRows int64
	Skipped, TestSkipped      int64
	// FirstSkipped is the first bad line skipped (train, then test), or nil.
	FirstSkipped *LineError
	// Counts is the number of distinct values of each table in the training
	// inputs (missing values not counted), in Spec.Sparse order.
	// CountsExact[t] is false where Counts[t] is a HyperLogLog estimate
	// (hash mode, tables with more than 32768 distinct values; about 0.5%
	// error).
	Counts      []int64
	CountsExact []bool
	// Standardized gives, for each dense column standardized, the mean and
	// standard deviation of its training rows that were applied (or the
	// Mapping's).
	Standardized []DenseStats
	// Mapping is how values became IDs, to convert more text the same way.
	Mapping *Mapping
	// Seconds is the wall time; RowsPerSecond counts train and test rows.
	Seconds, RowsPerSecond float64
}

// format is one input format.
type format struct {
	name    string
	dense   []string
	sparse  []string // one-hot sparse columns, the first tables
	multi   []string // multi-hot sparse columns, the tables after sparse
	timeCol string   // the column SplitBy may name; "" when there is none
	// standardize are the dense columns (indices into dense) to standardize
	// with the training rows' mean and standard deviation.
	standardize []int
	detect      func(first []byte) (*layout, error)
	parse       func(line []byte, lay *layout, row *parsedRow) error
}

var formats = map[string]*format{
	"criteo": {name: "criteo", dense: criteoDense, sparse: criteoSparse, detect: detectCriteo, parse: parseLine},
	"avazu":  {name: "avazu", dense: avazuDense, sparse: avazuSparse, timeCol: "hour", detect: detectAvazu, parse: parseLine},
}

// formatOf is the format opts asks for, or nil.
func formatOf(opts *Options) *format {
	if opts.Format == "csv" {
		cols := opts.columns()
		if cols == nil || cols.Validate() != nil {
			return nil
		}
		return csvFormat(cols)
	}
	return formats[opts.Format]
}

// columns are the csv column roles: Columns, or else the Mapping's.
func (o *Options) columns() *Columns {
	if o.Columns == nil && o.Mapping != nil && o.Mapping.Format == "csv" {
		return o.Mapping.Columns
	}
	return o.Columns
}

// tables is the number of sparse tables: one-hot, then multi-hot.
func (f *format) tables() int { return len(f.sparse) + len(f.multi) }

// tableName is the column of table t.
func (f *format) tableName(t int) string {
	if t < len(f.sparse) {
		return f.sparse[t]
	}
	return f.multi[t-len(f.sparse)]
}

// Validate reports every problem of the options at once.
func (o *Options) Validate() error {
	var errs []error
	switch o.Format {
	case "criteo", "avazu":
		if o.Columns != nil {
			errs = append(errs, fmt.Errorf("convert: column roles apply to format csv only, not %s: %w", o.Format, ErrColumns))
		}
	case "csv":
		if cols := o.columns(); cols == nil {
			errs = append(errs, fmt.Errorf("convert: format csv needs column roles (a label and features): %w", ErrColumns))
		} else if err := cols.Validate(); err != nil {
			errs = append(errs, err)
		}
	default:
		errs = append(errs, fmt.Errorf("convert: format must be \"criteo\", \"avazu\" or \"csv\", got %q", o.Format))
	}
	f := formatOf(o)
	ok := f != nil
	if len(o.Split) > 0 {
		if err := checkSplit(o.Split); err != nil {
			errs = append(errs, fmt.Errorf("convert: split: %w", err))
		}
		for _, p := range o.Split {
			if p.Name == PartTest && len(o.TestInputs) > 0 {
				errs = append(errs, fmt.Errorf("convert: split has a test part and test inputs are given; drop one: %w", ErrSplit))
			}
		}
	}
	if o.SplitBy != "" {
		switch {
		case len(o.Split) == 0:
			errs = append(errs, fmt.Errorf("convert: split-by %s needs a split (train=...,test=...): %w", o.SplitBy, ErrSplit))
		case ok && f.timeCol == "":
			errs = append(errs, fmt.Errorf("convert: split-by %s: format %s has no time column (split by hash instead): %w", o.SplitBy, o.Format, ErrSplit))
		case ok && o.SplitBy != f.timeCol:
			errs = append(errs, fmt.Errorf("convert: split-by %s: not the time column of format %s (%s): %w", o.SplitBy, o.Format, f.timeCol, ErrSplit))
		}
	}
	if len(o.Inputs) == 0 {
		errs = append(errs, errors.New("convert: no input files"))
	}
	if o.OutDir == "" {
		errs = append(errs, errors.New("convert: no output directory"))
	}
	switch o.IDs {
	case "", Hash:
		if o.MinCount > 1 {
			errs = append(errs, fmt.Errorf("convert: min count %d applies to reindex mode only", o.MinCount))
		}
		if ok && len(o.Rows) > 1 && len(o.Rows) != f.tables() {
			errs = append(errs, fmt.Errorf("convert: %d table sizes given, want 1 or %d", len(o.Rows), f.tables()))
		}
		for i, r := range o.Rows {
			if r < 2 {
				errs = append(errs, fmt.Errorf("convert: rows[%d] = %d, want at least 2 (row 0 holds missing values)", i, r))
			}
		}
	case Reindex:
		if len(o.Rows) > 0 {
			errs = append(errs, errors.New("convert: table sizes apply to hash mode only; reindex sizes tables by their values"))
		}
		if o.MinCount < 0 {
			errs = append(errs, fmt.Errorf("convert: min count %d is negative", o.MinCount))
		}
	default:
		errs = append(errs, fmt.Errorf("convert: ids must be %q or %q, got %q", Hash, Reindex, o.IDs))
	}
	errs = append(errs, dataset.CheckOutputSizes("convert", o.RowGroupRows, o.FileRows, o.Workers)...)
	return errors.Join(errs...)
}

// Run turns Criteo or Avazu text files into picasso's Parquet layout
// (see Options for the ID modes and Result for what is
// returned). It streams: a reader cuts each input into blocks of whole
// lines, Workers goroutines parse blocks in parallel, and one goroutine
// writes them in input order, so the output does not depend on Workers.
// Memory is bounded by the blocks in flight, except for reindex mode's
// vocabularies. On error or cancellation the partial output is removed:
// OutDir/train and OutDir/test appear only when the whole conversion succeeds.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	c := &converter{opts: opts, f: formatOf(&opts)}
	if c.opts.IDs == "" {
		c.opts.IDs = Hash
	}
	if c.opts.MinCount < 1 {
		c.opts.MinCount = 1
	}
	if c.opts.FileRows == 0 {
		c.opts.FileRows = DefaultFileRows
	}
	if c.opts.Workers == 0 {
		c.opts.Workers = runtime.GOMAXPROCS(0)
	}
	if c.opts.blockBytes <= 0 {
		c.opts.blockBytes = 1 << 20
	}
	if len(opts.Split) > 0 {
		c.split = newSplitter(opts.Split, opts.SplitSeed, opts.SplitBy != "")
	}
	nt := c.f.tables()
	if c.opts.IDs == Hash {
		c.rows = make([]int64, nt)
		for t := range c.rows {
			switch len(c.opts.Rows) {
			case 0:
				c.rows[t] = DefaultRows
			case 1:
				c.rows[t] = c.opts.Rows[0]
			default:
				c.rows[t] = c.opts.Rows[t]
			}
		}
	}

	if opts.Mapping != nil {
		c.opts.IDs = opts.Mapping.IDs
		if err := c.useMapping(opts.Mapping); err != nil {
			return nil, err
		}
	}

	// Sizes for progress, and an early error for a missing input.
	trainBytes, err := totalSize(opts.Inputs)
	if err != nil {
		return nil, err
	}
	testBytes, err := totalSize(opts.TestInputs)
	if err != nil {
		return nil, err
	}
	// A reindex conversion without a mapping numbers the values, and
	// standardized columns need statistics (unless the mapping has them),
	// in one pass before the one that writes.
	needVocab := c.opts.IDs == Reindex && c.vocabs == nil
	needStats := len(c.f.standardize) > 0 && c.norm == nil
	c.total = trainBytes + testBytes
	if needVocab || needStats {
		c.total += trainBytes
	}
	if opts.SplitBy != "" {
		c.total += trainBytes
	}

	// Each output directory is written in a stage beside it and moved into
	// place at the end.
	var has [3]bool
	has[partTrain] = true
	if c.split != nil {
		has[partValid], has[partTest] = c.split.has(partValid), c.split.has(partTest)
	}
	if len(opts.TestInputs) > 0 {
		has[partTest] = true
	}
	for i, name := range partNames {
		if p := filepath.Join(opts.OutDir, name); has[i] && !opts.Overwrite {
			if _, err := os.Stat(p); err == nil {
				return nil, fmt.Errorf("convert: %s already exists; remove it, choose another output directory, or pass --force to replace it", p)
			}
		}
	}
	var stages [3]*atomicfile.Stage
	for i, name := range partNames {
		if !has[i] {
			continue
		}
		st, err := atomicfile.StageDir(filepath.Join(opts.OutDir, name))
		if err != nil {
			return nil, fmt.Errorf("convert: %w", err)
		}
		defer st.Abort() // does nothing once committed
		stages[i] = st
	}
	res := &Result{Spec: c.spec(has)}

	if c.vocabs != nil { // fixed by the mapping
		res.Counts = make([]int64, nt)
		res.CountsExact = make([]bool, nt)
		for t, v := range c.vocabs {
			res.Counts[t], res.CountsExact[t] = v.rows-reindexFirst, true
			res.Spec.Sparse[t].Rows = v.rows
		}
	}
	if opts.SplitBy != "" {
		if _, err := c.runPass(ctx, opts.Inputs, passTime, nil); err != nil {
			return nil, err
		}
		c.split.finishTimes(c.times)
		c.times = nil
		c.skipped = 0 // the next pass meets the same bad lines and counts them
	}
	if needVocab || needStats {
		if needVocab {
			c.collectVocab = true
			c.vocabs = make([]*vocab, nt)
			for t := range c.vocabs {
				c.vocabs[t] = newVocab()
			}
		}
		c.stats = make([]welford, len(c.f.standardize))
		if _, err := c.runPass(ctx, opts.Inputs, passVocab, nil); err != nil {
			return nil, err
		}
		if needStats {
			for k, d := range c.f.standardize {
				c.norm = append(c.norm, DenseStats{Name: c.f.dense[d], Mean: c.stats[k].mean, Std: c.stats[k].std()})
			}
		}
		c.collectVocab = false
		c.skipped = 0
	}
	if needVocab {
		res.Counts = make([]int64, nt)
		res.CountsExact = make([]bool, nt)
		for t, v := range c.vocabs {
			res.Counts[t], res.CountsExact[t] = v.distinctValues(), true
			v.finish(c.opts.MinCount)
			res.Spec.Sparse[t].Rows = v.rows
		}
	}
	res.Standardized = c.norm

	var ws [3]*partWriter
	abort := func() {
		for _, w := range ws {
			if w != nil {
				w.abort()
			}
		}
	}
	for i, st := range stages {
		if st != nil {
			ws[i] = c.newPartWriter(st.Dir(), &res.Spec)
		}
	}
	counters, err := c.runPass(ctx, opts.Inputs, passWrite, ws[:])
	if err != nil {
		abort()
		return nil, err
	}
	res.Skipped, res.FirstSkipped = c.skipped, c.firstSkip
	if len(opts.TestInputs) > 0 {
		c.skipped = 0
		if _, err := c.runPass(ctx, opts.TestInputs, passTest, ws[:]); err != nil {
			abort()
			return nil, err
		}
		res.TestSkipped = c.skipped
		if res.FirstSkipped == nil {
			res.FirstSkipped = c.firstSkip
		}
	}
	for i, w := range ws {
		if w == nil {
			continue
		}
		if err := w.close(); err != nil {
			abort()
			return nil, err
		}
		if w.rows == 0 {
			abort()
			in := opts.Inputs
			if i == partTest && len(opts.TestInputs) > 0 {
				in = opts.TestInputs
			}
			return nil, fmt.Errorf("convert: no %s rows from %v: %w", partNames[i], in, dataset.ErrNoData)
		}
	}
	res.Rows, res.TestRows = ws[partTrain].rows, 0
	if w := ws[partValid]; w != nil {
		res.ValidRows = w.rows
	}
	if w := ws[partTest]; w != nil {
		res.TestRows = w.rows
	}
	if c.opts.IDs == Hash {
		res.Counts = make([]int64, nt)
		res.CountsExact = make([]bool, nt)
		for t := range nt {
			d := counters[0][t]
			for _, o := range counters[1:] {
				d.merge(o[t])
			}
			res.Counts[t], res.CountsExact[t] = d.count()
		}
	}
	if err := res.Spec.Validate(); err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	if opts.Overwrite {
		// What was made from the old data goes first (dataset.yaml with it,
		// which the caller writes last): a kill while the splits are
		// swapped then leaves no data config pairing new splits with old.
		// An old split this run does not write goes too.
		stale := []string{MappingFile}
		for i, name := range partNames {
			if !has[i] {
				stale = append(stale, name)
			}
		}
		if err := dataset.RemoveDerived(opts.OutDir, stale...); err != nil {
			return nil, fmt.Errorf("convert: %w", err)
		}
	}
	for _, st := range stages {
		if st == nil {
			continue
		}
		commit := st.Commit
		if opts.Overwrite {
			commit = st.Replace
		}
		if err := commit(); err != nil {
			return nil, fmt.Errorf("convert: %w", err)
		}
	}
	res.Mapping = c.mapping()
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.RowsPerSecond = float64(res.Rows+res.ValidRows+res.TestRows) / res.Seconds
	}
	return res, nil
}

// spec is the output's Spec for the parts present; reindex tables get their
// rows after the first pass.
func (c *converter) spec(has [3]bool) dataset.Spec {
	s := dataset.Spec{Train: PartTrain, Label: "label", Dense: append([]string(nil), c.f.dense...)}
	if has[partValid] {
		s.Valid = PartValid
	}
	if has[partTest] {
		s.Test = PartTest
	}
	for t := range c.f.tables() {
		f := dataset.SparseFeature{Name: c.f.tableName(t), IDs: dataset.IDIndex, MultiHot: t >= len(c.f.sparse)}
		if c.rows != nil {
			f.Rows = c.rows[t]
		}
		s.Sparse = append(s.Sparse, f)
	}
	return s
}

func totalSize(paths []string) (int64, error) {
	var n int64
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return 0, fmt.Errorf("convert: %w", err)
		}
		if st.IsDir() {
			return 0, fmt.Errorf("convert: %s is a directory, want a text file", p)
		}
		n += st.Size()
	}
	return n, nil
}

// converter holds the state of one Run call.
type converter struct {
	opts   Options
	f      *format
	rows   []int64      // hash mode: rows per table
	vocabs []*vocab     // reindex mode
	split  *splitter    // nil: every row of Inputs goes to train
	times  []int64      // passTime: the time of every row
	stats  []welford    // passVocab: statistics of the standardized columns
	norm   []DenseStats // the mean and std each standardized column is scaled with
	// collectVocab: the passVocab pass numbers values (reindex without a mapping).
	collectVocab bool

	done, total int64      // progress, in input bytes
	skipped     int64      // bad lines skipped in the current pass
	firstSkip   *LineError // the first bad line skipped
}

// passKind says what a pass over the inputs does with the parsed lines.
type passKind int

const (
	passTime  passKind = iota // SplitBy first pass: collect the rows' times
	passVocab                 // reindex, standardize: collect the train rows' values per table, and dense statistics
	passWrite                 // map values to rows, write each row to its part, count distinct train values (hash)
	passTest                  // TestInputs: map values to rows, write to test
)

// job is a block of whole lines of one file on its way through a pass.
type job struct {
	file      string
	lay       *layout
	data      []byte
	firstLine int64 // line number of data's first line
	offset    int64 // input bytes read (all files of the pass) when the block was cut
	done      chan struct{}

	err       error
	skipped   int64
	firstSkip *LineError       // the block's first skipped line
	batches   [3]dataset.Batch // passWrite, passTest: the rows of each part
	vals      [][]uint64       // passVocab: present values of each table, in line order
	times     []int64          // passTime: each row's time
	stats     []welford        // passVocab: the block's statistics of the standardized columns
}

// worker is one parsing goroutine's scratch space.
type worker struct {
	row  *parsedRow
	dist []*distinct // passWrite in hash mode
}

// runPass reads files in order, parses their blocks on Workers goroutines
// and consumes the results in input order: into the vocabularies
// (passVocab) or w. It returns the workers' distinct counters.
func (c *converter) runPass(ctx context.Context, files []string, kind passKind, ws []*partWriter) ([][]*distinct, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nw := c.opts.Workers
	inFlight := 2*nw + 2
	free := make(chan *job, inFlight)
	for range inFlight {
		free <- &job{done: make(chan struct{}, 1)}
	}
	work := make(chan *job, inFlight)
	order := make(chan *job, inFlight)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(work)
		c.read(ctx, files, free, work, order)
	}()
	workers := make([]*worker, nw)
	counters := make([][]*distinct, 0, nw)
	for i := range workers {
		wk := &worker{row: newParsedRow(len(c.f.dense), len(c.f.sparse))}
		wk.row.Multi = make([][]uint64, len(c.f.multi))
		wk.row.Raw = make([]float64, len(c.f.standardize))
		if kind == passWrite && c.vocabs == nil {
			wk.dist = make([]*distinct, c.f.tables())
			for t := range wk.dist {
				wk.dist[t] = newDistinct()
			}
			counters = append(counters, wk.dist)
		}
		workers[i] = wk
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				if ctx.Err() != nil {
					j.err = ctx.Err()
				} else {
					c.parseBlock(j, wk, kind)
				}
				j.done <- struct{}{}
			}
		}()
	}

	var err error
	base := c.done
	for j := range order {
		<-j.done
		if err == nil {
			err = ctx.Err()
		}
		if err == nil && j.err != nil {
			err = j.err
		}
		if err == nil {
			err = c.consume(j, kind, ws)
		}
		if err != nil {
			cancel()
		} else if c.opts.Progress != nil {
			c.opts.Progress(base+j.offset, c.total)
		}
		j.err, j.skipped, j.firstSkip = nil, 0, nil
		free <- j
	}
	wg.Wait()
	if err == nil {
		// The reader stops without a word when ctx is done: a
		// cancellation that came after the last block consumed would
		// otherwise pass for the end of the input, and a part of it be
		// kept as the whole.
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	for _, p := range files {
		if st, err := os.Stat(p); err == nil {
			base += st.Size()
		}
	}
	c.done = base
	return counters, nil
}

// consume takes one parsed block, in input order.
func (c *converter) consume(j *job, kind passKind, ws []*partWriter) error {
	c.skipped += j.skipped
	if c.firstSkip == nil {
		c.firstSkip = j.firstSkip
	}
	switch kind {
	case passTime:
		c.times = append(c.times, j.times...)
		return nil
	case passVocab:
		for k := range c.stats {
			c.stats[k].merge(&j.stats[k])
		}
		if !c.collectVocab {
			return nil // standardize statistics only
		}
		for t, vals := range j.vals {
			v := c.vocabs[t]
			for _, x := range vals {
				if err := v.add(x); err != nil {
					return fmt.Errorf("convert: table %s: %w", c.f.tableName(t), err)
				}
			}
		}
		return nil
	}
	for i := range j.batches {
		if b := &j.batches[i]; b.N > 0 {
			if err := ws[i].write(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// resetBatch empties b for rows of nd dense values and ns one-hot and nm
// multi-hot sparse columns.
func resetBatch(b *dataset.Batch, ns, nm int) {
	b.N = 0
	b.Label, b.Dense = b.Label[:0], b.Dense[:0]
	if len(b.Sparse) != ns+nm {
		b.Sparse = make([]dataset.SparseColumn, ns+nm)
	}
	for t := range b.Sparse {
		sc := &b.Sparse[t]
		sc.IDs = sc.IDs[:0]
		if t >= ns {
			sc.Offsets = append(sc.Offsets[:0], 0)
		}
	}
}

// parseBlock parses the lines of j into j.batches (or j.vals, j.times).
func (c *converter) parseBlock(j *job, wk *worker, kind passKind) {
	nd, ns, nt := len(c.f.dense), len(c.f.sparse), c.f.tables()
	for i := range j.batches {
		resetBatch(&j.batches[i], ns, nt-ns)
	}
	if len(j.vals) != nt {
		j.vals = make([][]uint64, nt)
	}
	for t := range j.vals {
		j.vals[t] = j.vals[t][:0]
	}
	j.times = j.times[:0]
	if len(j.stats) != len(c.f.standardize) {
		j.stats = make([]welford, len(c.f.standardize))
	}
	for k := range j.stats {
		j.stats[k] = welford{}
	}
	row := wk.row
	data := j.data
	for ln := j.firstLine; len(data) > 0; ln++ {
		var line []byte
		if i := indexByte(data, '\n'); i < len(data) {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if err := c.f.parse(line, j.lay, row); err != nil {
			if c.opts.SkipBad && j.skipped > 0 {
				j.skipped++
				continue
			}
			fe := err.(*fieldError)
			le := &LineError{File: j.file, Line: ln, Field: fe.Field, Name: fe.Name, Msg: fe.Msg}
			if c.opts.SkipBad {
				j.skipped, j.firstSkip = 1, le
				continue
			}
			j.err = le
			return
		}
		if kind == passTime {
			j.times = append(j.times, row.Time)
			continue
		}
		part := partTrain
		switch {
		case kind == passTest:
			part = partTest
		case c.split != nil:
			part = c.split.part(line, row.Time)
		}
		if kind == passVocab {
			if part != partTrain {
				continue // only training rows make the vocabulary and statistics
			}
			for k := range c.f.standardize {
				j.stats[k].add(row.Raw[k])
			}
			if !c.collectVocab {
				continue
			}
			for t, x := range row.Cat {
				if !row.Missing[t] {
					j.vals[t] = append(j.vals[t], x)
				}
			}
			for m, xs := range row.Multi {
				j.vals[ns+m] = append(j.vals[ns+m], xs...)
			}
			continue
		}
		for k, d := range c.f.standardize {
			row.Dense[d] = float32((row.Raw[k] - c.norm[k].Mean) / c.norm[k].Std)
		}
		b := &j.batches[part]
		dist := wk.dist
		if part != partTrain {
			dist = nil // distinct values are counted on training rows
		}
		b.N++
		b.Label = append(b.Label, row.Label)
		b.Dense = append(b.Dense, row.Dense[:nd]...)
		for t, x := range row.Cat {
			var id int64
			switch {
			case row.Missing[t]:
				id = 0 // reindexMissing, and the hashed tables' reserved row
			default:
				id = c.rowOf(t, x, dist)
			}
			b.Sparse[t].IDs = append(b.Sparse[t].IDs, id)
		}
		for m, xs := range row.Multi {
			sc := &b.Sparse[ns+m]
			for _, x := range xs {
				sc.IDs = append(sc.IDs, c.rowOf(ns+m, x, dist))
			}
			sc.Offsets = append(sc.Offsets, int32(len(sc.IDs)))
		}
	}
}

// rowOf maps a present value of table t to its row, counting it in dist
// (hash mode) when dist is not nil.
func (c *converter) rowOf(t int, x uint64, dist []*distinct) int64 {
	if c.vocabs != nil {
		return c.vocabs[t].lookup(x)
	}
	id, z := hashRow(x, c.rows[t])
	if dist != nil {
		dist[t].add(z)
	}
	return id
}

// partWriter writes rows into dir/part-NNNNN.parquet, FileRows rows per file.
type partWriter struct {
	dir    string
	spec   *dataset.Spec
	opts   dataset.WriterOptions
	max    int64
	w      *dataset.Writer
	part   int
	inFile int64
	rows   int64
}

func (c *converter) newPartWriter(dir string, spec *dataset.Spec) *partWriter {
	return &partWriter{dir: dir, spec: spec, max: c.opts.FileRows, opts: dataset.WriterOptions{
		RowGroupRows: c.opts.RowGroupRows,
		IDs:          dataset.NarrowIDs(spec),
		Metadata:     c.metadata(),
	}}
}

// metadata is written into every output file: how it was converted,
// including the split and its seed.
func (c *converter) metadata() map[string]string {
	m := map[string]string{
		"picasso.convert.format": c.f.name,
		"picasso.convert.ids":    c.opts.IDs,
	}
	if len(c.opts.Split) > 0 {
		var parts []string
		for _, p := range c.opts.Split {
			parts = append(parts, fmt.Sprintf("%s=%g", p.Name, p.Fraction))
		}
		m["picasso.convert.split"] = strings.Join(parts, ",")
		m["picasso.convert.split_seed"] = strconv.FormatUint(c.opts.SplitSeed, 10)
		if c.opts.SplitBy != "" {
			m["picasso.convert.split_by"] = c.opts.SplitBy
		}
	}
	if len(c.f.standardize) > 0 {
		var s []string
		for _, st := range c.norm {
			s = append(s, fmt.Sprintf("%s: mean %g std %g", st.Name, st.Mean, st.Std))
		}
		m["picasso.convert.standardize"] = strings.Join(s, "; ")
	}
	return m
}

func (p *partWriter) write(b *dataset.Batch) error {
	for lo := 0; lo < b.N; {
		if p.w == nil {
			w, err := dataset.NewWriter(filepath.Join(p.dir, fmt.Sprintf("part-%05d.parquet", p.part)), p.spec, p.opts)
			if err != nil {
				return err
			}
			p.w, p.inFile = w, 0
		}
		n := int(min(int64(b.N-lo), p.max-p.inFile))
		if err := p.w.Write(b, lo, lo+n); err != nil {
			return err
		}
		lo += n
		p.inFile += int64(n)
		p.rows += int64(n)
		if p.inFile == p.max {
			if err := p.closeFile(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *partWriter) closeFile() error {
	err := p.w.Close()
	p.w = nil
	p.part++
	return err
}

func (p *partWriter) close() error {
	if p.w == nil {
		return nil
	}
	return p.closeFile()
}

func (p *partWriter) abort() {
	if p.w != nil {
		p.w.Abort()
		p.w = nil
	}
}
