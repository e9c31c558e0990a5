package gen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/metrics"
)

// ErrOutputExists marks a Run whose output directories already hold
// files and that was not asked to overwrite them.
var ErrOutputExists = errors.New("output exists")

// Options configures Run. Zero values take the defaults noted.
type Options struct {
	// Preset names the data's shape: "demo", "kaggle", "terabyte" or "avazu"
	// (see Presets).
	Preset string
	// Scale multiplies every table's row count (default 1); see
	// Preset.TableRows for how small tables are kept.
	Scale float64
	// Rows is the number of rows, train and test together (default: the
	// preset's DefaultRows). At least 2.
	Rows int64
	// Seed fixes every random choice: the same options give byte-identical
	// files, whatever Workers is.
	Seed uint64
	// OutDir receives train/part-NNNNN.parquet and test/part-NNNNN.parquet.
	OutDir string
	// Overwrite replaces OutDir/train and OutDir/test when they exist,
	// removes what was derived from the old data there
	// (dataset.DerivedFiles) and temporary directories of killed runs;
	// otherwise existing files there are an error (ErrOutputExists).
	Overwrite bool
	// TestFraction is the share of rows, the last ones, written to test/
	// (default 0.1; in (0, 1)). At least one row goes to each split.
	TestFraction float64
	// RowGroupRows is the number of rows per Parquet row group (default 65536).
	RowGroupRows int
	// FileRows is the number of rows per Parquet file (default 1<<20).
	FileRows int64
	// Workers is the number of goroutines drawing rows (default: one per
	// core); one more writes the files.
	Workers int
	// Progress, when set, is called from the writing goroutine after each
	// block of rows with the rows written so far and the total.
	Progress func(done, total int64) `json:"-"`
}

// Result reports what Run wrote.
type Result struct {
	// Spec describes the data: Train "train" and Test "test" relative to
	// OutDir, label "label", the preset's dense and sparse columns (sparse IDs
	// are row indices, Rows the scaled table sizes) and p_true.
	Spec dataset.Spec
	// Options are the options with defaults filled in.
	Options Options
	// Exponents are the tables' Zipf exponents, in Spec.Sparse order.
	Exponents             []float64
	TrainRows, TestRows   int64
	TrainFiles, TestFiles int
	// CTR is the mean label and MeanPTrue the mean true click probability,
	// over all rows.
	CTR, MeanPTrue float64
	// OracleAUC is the exact AUC of p_true against the labels of the test
	// split: the best AUC any model can expect. Test splits of more than
	// OracleRows rows are scored on a seeded uniform sample of about
	// OracleRows of them. NaN when the test labels are all one class.
	OracleAUC float64
	// Bias is the planted logit's calibrated intercept: the logit of a row
	// whose dense features sit at their means and whose rows have no effect.
	Bias float64
	// Seconds is the wall time and RowsPerSecond the rows written per second.
	Seconds, RowsPerSecond float64
}

// OracleRows bounds the test rows held in memory to compute OracleAUC.
const OracleRows = 1 << 24

// Validate reports every problem of the options at once.
func (o *Options) Validate() error {
	var errs []error
	if _, ok := presetDefs()[o.Preset]; !ok {
		errs = append(errs, fmt.Errorf("gen: unknown preset %q (have %v)", o.Preset, Presets()))
	}
	if o.Scale < 0 || math.IsNaN(o.Scale) || math.IsInf(o.Scale, 0) {
		errs = append(errs, fmt.Errorf("gen: scale must be a positive number (or 0 for 1), got %v", o.Scale))
	}
	if o.Rows < 0 || o.Rows == 1 {
		errs = append(errs, fmt.Errorf("gen: rows must be at least 2 (or 0 for the preset's default), got %d", o.Rows))
	}
	if o.OutDir == "" {
		errs = append(errs, errors.New("gen: no output directory"))
	}
	if o.TestFraction < 0 || o.TestFraction >= 1 || math.IsNaN(o.TestFraction) {
		errs = append(errs, fmt.Errorf("gen: test fraction must be in (0, 1) (or 0 for 0.1), got %v", o.TestFraction))
	}
	errs = append(errs, dataset.CheckOutputSizes("gen", o.RowGroupRows, o.FileRows, o.Workers)...)
	return errors.Join(errs...)
}

// withDefaults returns o with zero values replaced by their defaults.
func (o Options) withDefaults() Options {
	if o.Scale == 0 {
		o.Scale = 1
	}
	if o.Rows == 0 {
		if d, ok := presetDefs()[o.Preset]; ok {
			o.Rows = d.DefaultRows
		}
	}
	if o.TestFraction == 0 {
		o.TestFraction = 0.1
	}
	if o.RowGroupRows == 0 {
		o.RowGroupRows = 65536
	}
	if o.FileRows == 0 {
		o.FileRows = 1 << 20
	}
	if o.Workers == 0 {
		o.Workers = runtime.NumCPU()
	}
	return o
}

