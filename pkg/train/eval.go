package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/metrics"
)

// evalSet is a set of test rows the trainer evaluates on: held in memory
// when small enough, streamed from the dataset otherwise.
type evalSet struct {
	ds      *dataset.Dataset
	batch   int
	cached  []*dataset.Batch // when not streamed
	rows    int64
	limit   int64 // rows to use (0: all)
	withP   bool
	streams bool // read from the dataset at every evaluation
}

// bytesPerRow estimates the memory of one decoded row.
func bytesPerRow(spec *dataset.Spec) int64 {
	b := int64(4 + 4*len(spec.Dense) + 4)
	for _, f := range spec.Sparse {
		b += 8
		if f.MultiHot {
			b += 4 + 8*3 // an offset and a few IDs
		}
	}
	return b
}

// newEvalSet prepares the first limit rows (0: all) of ds, reading them into
// memory when they take at most cacheBytes.
func newEvalSet(ctx context.Context, ds *dataset.Dataset, batch int, limit, cacheBytes int64) (*evalSet, error) {
	e := &evalSet{ds: ds, batch: batch, limit: limit, withP: ds.HasPTrue()}
	rows := ds.Rows()
	if limit > 0 {
		rows = min(rows, limit)
	}
	e.rows = rows
	e.streams = true
	if rows*bytesPerRow(ds.Spec()) > cacheBytes {
		return e, nil
	}
	err := e.each(ctx, func(b *dataset.Batch) error {
		e.cached = append(e.cached, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.streams = false
	return e, nil
}

// each calls fn with the set's batches in order.
func (e *evalSet) each(ctx context.Context, fn func(*dataset.Batch) error) error {
	if !e.streams {
		for _, b := range e.cached {
			if err := fn(b); err != nil {
				return err
			}
		}
		return nil
	}
	r, err := e.ds.NewReader(dataset.ReaderOptions{BatchRows: e.batch, WithPTrue: e.withP})
	if err != nil {
		return err
	}
	defer r.Close()
	var done int64
	for done < e.rows {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("train: test data: %w", err)
		}
		if left := e.rows - done; int64(b.N) > left {
			b = headRows(b, int(left))
		}
		done += int64(b.N)
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

// headRows returns the first n rows of b.
func headRows(b *dataset.Batch, n int) *dataset.Batch {
	nd := 0
	if b.N > 0 {
		nd = len(b.Dense) / b.N
	}
	return concatRows([]*dataset.Batch{b}, []int{0}, []int{n}, nd)
}

// EvalResult is one evaluation of the model on the test set.
type EvalResult struct {
	Step     int64   `json:"step"`
	Rows     int64   `json:"rows"`
	LogLoss  Number  `json:"test_logloss"`
	Accuracy Number  `json:"test_accuracy"`
	AUC      Number  `json:"test_auc"`
	Seconds  float64 `json:"seconds"`
}

// Number is a float64 that encodes NaN and infinities as JSON null.
type Number float64

// MarshalJSON implements json.Marshaler.
func (n Number) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler; null reads as NaN.
func (n *Number) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Number(math.NaN())
		return nil
	}
	var f float64
	if _, err := fmt.Sscan(string(b), &f); err != nil {
		return err
	}
	*n = Number(f)
	return nil
}

// evaluate predicts every row of the set with predict and returns the
// metrics; probs and labels are reused buffers.
func (e *evalSet) evaluate(ctx context.Context, predict func(b *dataset.Batch, probs []float32) error, probs, labels *[]float32) (metrics.Summary, error) {
	p, y := (*probs)[:0], (*labels)[:0]
	err := e.each(ctx, func(b *dataset.Batch) error {
		k := len(p)
		p = slices.Grow(p, b.N)[:k+b.N]
		y = append(y, b.Label...)
		return predict(b, p[k:])
	})
	*probs, *labels = p, y
	if err != nil {
		return metrics.Summary{}, err
	}
	return metrics.Evaluate(p, y), nil
}

// oracleAUC returns the AUC of the p_true column over the set, or NaN when
// the data has none.
func (e *evalSet) oracleAUC(ctx context.Context) (float64, error) {
	if !e.withP {
		return math.NaN(), nil
	}
	var p, y []float32
	err := e.each(ctx, func(b *dataset.Batch) error {
		if b.PTrue == nil {
			return fmt.Errorf("train: test batch without p_true: %w", dataset.ErrSchema)
		}
		p = append(p, b.PTrue...)
		y = append(y, b.Label...)
		return nil
	})
	if err != nil {
		return math.NaN(), err
	}
	return metrics.AUC(p, y), nil
}
