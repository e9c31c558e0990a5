package score

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/metrics"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// ErrInvalidOptions reports Options that cannot run.
var ErrInvalidOptions = errors.New("score: invalid options")

// DefaultBins is the number of calibration bins when Options.Bins is 0.
const DefaultBins = 10

// Options configures Run.
type Options struct {
	// Predictor scores the rows (the caller owns and closes it).
	Predictor *train.Predictor
	// Data is the dataset to score, read in order.
	Data *dataset.Dataset
	// Out, when set, is the Parquet file written with one row per input
	// row, in input order: row (the 0-based position in Data), label,
	// score (the predicted click probability) and, when Data has it,
	// p_true. It appears complete or not at all.
	Out string
	// RowGroupRows is the number of rows per row group of Out (default 65536).
	RowGroupRows int
	// Bins is the number of calibration bins (default DefaultBins).
	Bins int
	// Progress, when set, is called after each batch with the rows scored.
	Progress func(rows int64)
}

// Validate reports every problem of the options at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Predictor == nil {
		errs = append(errs, fmt.Errorf("score: no predictor: %w", ErrInvalidOptions))
	}
	if o.Data == nil {
		errs = append(errs, fmt.Errorf("score: no data: %w", ErrInvalidOptions))
	}
	if o.RowGroupRows < 0 || o.Bins < 0 {
		errs = append(errs, fmt.Errorf("score: row group rows %d and bins %d must be >= 0: %w", o.RowGroupRows, o.Bins, ErrInvalidOptions))
	}
	return errors.Join(errs...)
}

// Result is the evaluation of the scores against the labels.
type Result struct {
	Rows      int64 `json:"rows"`
	Positives int64 `json:"positives"`
	// AUC, LogLoss and Accuracy are those of metrics.Evaluate.
	AUC      float64 `json:"auc"`
	LogLoss  float64 `json:"logloss"`
	Accuracy float64 `json:"accuracy"`
	// OracleAUC is the AUC of the data's p_true column (generated data),
	// NaN without one.
	OracleAUC   float64             `json:"oracle_auc"`
	Calibration metrics.Calibration `json:"calibration"`
	// Out is the Parquet file written, if any.
	Out string `json:"out,omitempty"`
}