// Run writes a synthetic click log shaped like opts.Preset (see
// DESIGN.md, "Synthetic data"): per-table Zipf popularity with the preset's
// exponents, popular rows spread over each table by a seeded permutation,
// Criteo-like dense counts, and labels drawn from a planted model whose true
// probability is written as p_true.
//
// The planted logit is a bias, a linear and a nonlinear term in the
// standardised dense features, one effect per table row, rank-4 dot products
// between the rows of chosen table pairs, and rank-4 products of rows with a
// projection of the dense features; parameters of a row are hashed from the
// seed, its table and its popularity rank, and shrink for unpopular rows. A
// pre-pass on 65,536 rows scales each term to its share of the preset's logit
// variance and bisects the bias to the target click rate.
//
// Rows are drawn in fixed chunks, each from a random stream of its own, by
// opts.Workers goroutines; one writer writes them in order, so the files do
// not depend on Workers (nor does a row's content depend on FileRows,
// RowGroupRows or TestFraction). Same options on the same platform give the
// same bytes; another GOARCH may round floating point differently. Each split
// is written in a hidden directory beside its final one (atomicfile.StageDir)
// and moved into place at the end; on error or cancellation nothing is left
// behind and ctx.Err() is returned.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	o := opts.withDefaults()
	def := presetDefs()[o.Preset]
	rows := def.TableRows(o.Scale)

	spec := dataset.Spec{Train: "train", Test: "test", Label: "label", Dense: def.Dense, PTrue: "p_true", Shuffled: true}
	for t, name := range def.Sparse {
		spec.Sparse = append(spec.Sparse, dataset.SparseFeature{Name: name, Rows: rows[t], IDs: dataset.IDIndex})
	}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("gen: %w", err)
	}
	testRows := min(max(int64(math.Round(float64(o.Rows)*o.TestFraction)), 1), o.Rows-1)
	trainRows := o.Rows - testRows

	if err := prepareOutDir(o.OutDir, o.Overwrite); err != nil {
		return nil, err
	}
	var stages [2]*atomicfile.Stage // train, test
	for i, split := range splits {
		st, err := atomicfile.StageDir(filepath.Join(o.OutDir, split))
		if err != nil {
			return nil, fmt.Errorf("gen: %w", err)
		}
		defer st.Abort() // does nothing once committed
		stages[i] = st
	}

	model := newPlantedModel(def, rows, o.Seed)
	model.calibrate(def, func(n int, f func(int)) { parallel(o.Workers, n, f) })

	meta, _ := json.Marshal(map[string]any{"preset": o.Preset, "scale": o.Scale, "rows": o.Rows, "seed": o.Seed,
		"test_fraction": o.TestFraction})
	g := &writer{
		spec: &spec, dirs: [2]string{stages[0].Dir(), stages[1].Dir()},
		trainRows: trainRows, total: o.Rows, fileRows: o.FileRows,
		wopts:     dataset.WriterOptions{RowGroupRows: o.RowGroupRows, IDs: dataset.NarrowIDs(&spec), WithPTrue: true, Metadata: map[string]string{"picasso.gen": string(meta)}},
		progress:  o.Progress,
		oracleKey: hash3(o.Seed, saltOracle, 0),
	}
	if testRows > OracleRows {
		g.oracleCut = uint64(float64(OracleRows) / float64(testRows) * math.MaxUint64)
	}
	if err := g.run(ctx, model, o.Workers); err != nil {
		g.abort()
		return nil, err
	}
	if o.Overwrite {
		// Derived outputs go first: a crash between here and the swap
		// leaves the old data without them, never new data beside them.
		if err := dataset.RemoveDerived(o.OutDir); err != nil {
			return nil, fmt.Errorf("gen: %w", err)
		}
	}
	for _, st := range stages {
		// Existing directories are empty or may be overwritten (prepareOutDir).
		if err := st.Replace(); err != nil {
			return nil, fmt.Errorf("gen: %w", err)
		}
	}
	secs := time.Since(start).Seconds()
	res := &Result{
		Spec: spec, Options: o, Exponents: def.Exponents,
		TrainRows: trainRows, TestRows: testRows, TrainFiles: g.files[0], TestFiles: g.files[1],
		CTR: g.labelSum / float64(o.Rows), MeanPTrue: g.pSum / float64(o.Rows),
		OracleAUC: metrics.AUC(g.oracleP, g.oracleY),
		Bias:      model.bias,
		Seconds:   secs, RowsPerSecond: float64(o.Rows) / secs,
	}
	res.Options.Progress = nil
	return res, nil
}

// splits are the output's directories inside OutDir, in row order.
var splits = [2]string{"train", "test"}

