package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/bits"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// Dense-input normalizations (ModelOptions.DenseNorm).
const (
	// DenseNormStandardize feeds the model (x - mean) / std of each dense
	// feature, with the mean and standard deviation of the training rows.
	DenseNormStandardize = "standardize"
	// DenseNormNone feeds the dense values as the data holds them.
	DenseNormNone = "none"
)

// DenseNorms lists the dense-input normalizations.
var DenseNorms = []string{DenseNormStandardize, DenseNormNone}

// A model that standardizes its dense inputs keeps, in its Shape, each
// feature's shift (the training rows' mean) and scale (1/std; 1 for a
// constant feature), and computes (x - shift) * scale in float32 wherever
// a mini-batch enters it: training, evaluation, predict and the ONNX
// export, which all give the same values bit for bit.
//
// The statistics come from every training row the run reads: the raw
// dataset, or the layout's hot and cold files, which hold the same rows in
// another order. So that fae and cpu get the same statistics bit for bit,
// the sums are exact (momentSums) and do not depend on the order of the
// rows.

// momentSums holds the exact sum and sum of squares of float32 values. A
// finite float32 is m·2^(E-150) with an integer mantissa m < 2^24 and E in
// [1, 254] (E = 1 for subnormals), so values of one E sum exactly as
// integers: s1[E] is the signed sum of their mantissas, s2[E] the 128-bit
// sum of their squared mantissas (the squares are m²·2^(2E-300)). Adding
// is then associative: any order and any split over workers give the same
// sums.
type momentSums struct {
	n  int64
	s1 [255]int64
	s2 [255][2]uint64 // low, high
}

// maxMomentValues bounds the values one momentSums holds: s1 cannot
// overflow below 2^63 / 2^24.
const maxMomentValues = 1 << 38

// add accumulates v; it reports false for a NaN or an infinity.
func (m *momentSums) add(v float32) bool {
	b := math.Float32bits(v)
	e := b >> 23 & 0xff
	if e == 0xff {
		return false
	}
	man := b & (1<<23 - 1)
	if e == 0 {
		e = 1
	} else {
		man |= 1 << 23
	}
	if b>>31 != 0 {
		m.s1[e] -= int64(man)
	} else {
		m.s1[e] += int64(man)
	}
	var c uint64
	m.s2[e][0], c = bits.Add64(m.s2[e][0], uint64(man)*uint64(man), 0)
	m.s2[e][1] += c
	m.n++
	return true
}

// merge adds o's sums into m.
func (m *momentSums) merge(o *momentSums) {
	m.n += o.n
	for e := range m.s1 {
		m.s1[e] += o.s1[e]
		var c uint64
		m.s2[e][0], c = bits.Add64(m.s2[e][0], o.s2[e][0], 0)
		m.s2[e][1] += o.s2[e][1] + c
	}
}

// momentPrec is the precision of the final combination: wide enough that
// the sums over every exponent, and the square of the first, are exact.
const momentPrec = 2048

// standardizer returns the shift and scale that standardize the values:
// their mean and 1/std, from the exact sums; scale is 1 when there are no
// values, when they are all equal, or when 1/std is not a finite float32.
func (m *momentSums) standardizer() (shift, scale float32) {
	if m.n == 0 {
		return 0, 1
	}
	nf := func() *big.Float { return new(big.Float).SetPrec(momentPrec) }
	s1, s2 := nf(), nf()
	for e := range m.s1 {
		if m.s1[e] != 0 {
			t := nf().SetInt64(m.s1[e])
			s1.Add(s1, t.SetMantExp(t, e-150))
		}
		if m.s2[e] != [2]uint64{} {
			hi := new(big.Int).Lsh(new(big.Int).SetUint64(m.s2[e][1]), 64)
			t := nf().SetInt(hi.Or(hi, new(big.Int).SetUint64(m.s2[e][0])))
			s2.Add(s2, t.SetMantExp(t, 2*e-300))
		}
	}
	n := nf().SetInt64(m.n)
	mean, _ := nf().Quo(s1, n).Float64()
	// variance = (n·s2 - s1²) / n², exact up to the division.
	num := nf().Sub(nf().Mul(n, s2), nf().Mul(s1, s1))
	variance, _ := num.Quo(num, nf().Mul(n, n)).Float64()
	shift, scale = float32(mean), 1
	if std := math.Sqrt(max(variance, 0)); std > 0 {
		if r := float32(1 / std); !math.IsInf(float64(r), 0) && r != 0 {
			scale = r
		}
	}
	return shift, scale
}

// denseSums is a momentSums per dense feature.
type denseSums []momentSums

// addBatch accumulates b's dense values; a non-finite value is an error
// that names its row and column.
func (d denseSums) addBatch(b *dataset.Batch, spec *dataset.Spec) error {
	nd := len(d)
	for i := range b.N {
		row := b.Dense[i*nd : (i+1)*nd]
		for j, v := range row {
			if !d[j].add(v) {
				return fmt.Errorf("train: %s row group %d row %d, column %s: dense value %v: %w",
					b.Pos.File, b.Pos.RowGroup, b.Pos.Row+int64(i), spec.Dense[j], v, dataset.ErrBadData)
			}
		}
	}
	if nd > 0 && d[0].n > maxMomentValues {
		return fmt.Errorf("train: more than %d training rows for the dense statistics (set model.dense_norm: none): %w", int64(maxMomentValues), ErrInvalidOptions)
	}
	return nil
}

