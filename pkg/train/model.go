package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// Models.
const (
	// ArchDLRM is DLRM: a bottom MLP over the dense features, the pairwise
	// dot interaction with the pooled embeddings, a top MLP.
	ArchDLRM = "dlrm"
	// ArchWDL is Wide&Deep: a deep MLP over the dense features and the
	// pooled embeddings, plus a wide linear part over the sparse IDs (one
	// weight per ID, kept as an extra value at the end of its embedding
	// row).
	ArchWDL = "wdl"
	// ArchDCN is DCN-v2: full-rank cross layers x_{l+1} = x0⊙(W·x_l + b) +
	// x_l over x0, the dense features and the pooled embeddings, stacked
	// before a deep MLP.
	ArchDCN = "dcn"
	// ArchDeepFM is DeepFM: a factorization machine (first-order weights
	// per ID, kept as in Wide&Deep, and the second-order term over the
	// pooled embeddings, in O(f·d)) beside a deep MLP.
	ArchDeepFM = "deepfm"
)

// Archs lists the models.
var Archs = []string{ArchDLRM, ArchWDL, ArchDCN, ArchDeepFM}

// Shape is a model's architecture once the data has fixed its inputs.
type Shape struct {
	// Arch is the model (Archs); empty means DLRM.
	Arch string `json:"arch,omitempty"`
	// Cross is the number of DCN-v2 cross layers.
	Cross    int   `json:"cross,omitempty"`
	Dense    int   `json:"dense"`    // dense inputs per sample
	Features int   `json:"features"` // sparse features, one pooled embedding each
	Dim      int   `json:"dim"`      // embedding dimension
	Bottom   []int `json:"bottom"`   // bottom MLP widths after the dense input
	Top      []int `json:"top"`      // top MLP widths after the interaction; the last is 1
	// Interaction is "dot" (DLRM's pairwise dot products below the diagonal
	// after the bottom output) or "cat" (the bottom output and the pooled
	// embeddings concatenated).
	Interaction string `json:"interaction"`
	// TableRows is the row count of each embedding table and FeatureTable
	// the table each feature looks up (features may share a table).
	TableRows    []int64 `json:"table_rows"`
	FeatureTable []int   `json:"feature_table"`
	// DenseShift and DenseScale, when set, standardize the dense inputs:
	// the model sees (x - DenseShift[j]) * DenseScale[j] for feature j
	// (ModelOptions.DenseNorm; the trainer computes them from the training
	// rows).
	DenseShift []float32 `json:"dense_shift,omitempty"`
	DenseScale []float32 `json:"dense_scale,omitempty"`
	// DenseWide puts the dense features in the wide part of Wide&Deep and
	// DeepFM as well: a first-order weight each and, for DeepFM, a field
	// of the factorization machine each, a vector of Dim factors scaled by
	// the feature's value (DeepFM's treatment of continuous fields).
	DenseWide bool `json:"dense_wide,omitempty"`
}

// ShapeOf derives a model's shape from its options and the data spec.
func ShapeOf(m ModelOptions, spec *dataset.Spec) Shape {
	s := Shape{
		Dense: len(spec.Dense), Features: len(spec.Sparse), Dim: m.Dim,
		Bottom: append([]int(nil), m.Bottom...), Top: append([]int(nil), m.Top...),
		Interaction: m.Interaction, FeatureTable: spec.FeatureTable(),
	}
	if m.Arch != "" && m.Arch != ArchDLRM {
		// Only DLRM has a bottom MLP and an interaction.
		s.Arch, s.Bottom, s.Interaction = m.Arch, nil, ""
	}
	if s.Arch == ArchDCN {
		s.Cross = m.Cross
	}
	s.DenseWide = m.DenseWide && s.wide() && s.Dense > 0
	for _, t := range spec.Tables() {
		s.TableRows = append(s.TableRows, t.Rows)
	}
	return s
}

// dlrm reports whether the model is DLRM.
func (s Shape) dlrm() bool { return s.Arch == "" || s.Arch == ArchDLRM }

// wide reports whether each embedding row carries a first-order weight
// after its Dim factors (Wide&Deep, DeepFM).
func (s Shape) wide() bool { return s.Arch == ArchWDL || s.Arch == ArchDeepFM }

