package train

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/hybridhash"
)

// Model is a trained model read back from a run's checkpoint: its shape
// and its parameters in host memory. predict, eval and export use it; it
// holds no optimizer state and cannot train.
type Model struct {
	// Path is the checkpoint it was read from.
	Path string
	// Mode, Seed, BatchSize and Step describe the run that trained it.
	Mode      Mode
	Seed      uint64
	BatchSize int
	Step      int64
	Shape     Shape
	// Params holds every MLP weight and bias (see Layers for their order);
	// Emb the embedding tables packed one after the other, Shape.RowDim()
	// values a row, table t starting at row TableStart()[t].
	Params []float32
	Emb    []float32
}

// Layer is one layer of a Model: y = x·Wᵀ + B, followed by a ReLU when
// ReLU is set; a Cross layer (DCN-v2) computes y = x0⊙(x·Wᵀ + B) + x
// instead. W is Out×In, row-major.
type Layer struct {
	In, Out int
	ReLU    bool
	Cross   bool
	W, B    []float32
}

// ReadModel reads the model of the checkpoint at path (a run's
// checkpoint.bin); a hybridhash run's rows come from the saved cache its
// checkpoint names, beside it (IDs without a row take their table's
// default row, as in the run's evaluations). It refuses a checkpoint whose master tables miss hot
// rows the device changed (a fae run interrupted inside a hot phase):
// resume and finish that run first.
func ReadModel(path string) (*Model, error) {
	fail := func(err error) error { return fmt.Errorf("train: read model %s: %w", path, err) }
	f, err := os.Open(path)
	if err != nil {
		return nil, fail(fmt.Errorf("%w: %w", err, ErrCheckpoint))
	}
	defer f.Close()
	h, err := readCheckpointHeader(f)
	if err != nil {
		return nil, fail(err)
	}
	if err := h.Shape.Validate(); err != nil {
		return nil, fail(fmt.Errorf("%w: %w", err, ErrCheckpoint))
	}
	if h.Cache != "" && h.Mode != ModeHybridHash {
		return nil, fail(fmt.Errorf("a %s run names a cache (%s): %w", h.Mode, h.Cache, ErrCheckpoint))
	}
	m := &Model{Path: path, Mode: h.Mode, Seed: h.Seed, BatchSize: h.BatchSize, Step: h.State.Step, Shape: h.Shape}
	var wantParams, wantEmb int64
	_, np := layersOf(h.Shape)
	wantParams = int64(np)
	for _, r := range h.Shape.TableRows {
		wantEmb += r * int64(h.Shape.RowDim())
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, int64(len(ckptMagic)), math.MaxInt64>>1), 1<<20)
	sio := &sectionIO{buf: make([]byte, 1<<16)}
	for _, sec := range h.Sections {
		var dst *[]float32
		switch sec.Name {
		case "params":
			if sec.Len != wantParams {
				return nil, fail(fmt.Errorf("section params holds %d values; the shape needs %d: %w", sec.Len, wantParams, ErrCheckpoint))
			}
			dst = &m.Params
		case "emb":
			if sec.Len != wantEmb {
				return nil, fail(fmt.Errorf("section emb holds %d values; the shape needs %d: %w", sec.Len, wantEmb, ErrCheckpoint))
			}
			dst = &m.Emb
		case "dev_dirty":
			if sec.Len > 0 {
				return nil, fail(fmt.Errorf("%d hot rows changed on the device are not in the master tables (the run stopped inside a hot phase); finish it with 'picasso train --resume': %w", sec.Len, ErrCheckpoint))
			}
		}
		size := int64(4)
		if sec.Kind == i64Codec.kind {
			size = 8
		}
		if dst == nil {
			if _, err := r.Discard(int(sec.Len * size)); err != nil {
				return nil, fail(fmt.Errorf("section %s: %w: %w", sec.Name, err, ErrCheckpoint))
			}
			continue
		}
		if sec.Kind != f32Codec.kind {
			return nil, fail(fmt.Errorf("section %s is %s; want f32: %w", sec.Name, sec.Kind, ErrCheckpoint))
		}
		*dst = make([]float32, sec.Len)
		sio.crc = crc32.NewIEEE()
		if err := getValues(sio, r, *dst, f32Codec); err != nil {
			return nil, fail(fmt.Errorf("section %s: %w", sec.Name, err))
		}
		if err := sio.check(sec); err != nil {
			return nil, fail(fmt.Errorf("section %s: %w", sec.Name, err))
		}
	}
	if h.Cache != "" {
		if m.Emb != nil {
			return nil, fail(fmt.Errorf("an emb section beside a cache: %w", ErrCheckpoint))
		}
		if m.Emb, err = m.cachedEmb(filepath.Join(filepath.Dir(path), h.Cache)); err != nil {
			return nil, fail(err)
		}
	}
	if m.Params == nil || m.Emb == nil {
		return nil, fail(fmt.Errorf("no params or emb section: %w", ErrCheckpoint))
	}
	return m, nil
}