// denseStats returns the standardizing shift and scale of each dense
// feature over every row of the given datasets, reading their row groups
// on up to GOMAXPROCS goroutines.
func denseStats(ctx context.Context, nd int, sets ...*dataset.Dataset) (shift, scale []float32, err error) {
	groups := 0
	for _, ds := range sets {
		if ds != nil { // nil: a layout without mini-batches of one class
			groups += len(ds.RowGroups())
		}
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), groups))
	// Worker w reads every workers-th row group, with one reader per
	// dataset over its share of that dataset's groups.
	type share struct {
		ds     *dataset.Dataset
		groups []dataset.RowGroup
	}
	shares := make([][]share, workers)
	k := 0
	for _, ds := range sets {
		if ds == nil {
			continue
		}
		for _, g := range ds.RowGroups() {
			w := k % workers
			if n := len(shares[w]); n == 0 || shares[w][n-1].ds != ds {
				shares[w] = append(shares[w], share{ds: ds})
			}
			last := &shares[w][len(shares[w])-1]
			last.groups = append(last.groups, g)
			k++
		}
	}
	sums := make([]denseSums, workers)
	errs := make([]error, workers)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		sums[w] = make(denseSums, nd)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, sh := range shares[w] {
				if err := readDense(ctx, sh.ds, sh.groups, sums[w]); err != nil {
					errs[w] = err
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		// The first failure cancels the other workers: report it, not
		// their cancellations (unless ctx itself ended).
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, nil, err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	var rows int64
	for w := range sums {
		if nd > 0 {
			rows += sums[w][0].n
		}
	}
	if rows > maxMomentValues {
		return nil, nil, fmt.Errorf("train: %d training rows; the dense statistics take at most %d (set model.dense_norm: none): %w", rows, int64(maxMomentValues), ErrInvalidOptions)
	}
	total := make(denseSums, nd)
	for w := range sums {
		for j := range total {
			total[j].merge(&sums[w][j])
		}
	}
	shift, scale = make([]float32, nd), make([]float32, nd)
	for j := range total {
		shift[j], scale[j] = total[j].standardizer()
	}
	return shift, scale, nil
}

// readDense adds the dense values of ds's row groups groups to sums.
func readDense(ctx context.Context, ds *dataset.Dataset, groups []dataset.RowGroup, sums denseSums) error {
	r, err := ds.NewReader(dataset.ReaderOptions{RowGroups: groups, BatchRows: 8192, DenseOnly: true})
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		b, err := r.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := sums.addBatch(b, ds.Spec()); err != nil {
			return err
		}
		r.Release(b)
	}
}

// trainingSets returns the datasets that hold the rows a run trains on:
// the layout's two classes when it reads a layout, else the raw dataset.
func (o *Options) trainingSets() []*dataset.Dataset {
	if o.readsLayout() {
		return []*dataset.Dataset{o.Data.Layout.ClassData(layout.Hot), o.Data.Layout.ClassData(layout.Cold)}
	}
	return []*dataset.Dataset{o.Data.Train}
}

// standardize writes (x - shift) * scale of the n×len(shift) values of src
// into dst.
func standardize(dst, src []float32, shift, scale []float32) {
	nd := len(shift)
	if nd == 0 {
		return
	}
	for i := 0; i+nd <= len(src); i += nd {
		d, s := dst[i:i+nd:i+nd], src[i:i+nd:i+nd]
		for j := range nd {
			d[j] = (s[j] - shift[j]) * scale[j]
		}
	}
}

// denseNorm sets the shape's dense standardization: a resumed run's from
// its checkpoint (its model saw those inputs, whatever the options say
// now), else, with DenseNormStandardize, from one pass over the training
// rows.
func (t *Trainer) denseNorm(ctx context.Context) error {
	o := &t.opts
	if o.Resume {
		path := joinPath(o.OutDir, CheckpointFile)
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("train: resume from %s: %w: %w", path, err, ErrCheckpoint)
		}
		defer f.Close()
		h, err := readCheckpointHeader(f)
		if err != nil {
			return fmt.Errorf("train: resume from %s: %w", path, err)
		}
		t.shape.DenseShift, t.shape.DenseScale = h.Shape.DenseShift, h.Shape.DenseScale
		if err := t.shape.Validate(); err != nil {
			return fmt.Errorf("train: resume from %s: %w: %w", path, err, ErrCheckpoint)
		}
		return nil
	}
	if o.Model.DenseNorm != DenseNormStandardize || t.shape.Dense == 0 {
		return nil
	}
	start := time.Now()
	shift, scale, err := denseStats(ctx, t.shape.Dense, o.trainingSets()...)
	if err != nil {
		return fmt.Errorf("train: standardize the dense features: %w", err)
	}
	t.shape.DenseShift, t.shape.DenseScale = shift, scale
	t.logf("dense features standardized over the training rows in %.2fs", time.Since(start).Seconds())
	return nil
}