// Run scores every row of o.Data, writes o.Out when set and evaluates the
// scores. The scores of all rows are kept in memory (8 bytes a row) for
// the AUC.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Bins == 0 {
		o.Bins = DefaultBins
	}
	if o.RowGroupRows == 0 {
		o.RowGroupRows = 65536
	}
	withP := o.Data.HasPTrue()
	var w *writer
	if o.Out != "" {
		var err error
		if w, err = newWriter(o.Out, withP, o.RowGroupRows); err != nil {
			return nil, err
		}
		defer w.abort()
	}
	var probs, labels, ptrue []float32
	err := o.Predictor.PredictDataset(ctx, o.Data, func(b *dataset.Batch, p []float32) error {
		if w != nil {
			if err := w.write(int64(len(probs)), b, p); err != nil {
				return err
			}
		}
		probs = append(probs, p...)
		labels = append(labels, b.Label...)
		if withP {
			ptrue = append(ptrue, b.PTrue...)
		}
		if o.Progress != nil {
			o.Progress(int64(len(probs)))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(probs) == 0 {
		return nil, fmt.Errorf("score: %v holds no rows: %w", o.Data.Files(), dataset.ErrNoData)
	}
	res := &Result{OracleAUC: math.NaN()}
	s := metrics.Evaluate(probs, labels)
	res.Rows, res.Positives = int64(s.N), int64(s.Positives)
	res.AUC, res.LogLoss, res.Accuracy = s.AUC, s.LogLoss, s.Accuracy
	if withP {
		res.OracleAUC = metrics.AUC(ptrue, labels)
	}
	res.Calibration = metrics.Calibrate(probs, labels, o.Bins)
	if w != nil {
		if err := w.close(); err != nil {
			return nil, err
		}
		res.Out = o.Out
	}
	return res, nil
}

// writer writes the scores' Parquet file through a temporary name, with
// the Parquet library's column writers, in the schema and with the Arrow
// schema metadata that Arrow's record writer gave it (dataset.ParquetSchema),
// so Arrow readers see the same file; Arrow's writer package costs every
// picasso command its start-up. It buffers a row group's rows: a row
// group's column is complete before the next column starts.
type writer struct {
	path, tmp string
	f         *os.File
	fw        *file.Writer
	rowGroup  int
	withP     bool
	done      bool
	// The rows of the next row group, fewer than rowGroup between calls.
	row                 []int64
	label, score, ptrue []float32
}

// fileSchema is the Arrow schema of the scores file: row, label, score and,
// withP, p_true.
func fileSchema(withP bool) *arrow.Schema {
	fields := []arrow.Field{
		{Name: "row", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label", Type: arrow.PrimitiveTypes.Float32},
		{Name: "score", Type: arrow.PrimitiveTypes.Float32},
	}
	if withP {
		fields = append(fields, arrow.Field{Name: "p_true", Type: arrow.PrimitiveTypes.Float32})
	}
	return arrow.NewSchema(fields, nil)
}

func newWriter(path string, withP bool, rowGroup int) (w *writer, err error) {
	sc := fileSchema(withP)
	pqsc, err := dataset.ParquetSchema(sc)
	if err != nil {
		return nil, fmt.Errorf("score: create %s: %w", path, err)
	}
	arrowMeta, err := dataset.ArrowSchemaMetadata(sc)
	if err != nil {
		return nil, fmt.Errorf("score: create %s: %w", path, err)
	}
	meta := metadata.NewKeyValueMetadata()
	if err := meta.Append(dataset.ArrowSchemaKey, arrowMeta); err != nil {
		return nil, fmt.Errorf("score: create %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("score: create %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("score: create %s: %w", path, err)
	}
	defer func() {
		// The library panics when it cannot write the magic number; that
		// is an I/O error, not a bug of ours.
		if p := recover(); p != nil {
			err = fmt.Errorf("score: create %s: parquet writer: %v", path, p)
		}
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(atomicfile.Mode); err != nil {
		return nil, fmt.Errorf("score: create %s: %w", path, err)
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(int64(rowGroup)), parquet.WithCreatedBy("picasso"))
	// The Parquet writer closes its sink; hiding f's Close lets close
	// sync f first.
	fw := file.NewParquetWriter(struct{ io.Writer }{f}, pqsc.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta))
	return &writer{path: path, tmp: f.Name(), f: f, fw: fw, rowGroup: rowGroup, withP: withP}, nil
}

// write appends the batch's rows, the first being row first of the input,
// and writes a row group each time rowGroup rows are buffered.
func (w *writer) write(first int64, b *dataset.Batch, probs []float32) error {
	for lo := 0; lo < b.N; {
		hi := min(b.N, lo+w.rowGroup-len(w.row))
		for i := lo; i < hi; i++ {
			w.row = append(w.row, first+int64(i))
		}
		w.label = append(w.label, b.Label[lo:hi]...)
		w.score = append(w.score, probs[lo:hi]...)
		if w.withP {
			w.ptrue = append(w.ptrue, b.PTrue[lo:hi]...)
		}
		if len(w.row) == w.rowGroup {
			if err := w.flush(); err != nil {
				return fmt.Errorf("score: write %s: %w", w.path, err)
			}
		}
		lo = hi
	}
	return nil
}

// flush writes the buffered rows as a row group.
func (w *writer) flush() (err error) {
	defer func() {
		if p := recover(); p != nil { // a failing sink, as in newWriter
			err = fmt.Errorf("parquet writer: %v", p)
		}
	}()
	rgw := w.fw.AppendRowGroup()
	cw, err := rgw.NextColumn()
	if err != nil {
		return err
	}
	if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(w.row, nil, nil); err != nil {
		return err
	}
	floats := [][]float32{w.label, w.score}
	if w.withP {
		floats = append(floats, w.ptrue)
	}
	for _, vals := range floats {
		cw, err := rgw.NextColumn()
		if err != nil {
			return err
		}
		if _, err := cw.(*file.Float32ColumnChunkWriter).WriteBatch(vals, nil, nil); err != nil {
			return err
		}
	}
	// The file writer drops the error of a row group it closes.
	if err := rgw.Close(); err != nil {
		return err
	}
	w.row, w.label, w.score, w.ptrue = w.row[:0], w.label[:0], w.score[:0], w.ptrue[:0]
	return nil
}

// close writes the rows left as the last row group and the footer, and
// renames the file to its path.
func (w *writer) close() error {
	w.done = true
	fail := func(err error) error {
		w.f.Close()
		os.Remove(w.tmp)
		return fmt.Errorf("score: close %s: %w", w.path, err)
	}
	if len(w.row) > 0 {
		if err := w.flush(); err != nil {
			return fail(err)
		}
	}
	if err := w.fw.Close(); err != nil {
		return fail(err)
	}
	if err := w.f.Sync(); err != nil {
		return fail(err)
	}
	if err := w.f.Close(); err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("score: close %s: %w", w.path, err)
	}
	if err := os.Rename(w.tmp, w.path); err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("score: %w", err)
	}
	return nil
}

// abort removes the temporary file unless close succeeded.
func (w *writer) abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	os.Remove(w.tmp)
}