// maxCachedEmbFloats bounds the tables ReadModel builds from a
// hybridhash run's cache (32 GiB of float32).
const maxCachedEmbFloats = 1 << 33

// cachedEmb builds the packed tables of a hybridhash run from the cache
// state its checkpoint names (dir): each row the cache holds (hot, host or
// disk) has its value, every other row its table's default row, which is
// what the run's own evaluations look up for an ID without a row.
func (m *Model) cachedEmb(dir string) ([]float32, error) {
	s := m.Shape
	e := int64(s.RowDim())
	start := m.TableStart()
	total := start[len(s.TableRows)]
	if total > maxCachedEmbFloats/e {
		return nil, fmt.Errorf("the tables have %d rows of %d values, more than predict holds in memory (%d values); score with a run of another mode: %w", total, e, int64(maxCachedEmbFloats), ErrCheckpoint)
	}
	emb := make([]float32, total*e)
	have := make([]bool, total)
	defaults := make([][]float32, len(s.TableRows))
	err := hybridhash.ReadSaved(dir, func(k hybridhash.Key, v []float32) error {
		if int64(len(v)) < e {
			return fmt.Errorf("cache %s: table %d id %d holds %d values; the model's rows have %d: %w", dir, k.Table, k.ID, len(v), e, ErrCheckpoint)
		}
		if k.Table < 0 {
			if t := int(-1 - k.Table); t < len(defaults) {
				defaults[t] = slices.Clone(v[:e])
			}
			return nil
		}
		t := int(k.Table)
		if t >= len(s.TableRows) || k.ID < 0 || k.ID >= s.TableRows[t] {
			return fmt.Errorf("cache %s: table %d id %d is outside the model's %d tables (%v rows): %w", dir, k.Table, k.ID, len(s.TableRows), s.TableRows, ErrCheckpoint)
		}
		r := start[t] + k.ID
		copy(emb[r*e:(r+1)*e], v)
		have[r] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	for t, def := range defaults {
		if def == nil {
			return nil, fmt.Errorf("cache %s has no default row for table %d: %w", dir, t, ErrCheckpoint)
		}
		for r := start[t]; r < start[t+1]; r++ {
			if !have[r] {
				copy(emb[r*e:(r+1)*e], def)
			}
		}
	}
	return emb, nil
}

// Layers returns the bottom MLP's layers (DLRM), the cross layers
// (DCN-v2) and the top MLP's, in that order, as views of Params.
func (m *Model) Layers() []Layer {
	ls, _ := layersOf(m.Shape)
	var out []Layer
	for _, l := range ls {
		out = append(out, Layer{In: l.in, Out: l.out, ReLU: l.relu, Cross: l.cross, W: m.Params[l.w : l.w+l.in*l.out], B: m.Params[l.b : l.b+l.out]})
	}
	return out
}

// DenseWide returns, for a shape with DenseWide, the dense features' FM
// factors (DeepFM: Dim×Dense, row k holding factor k of every dense
// feature; nil for Wide&Deep) and their first-order weights (Dense); nil
// and nil without.
func (m *Model) DenseWide() (factors, first []float32) {
	s := m.Shape
	if !s.DenseWide {
		return nil, nil
	}
	_, n := layersOf(s)
	b := m.Params[n-denseWideLen(s) : n]
	f := denseFactors(s)
	if f == 0 {
		return nil, b
	}
	return b[:f], b[f:]
}

// BottomLayers is the number of layers of Layers that form the bottom MLP.
func (m *Model) BottomLayers() int { return len(m.Shape.Bottom) }

// TableStart returns the first row of each table in Emb, and the total
// row count last. A row holds Shape.RowDim() values: the Dim factors and,
// for Wide&Deep and DeepFM, the row's first-order weight last.
func (m *Model) TableStart() []int64 {
	st := make([]int64, len(m.Shape.TableRows)+1)
	for t, r := range m.Shape.TableRows {
		st[t+1] = st[t] + r
	}
	return st
}

// Predictor scores mini-batches with a Model, on a host backend, with the
// same kernels, lanes and batch size as the trainer's evaluation, so its
// scores are the ones the run's test evaluation computed.
type Predictor struct {
	t *Trainer
}

// NewPredictor places m on host (a backend in host memory) for batches of
// up to m.BatchSize rows. Close releases it.
func NewPredictor(m *Model, host compute.Backend) (*Predictor, error) {
	if !host.Space().IsHost() {
		return nil, fmt.Errorf("train: predictor backend %s is not in host memory: %w", host.Name(), ErrInvalidOptions)
	}
	if m.BatchSize < 1 {
		return nil, fmt.Errorf("train: model batch size %d: %w", m.BatchSize, ErrInvalidOptions)
	}
	t := &Trainer{shape: m.Shape, batchCap: m.BatchSize, micro: 1, l: &link{}}
	ok := false
	defer func() {
		if !ok {
			t.Close()
		}
	}()
	var err error
	if t.m, err = newModel(m.Shape, m.Seed, OptSGD, host); err != nil {
		return nil, err
	}
	if t.m.n != len(m.Params) {
		return nil, fmt.Errorf("train: model has %d MLP parameters; its shape needs %d: %w", len(m.Params), t.m.n, ErrCheckpoint)
	}
	host.CopyIn(t.m.params, compute.Wrap(m.Params))
	if t.lanes, err = newLaneSet(t.m, (t.batchCap+denseLanes-1)/denseLanes, 1); err != nil {
		return nil, err
	}
	t.nd, t.fd = m.Shape.Dense, m.Shape.Features*m.Shape.RowDim()
	po := placementOptions{mode: ModeCPU, shape: m.Shape, seed: m.Seed, batch: t.batchCap, host: host, dense: host, l: t.l, ph: &t.st.Phases}
	if t.place, err = newPlacement(po); err != nil {
		return nil, err
	}
	master := t.place.state().master
	if master.W.Len() != len(m.Emb) {
		return nil, fmt.Errorf("train: model has %d embedding values; its shape needs %d: %w", len(m.Emb), master.W.Len(), ErrCheckpoint)
	}
	host.CopyIn(master.W, compute.Wrap(m.Emb))
	if err := host.Sync(); err != nil {
		return nil, err
	}
	ok = true
	return &Predictor{t: t}, nil
}

// BatchSize is the largest batch Predict takes.
func (p *Predictor) BatchSize() int { return p.t.batchCap }

// Predict writes the click probability of each of b's rows into probs
// (b.N values). b holds at most BatchSize rows.
func (p *Predictor) Predict(b *dataset.Batch, probs []float32) error {
	if len(probs) < b.N {
		return fmt.Errorf("train: %d probabilities for %d rows: %w", len(probs), b.N, ErrInvalidOptions)
	}
	if len(b.Dense) != b.N*p.t.nd || len(b.Label) != b.N {
		return fmt.Errorf("train: batch at %s row group %d row %d: %d dense values and %d labels for %d rows of %d dense features: %w",
			b.Pos.File, b.Pos.RowGroup, b.Pos.Row, len(b.Dense), len(b.Label), b.N, p.t.nd, dataset.ErrBadData)
	}
	return p.t.predict(b, probs)
}

// PredictDataset scores every row of ds in order, calling fn with each
// batch and its probabilities (valid until fn returns).
func (p *Predictor) PredictDataset(ctx context.Context, ds *dataset.Dataset, fn func(b *dataset.Batch, probs []float32) error) error {
	r, err := ds.NewReader(dataset.ReaderOptions{BatchRows: p.t.batchCap, WithPTrue: ds.HasPTrue()})
	if err != nil {
		return err
	}
	defer r.Close()
	probs := make([]float32, p.t.batchCap)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := p.Predict(b, probs[:b.N]); err != nil {
			return err
		}
		if err := fn(b, probs[:b.N]); err != nil {
			return err
		}
	}
}

// Close releases the predictor's buffers.
func (p *Predictor) Close() error { return p.t.Close() }
