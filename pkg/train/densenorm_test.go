package train

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// TestMomentSums checks the exact sums: any order and any split over
// workers give the same shift and scale bit for bit, and they agree with
// a float64 two-pass mean and standard deviation.
func TestMomentSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]float32, 20000)
	for i := range vals {
		switch i % 5 {
		case 0:
			vals[i] = float32(rng.NormFloat64()*3 + 7)
		case 1:
			vals[i] = float32(math.Log1p(float64(rng.IntN(1000))))
		case 2:
			vals[i] = float32(rng.ExpFloat64() * 1e6)
		case 3:
			vals[i] = math.Float32frombits(rng.Uint32() & 0x007fffff) // subnormal
		default:
			vals[i] = -float32(rng.Float64())
		}
	}
	var whole momentSums
	var m, ss float64
	for _, v := range vals {
		if !whole.add(v) {
			t.Fatalf("add(%v) refused", v)
		}
		m += float64(v)
	}
	m /= float64(len(vals))
	for _, v := range vals {
		ss += (float64(v) - m) * (float64(v) - m)
	}
	std := math.Sqrt(ss / float64(len(vals)))
	shift, scale := whole.standardizer()
	if math.Abs(float64(shift)-m) > 1e-6*math.Abs(m) || math.Abs(float64(1/scale)-std) > 1e-6*std {
		t.Fatalf("shift %v scale %v (std %v); want mean %v std %v", shift, scale, 1/scale, m, std)
	}
	for trial := range 5 {
		rng.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
		parts := make([]momentSums, 1+trial)
		for i, v := range vals {
			parts[(i*7+trial)%len(parts)].add(v)
		}
		var total momentSums
		for k := len(parts) - 1; k >= 0; k-- {
			total.merge(&parts[k])
		}
		if s2, c2 := total.standardizer(); math.Float32bits(s2) != math.Float32bits(shift) || math.Float32bits(c2) != math.Float32bits(scale) {
			t.Fatalf("trial %d: shift %v scale %v; the first order gave %v %v", trial, s2, c2, shift, scale)
		}
	}

	var c momentSums
	for range 10 {
		c.add(2.5)
	}
	if s, k := c.standardizer(); s != 2.5 || k != 1 {
		t.Errorf("constant 2.5: shift %v scale %v; want 2.5 and 1", s, k)
	}
	var empty momentSums
	if s, k := empty.standardizer(); s != 0 || k != 1 {
		t.Errorf("no values: shift %v scale %v; want 0 and 1", s, k)
	}
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		if c.add(v) {
			t.Errorf("add(%v) accepted", v)
		}
	}
	// Values far from 0 with a small spread keep their spread: the sums are
	// exact, so n·s2 - s1² does not cancel to garbage.
	var far momentSums
	for i := range 1000 {
		far.add(1e6 + float32(i%2)) // mean 1e6+0.5, std 0.5
	}
	if s, k := far.standardizer(); s != 1e6+0.5 || k != 2 {
		t.Errorf("1e6 ± 0.5: shift %v scale %v; want 1000000.5 and 2", s, k)
	}
}