// RowDim is the width of an embedding row as stored and looked up: Dim,
// plus one for the first-order weight of Wide&Deep and DeepFM.
func (s Shape) RowDim() int {
	if s.wide() {
		return s.Dim + 1
	}
	return s.Dim
}

// InputWidth is the width of the other models' MLP input x0: the dense
// features followed by the F pooled embeddings.
func (s Shape) InputWidth() int { return s.Dense + s.Features*s.Dim }

// InteractWidth is the width of the input of the MLP that ends in the
// logit: for DLRM the interaction output, d + (F+1)F/2 for "dot", d + F·d
// for "cat"; for the other models InputWidth.
func (s Shape) InteractWidth() int {
	if !s.dlrm() {
		return s.InputWidth()
	}
	if s.Interaction == "cat" {
		return s.Dim + s.Features*s.Dim
	}
	return compute.InteractWidth(s.Features, s.Dim)
}

// Validate reports every problem with the shape at once.
func (s Shape) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("train: model: "+format+": %w", append(a, ErrInvalidOptions)...))
	}
	if s.Dim < 1 {
		bad("embedding dimension %d < 1", s.Dim)
	}
	switch {
	case s.dlrm():
		if s.Dense < 1 {
			bad("DLRM needs at least one dense feature for its bottom MLP, got %d", s.Dense)
		}
		if len(s.Bottom) == 0 {
			bad("bottom MLP has no layers")
		} else if s.Bottom[len(s.Bottom)-1] != s.Dim {
			bad("bottom MLP ends in %d, not the embedding dimension %d", s.Bottom[len(s.Bottom)-1], s.Dim)
		}
		if s.Interaction != "dot" && s.Interaction != "cat" {
			bad("interaction %q (want dot or cat)", s.Interaction)
		}
	case s.Arch == ArchWDL || s.Arch == ArchDCN || s.Arch == ArchDeepFM:
		if s.Cross < 0 || s.Cross > 16 {
			bad("%d cross layers (want 0 to 16)", s.Cross)
		}
		if s.Arch == ArchDeepFM && s.Features < 2 {
			bad("DeepFM's second-order term needs two sparse features or more, got %d", s.Features)
		}
	default:
		bad("model %q is not one of %v", s.Arch, Archs)
	}
	if len(s.Top) == 0 || s.Top[len(s.Top)-1] != 1 {
		bad("top MLP %v does not end in 1", s.Top)
	}
	for _, w := range append(append([]int(nil), s.Bottom...), s.Top...) {
		if w < 1 {
			bad("layer width %d < 1", w)
			break
		}
	}
	if len(s.FeatureTable) != s.Features {
		bad("%d features but %d feature-table entries", s.Features, len(s.FeatureTable))
	}
	for f, t := range s.FeatureTable {
		if t < 0 || t >= len(s.TableRows) {
			bad("feature %d looks up table %d of %d", f, t, len(s.TableRows))
		}
	}
	for t, r := range s.TableRows {
		if r < 1 {
			bad("table %d has %d rows", t, r)
		}
	}
	if s.DenseWide && (!s.wide() || s.Dense == 0) {
		bad("dense features in the wide part need Wide&Deep or DeepFM and dense features (model %q, %d dense)", s.Arch, s.Dense)
	}
	if s.DenseShift != nil || s.DenseScale != nil {
		if s.Dense == 0 || len(s.DenseShift) != s.Dense || len(s.DenseScale) != s.Dense {
			bad("%d dense shifts and %d scales for %d dense features", len(s.DenseShift), len(s.DenseScale), s.Dense)
		} else {
			for j := range s.DenseShift {
				a, b := float64(s.DenseShift[j]), float64(s.DenseScale[j])
				if math.IsNaN(a) || math.IsInf(a, 0) || math.IsNaN(b) || math.IsInf(b, 0) || b == 0 {
					bad("dense feature %d: shift %v, scale %v (want finite, scale not 0)", j, a, b)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// layer is one fully connected layer, y = act(x·Wᵀ + b), with W out×in
// row-major at params[w:] and b at params[b:] (gradients and Adagrad state
// at the same offsets of their buffers). A cross layer (DCN-v2) computes
// y = x0⊙(x·Wᵀ + b) + x, in = out.
type layer struct {
	in, out int
	relu    bool
	cross   bool
	w, b    int
}

// model holds the MLPs' parameters in the memory of the backend that runs
// them: every weight and bias in one buffer, so that one optimizer call
// updates them all. The embedding tables belong to the placement.
type model struct {
	shape   Shape
	layers  []layer
	nBottom int
	be      compute.Backend
	n       int            // parameters
	params  compute.Buffer // n
	acc     compute.Buffer // optimizer state (n for Adagrad, 2n for Adam); the zero Buffer for SGD
	// firstOrder is, for Wide&Deep and DeepFM, a constant F·RowDim vector
	// with a 1 at each feature's first-order weight and 0 elsewhere: one
	// GEMM with it sums a sample's first-order weights.
	firstOrder compute.Buffer
	// dw is the offset of the dense features' wide block in params (see
	// denseWideLen), when the shape has one.
	dw int
}

// layersOf lists the layers of a shape in parameter order (the bottom MLP,
// the cross layers, the top MLP) and returns the parameter count.
func layersOf(s Shape) ([]layer, int) {
	var ls []layer
	n := 0
	add := func(in, out int, relu, cross bool) {
		ls = append(ls, layer{in: in, out: out, relu: relu, cross: cross, w: n, b: n + in*out})
		n += in*out + out
	}
	in := s.Dense
	for _, w := range s.Bottom {
		add(in, w, true, false) // DLRM's bottom MLP has a ReLU after every layer
		in = w
	}
	in = s.InteractWidth()
	for range s.Cross {
		add(in, in, false, true)
	}
	for i, w := range s.Top {
		add(in, w, i < len(s.Top)-1, false) // the last top layer is the logit
		in = w
	}
	if s.DenseWide {
		n += denseWideLen(s)
	}
	return ls, n
}

// denseWideLen is the size of the dense features' wide block, kept after
// the layers: for DeepFM a Dim×Dense matrix whose row k holds factor k of
// every dense feature's FM vector (denseFactors values), then, for both
// models, the Dense first-order weights.
func denseWideLen(s Shape) int { return denseFactors(s) + s.Dense }

// denseFactors is the size of the FM factors in the dense features' wide
// block: Dim×Dense for DeepFM, none for Wide&Deep.
func denseFactors(s Shape) int {
	if s.Arch == ArchDeepFM {
		return s.Dim * s.Dense
	}
	return 0
}

// newModel builds the MLPs on be with DLRM's initialisation, seeded:
// weights ~ N(0, sqrt(2/(fan_in+fan_out))), biases ~ N(0, sqrt(1/fan_out));
// cross layers' biases start at 0. opt sets the optimizer state it
// allocates (zeros).
func newModel(s Shape, seed uint64, opt Optimizer, be compute.Backend) (*model, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	m := &model{shape: s, nBottom: len(s.Bottom), be: be}
	m.layers, m.n = layersOf(s)
	n := m.n
	params := make([]float32, n)
	rng := rand.New(rand.NewPCG(seed, streamMLPInit))
	for _, l := range m.layers {
		sw := math.Sqrt(2 / float64(l.in+l.out))
		for i := range l.in * l.out {
			params[l.w+i] = float32(rng.NormFloat64() * sw)
		}
		sb := math.Sqrt(1 / float64(l.out))
		if l.cross {
			sb = 0
		}
		for i := range l.out {
			params[l.b+i] = float32(rng.NormFloat64() * sb)
		}
	}
	if s.DenseWide {
		// Small FM factors, as embedding rows start; first-order weights 0.
		m.dw = n - denseWideLen(s)
		for i := range denseFactors(s) {
			params[m.dw+i] = float32(rng.NormFloat64() * denseFactorInit)
		}
	}
	var err error
	if m.params, err = be.Alloc(compute.Float32, n); err != nil {
		return nil, fmt.Errorf("train: MLP parameters: %w", err)
	}
	be.CopyIn(m.params, compute.Wrap(params)) // placing the model is not counted
	if state := optStateLen(opt, n); state > 0 {
		if m.acc, err = be.Alloc(compute.Float32, state); err != nil {
			m.free()
			return nil, fmt.Errorf("train: MLP optimizer state: %w", err)
		}
	}
	if s.wide() {
		e := s.RowDim()
		v := make([]float32, s.Features*e)
		for f := range s.Features {
			v[f*e+s.Dim] = 1
		}
		if m.firstOrder, err = be.Alloc(compute.Float32, len(v)); err != nil {
			m.free()
			return nil, fmt.Errorf("train: first-order weights: %w", err)
		}
		be.CopyIn(m.firstOrder, compute.Wrap(v))
	}
	return m, nil
}

// denseFactorInit is the standard deviation of the dense features' initial
// FM factors.
const denseFactorInit = 0.01

// optStateLen is the optimizer state of n dense parameters.
func optStateLen(opt Optimizer, n int) int {
	switch opt {
	case OptAdagrad:
		return n
	case OptAdam:
		return 2 * n
	}
	return 0
}

// free releases the parameters.
func (m *model) free() {
	m.be.Free(m.params)
	m.be.Free(m.acc)
	m.be.Free(m.firstOrder)
	m.params, m.acc, m.firstOrder = compute.Buffer{}, compute.Buffer{}, compute.Buffer{}
}

// Random streams derived from the run's seed; each use has its own so that
// adding one never shifts another.
const (
	streamMLPInit   = 0x6d6c70696e6974 // "mlpinit"
	streamEmbInit   = 0x656d62696e6974 // "embinit" (+ table index)
	streamRawOrder  = 0x7261776f7264   // "raword" (+ epoch)
	streamColdOrder = 0x636f6c64       // "cold" (+ epoch)
	streamHotOrder  = 0x686f74         // "hot" (+ epoch)
	streamMixOrder  = 0x6d6978         // "mix" (+ epoch)
)

// newEmbeddings returns the model's embedding tables, packed, in be's
// memory, with DLRM's initialisation: rows ~ U(-sqrt(1/rows), sqrt(1/rows)),
// every table from its own random stream. adagrad allocates the row-wise
// optimizer state (zeros).
func newEmbeddings(s Shape, seed uint64, adagrad bool, be compute.Backend) (*compute.PackedTable, error) {
	t, err := compute.NewPackedTable(be, s.RowDim(), s.TableRows)
	if err != nil {
		return nil, fmt.Errorf("train: embedding tables: %w", err)
	}
	// The first-order weight at the end of a row has its own Adagrad state.
	t.SplitLast = s.wide()
	if adagrad {
		if err := t.AllocAcc(); err != nil {
			t.Free()
			return nil, fmt.Errorf("train: embedding optimizer state: %w", err)
		}
	}
	initEmbeddings(t, seed)
	return t, nil
}

// initEmbeddings fills every table from its own random stream, tables in
// parallel; the result does not depend on the number of goroutines. A
// table in host memory is filled where it lies; one on a device is filled
// on the host and copied in (placing the model is not counted).
func initEmbeddings(t *compute.PackedTable, seed uint64) {
	be := t.Backend()
	host := be.Space().IsHost()
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), t.Tables()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []float32
			for i := range next {
				rows := t.TableRows(i)
				rng := rand.New(rand.NewPCG(seed, streamEmbInit+uint64(i)<<32))
				bound := math.Sqrt(1 / float64(rows))
				lo, hi := int(t.Start[i])*t.Dim, int(t.Start[i+1])*t.Dim
				dst := t.W.Slice(lo, hi)
				var w []float32
				if host {
					w = dst.Float32s()
				} else {
					buf = grow(buf, hi-lo)
					w = buf
				}
				for k := range w {
					w[k] = float32((2*rng.Float64() - 1) * bound)
				}
				if !host {
					be.CopyIn(dst, compute.Wrap(w))
				}
			}
		}()
	}
	for i := range t.Tables() {
		next <- i
	}
	close(next)
	wg.Wait()
}

// w returns layer l's weights.
func (m *model) w(l layer) compute.Buffer { return m.params.Slice(l.w, l.w+l.in*l.out) }

// b returns layer l's bias.
func (m *model) b(l layer) compute.Buffer { return m.params.Slice(l.b, l.b+l.out) }