// prepareOutDir creates dir and checks that its train and test directories
// are absent or empty, or may be replaced.
func prepareOutDir(dir string, overwrite bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	if overwrite {
		return removeLeftovers(dir)
	}
	for _, split := range splits {
		p := filepath.Join(dir, split)
		ents, err := os.ReadDir(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("gen: %w", err)
		}
		if len(ents) > 0 {
			return fmt.Errorf("gen: %s holds %d entries; remove it or overwrite: %w", p, len(ents), ErrOutputExists)
		}
	}
	return nil
}

// removeLeftovers removes the temporary directories that a killed run left
// in dir: staged splits (".train.tmp-*", ".test.tmp-*", with their ".old"
// twins) and older ".gen-*" staging directories.
func removeLeftovers(dir string) error {
	for _, pat := range []string{".train.tmp-*", ".test.tmp-*", ".gen-*"} {
		names, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return fmt.Errorf("gen: %w", err)
		}
		for _, n := range names {
			if err := os.RemoveAll(n); err != nil {
				return fmt.Errorf("gen: remove leftover %s: %w", n, err)
			}
		}
	}
	return nil
}

// parallel runs f(0..n-1) on up to workers goroutines.
func parallel(workers, n int, f func(int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// writer writes the drawn chunks, in order, to the train and test files
// of the staging directory, and keeps the running statistics.
type writer struct {
	spec             *dataset.Spec
	dirs             [2]string // train, test
	trainRows, total int64
	fileRows         int64
	wopts            dataset.WriterOptions
	progress         func(done, total int64)

	w              *dataset.Writer
	wEnd           int64 // first row after the open file
	files          [2]int
	pos            int64 // rows written
	labelSum, pSum float64

	oracleKey, oracleCut uint64 // cut 0: keep every test row
	oracleP, oracleY     []float32
}

type job struct {
	k   int64
	n   int
	out chan *dataset.Batch
}

// run draws the chunks on workers goroutines and writes them in order.
func (g *writer) run(ctx context.Context, m *plantedModel, workers int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nd, nt := len(m.dense), len(m.tables)
	chunks := (g.total + chunkRows - 1) / chunkRows
	jobs := make(chan job)
	order := make(chan job, 2*workers)
	free := make(chan *dataset.Batch, 3*workers+1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // producer: hands out chunks, and queues them in order for the writer
		defer wg.Done()
		defer close(jobs)
		defer close(order)
		for k := int64(0); k < chunks; k++ {
			j := job{k: k, n: int(min(chunkRows, g.total-k*chunkRows)), out: make(chan *dataset.Batch, 1)}
			select {
			case order <- j:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := m.newScratch()
			for j := range jobs {
				var b *dataset.Batch
				select {
				case b = <-free:
				default:
					b = newBatch(nd, nt, chunkRows)
				}
				m.fillChunk(j.k, j.n, b, sc)
				j.out <- b
			}
		}()
	}
	err := g.consume(ctx, order, free)
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}
	return g.closeFile()
}

func (g *writer) consume(ctx context.Context, order <-chan job, free chan<- *dataset.Batch) error {
	for j := range order {
		var b *dataset.Batch
		select {
		case b = <-j.out:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := g.write(b); err != nil {
			return err
		}
		select {
		case free <- b:
		default:
		}
		if g.progress != nil {
			g.progress(g.pos, g.total)
		}
	}
	return ctx.Err()
}

// write appends a chunk, switching files at file and split boundaries.
func (g *writer) write(b *dataset.Batch) error {
	for i := 0; i < b.N; i++ {
		g.labelSum += float64(b.Label[i])
		g.pSum += float64(b.PTrue[i])
		row := g.pos + int64(i)
		if row >= g.trainRows && (g.oracleCut == 0 || mix64(g.oracleKey^uint64(row)) < g.oracleCut) {
			g.oracleP = append(g.oracleP, b.PTrue[i])
			g.oracleY = append(g.oracleY, b.Label[i])
		}
	}
	for lo := 0; lo < b.N; {
		if g.w == nil || g.pos == g.wEnd {
			if err := g.openNext(); err != nil {
				return err
			}
		}
		n := int(min(int64(b.N-lo), g.wEnd-g.pos))
		if err := g.w.Write(b, lo, lo+n); err != nil {
			return err
		}
		lo += n
		g.pos += int64(n)
	}
	return nil
}

func (g *writer) openNext() error {
	if err := g.closeFile(); err != nil {
		return err
	}
	split, end := 0, g.trainRows
	if g.pos >= g.trainRows {
		split, end = 1, g.total
	}
	name := filepath.Join(g.dirs[split], fmt.Sprintf("part-%05d.parquet", g.files[split]))
	w, err := dataset.NewWriter(name, g.spec, g.wopts)
	if err != nil {
		return err
	}
	g.files[split]++
	g.w = w
	g.wEnd = min(g.pos+g.fileRows, end)
	return nil
}

func (g *writer) closeFile() error {
	if g.w == nil {
		return nil
	}
	w := g.w
	g.w = nil
	return w.Close()
}

func (g *writer) abort() {
	if g.w != nil {
		g.w.Abort()
		g.w = nil
	}
}