// TestDenseStatsLayoutMatchesRaw checks that the statistics over a
// layout's two classes are those over the raw rows they hold, and that the
// model sees (x - shift) * scale.
func TestDenseStatsLayoutMatchesRaw(t *testing.T) {
	d := newFAEData(t, false, false, 1500, 64)
	nd := len(d.spec.Dense)
	raw := writeData(t, &d.spec, d.rows, t.TempDir(), 100)
	rs, rc, err := denseStats(context.Background(), nd, raw)
	if err != nil {
		t.Fatal(err)
	}
	ls, lc, err := denseStats(context.Background(), nd, d.layout.ClassData(layout.Hot), d.layout.ClassData(layout.Cold))
	if err != nil {
		t.Fatal(err)
	}
	if err := sameFloats(rs, ls); err != nil {
		t.Fatalf("shift: raw and layout differ: %v", err)
	}
	if err := sameFloats(rc, lc); err != nil {
		t.Fatalf("scale: raw and layout differ: %v", err)
	}
	// The standardized training rows have mean 0 and variance 1.
	var sums []float64
	var sq []float64
	n := 0
	for _, b := range d.rows {
		out := make([]float32, len(b.Dense))
		standardize(out, b.Dense, rs, rc)
		for i := range b.N {
			if sums == nil {
				sums, sq = make([]float64, nd), make([]float64, nd)
			}
			for j := range nd {
				v := float64(out[i*nd+j])
				sums[j] += v
				sq[j] += v * v
			}
		}
		n += b.N
	}
	for j := range nd {
		mean, v := sums[j]/float64(n), sq[j]/float64(n)
		if math.Abs(mean) > 1e-5 || math.Abs(v-1) > 1e-4 {
			t.Errorf("feature %d standardized: mean %v, mean square %v; want 0 and 1", j, mean, v)
		}
	}

	// A trainer with DenseNormStandardize puts them in its shape; with
	// none it leaves the shape without.
	be := newBackend(t, 2)
	c := testOptions(ModeCPU, 64)
	c.Model.DenseNorm = DenseNormStandardize
	tr := mustTrainer(t, c.with(be, Data{Train: raw}))
	if err := sameFloats(tr.shape.DenseShift, rs); err != nil {
		t.Errorf("trainer's shift: %v", err)
	}
	if err := sameFloats(tr.shape.DenseScale, rc); err != nil {
		t.Errorf("trainer's scale: %v", err)
	}
	c.Model.DenseNorm = DenseNormNone
	if tr := mustTrainer(t, c.with(be, Data{Train: raw})); tr.shape.DenseShift != nil {
		t.Errorf("dense norm none: shift %v", tr.shape.DenseShift)
	}
	c.Model.DenseNorm = "zscore"
	if o := c.with(be, Data{Train: raw}); o.Validate() == nil {
		t.Error("dense norm zscore accepted")
	}
}

// TestDenseStatsBadValue checks that a non-finite dense value is an error
// naming its file, row and column.
func TestDenseStatsBadValue(t *testing.T) {
	spec := synthSpec(false, false)
	rows := synthRows(&spec, 300, 256, 11)
	rows[1].Dense[5*len(spec.Dense)+1] = float32(math.Inf(1))
	raw := writeData(t, &spec, rows, t.TempDir(), 100)
	_, _, err := denseStats(context.Background(), len(spec.Dense), raw)
	// The reader or the sums refuse it; either way it is bad data, located.
	if !errors.Is(err, dataset.ErrBadData) || !strings.Contains(err.Error(), spec.Dense[1]) {
		t.Fatalf("error %v; want bad data naming column %s", err, spec.Dense[1])
	}
}

// TestDenseNormCheckpoint checks that a standardizing model's checkpoint
// is version 2 with its statistics, which ReadModel returns, and that
// statistics that do not fit the shape are refused.
func TestDenseNormCheckpoint(t *testing.T) {
	d := newFAEData(t, false, false, 600, 64)
	raw := writeData(t, &d.spec, d.rows, t.TempDir(), 100)
	be := newBackend(t, 2)
	c := testOptions(ModeCPU, 64)
	c.Model.DenseNorm = DenseNormStandardize
	dir := t.TempDir()
	tr := mustTrainer(t, c.with(be, Data{Train: raw}).in(dir))
	mustRun(t, tr)
	f, err := os.Open(filepath.Join(dir, CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	h, err := readCheckpointHeader(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != ckptVersionNorm {
		t.Errorf("checkpoint version %d; want %d", h.Version, ckptVersionNorm)
	}
	m, err := ReadModel(filepath.Join(dir, CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := sameFloats(m.Shape.DenseScale, tr.shape.DenseScale); err != nil {
		t.Errorf("ReadModel's scale: %v", err)
	}

	s := tr.shape
	s.DenseScale = s.DenseScale[:1]
	if s.Validate() == nil {
		t.Error("one scale for several dense features accepted")
	}
	s = tr.shape
	s.Dense, s.DenseShift, s.DenseScale = 0, []float32{}, []float32{}
	if s.Validate() == nil {
		t.Error("statistics without dense features accepted")
	}
	standardize(nil, []float32{1, 2}, nil, nil) // no features: returns
}
