package profile

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"sort"
)

// Method selects how the threshold is chosen.
type Method string

const (
	// MethodTInterval is the paper's chunk estimator with Student's
	// t-interval (Eq. 1-4); the optimizer uses the interval's upper bound.
	MethodTInterval Method = "tinterval"
	// MethodExact counts hot rows exactly on the sample (a per-table
	// histogram of counts, built once); no chunk sampling.
	MethodExact Method = "exact"
	// MethodTopK reproduces the FAE artifact: the global top-K rows by
	// sampled count, K = Budget/(4·dim), no small-table rule.
	MethodTopK Method = "topk"
)

// Methods lists the threshold methods, for help texts and completion.
var Methods = []Method{MethodTInterval, MethodExact, MethodTopK}

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Method) UnmarshalText(t []byte) error {
	for _, v := range Methods {
		if string(t) == string(v) {
			*m = v
			return nil
		}
	}
	return fmt.Errorf("profile: method %q not one of %v: %w", t, Methods, ErrOptions)
}

// Sampling selects how inputs are sampled.
type Sampling string

const (
	// SamplingAuto uses row groups when the sample spans at least
	// MinSampleGroups row groups, single rows otherwise.
	SamplingAuto Sampling = "auto"
	// SamplingRowGroups reads a seeded random set of whole row groups
	// holding about SampleRate% of the rows. It reads only the sample, so
	// profile time grows with the sample; it assumes rows are not ordered
	// by anything that correlates with their IDs.
	SamplingRowGroups Sampling = "row-groups"
	// SamplingRows keeps each row with probability SampleRate/100, decided
	// by a keyed hash of its position. It reads every row's sparse columns.
	SamplingRows Sampling = "rows"
)

// MinSampleGroups is the number of row groups a row-group sample must
// span for SamplingAuto to choose it.
const MinSampleGroups = 16

// Optimizer names, which decide the bytes a hot row takes on the device.
const (
	// OptimizerSGD keeps no state: 4·dim bytes per row.
	OptimizerSGD = "sgd"
	// OptimizerAdagrad is row-wise Adagrad: one float32 accumulator per row,
	// 4·dim + 4 bytes per row.
	OptimizerAdagrad = "adagrad"
	// OptimizerAdagradFull is element-wise Adagrad: one accumulator per
	// value, 8·dim bytes per row.
	OptimizerAdagradFull = "adagrad-full"
)

// Options configures a profile. Zero-valued fields take the defaults of
// DefaultOptions when passed to Run or Analyze (Seed 0 is a valid seed).
type Options struct {
	// SampleRate is the share of inputs sampled, in percent, in (0, 100].
	// Default 5.
	SampleRate float64
	// Sampling chooses row-group or row sampling. Default SamplingAuto.
	Sampling Sampling
	// Budget is the device memory for hot embeddings (L), in bytes,
	// including optimizer state and the small tables kept whole.
	// Default 512 MiB.
	Budget int64
	// Confidence is the interval's coverage 1-α, in (0, 1). Default 0.999.
	Confidence float64
	// Chunks is n, the number of logger chunks drawn per table (>= 2).
	// Default 35.
	Chunks int
	// ChunkSize is m, the logger entries per chunk (>= 1). Default 1024.
	ChunkSize int
	// Method chooses the threshold rule. Default MethodTInterval.
	Method Method
	// Seed drives every random choice (sample, permutation, chunks).
	Seed uint64
	// ExtraRowBytes is optimizer state per row beyond what Optimizer
	// implies (a second row-wise accumulator: 4).
	ExtraRowBytes int64
	// Dim is the embedding dimension of every table not named in Dims.
	// Default 16.
	Dim int
	// Dims overrides Dim per table name (a shared table's name, otherwise
	// the feature's).
	Dims map[string]int
	// Optimizer is "sgd", "adagrad" (row-wise) or "adagrad-full"; it sets the
	// bytes per hot row (see BytesPerRow). Default "adagrad".
	Optimizer string
	// SmallTableBytes: a table whose rows·BytesPerRow is below it is hot
	// whole (its bytes still count against Budget). Default 1 MiB; a
	// negative value disables the rule.
	SmallTableBytes int64
	// NoPromote follows the paper strictly: when every row seen in the
	// sample fits the budget with room to spare, the threshold stops there.
	// By default the spare budget then takes whole tables (rows never
	// sampled included), most unseen accesses per byte first, so a budget
	// larger than the sampled rows still raises the share of hot inputs.
	NoPromote bool
	// ShareInputs caps the sampled inputs kept in memory to estimate the
	// share of hot inputs (each kept input costs 4 bytes per ID, 8 for
	// tables above 2^32 rows). Inputs are kept at random (keyed hash of their
	// position) at rate ShareInputs/expected sample size. Default 1<<16
	// (65,536 inputs: a standard error of the share of about 0.002, and a
	// counts file and analysis that do not grow with the sample); a
	// negative value keeps none (the share is then reported as -1).
	ShareInputs int64
	// Workers is the number of concurrent row-group readers. Default 2.
	Workers int
	// BatchRows is the reader's batch size in rows. Default 8192.
	BatchRows int
	// SkipBad drops malformed rows (counted in the result) instead of
	// failing.
	SkipBad bool
	// Progress, when set, is called after each batch with the rows read so
	// far and the rows the sample plan will read.
	Progress func(rowsDone, rowsTotal int64) `json:"-"`
}

// DefaultOptions returns the defaults listed on Options.
func DefaultOptions() Options {
	return Options{
		SampleRate:      5,
		Sampling:        SamplingAuto,
		Budget:          512 << 20,
		Confidence:      0.999,
		Chunks:          35,
		ChunkSize:       1024,
		Method:          MethodTInterval,
		Dim:             16,
		Optimizer:       OptimizerAdagrad,
		SmallTableBytes: 1 << 20,
		ShareInputs:     1 << 16,
		Workers:         2,
		BatchRows:       8192,
	}
}

// withDefaults fills zero-valued fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	o.SampleRate = cmp.Or(o.SampleRate, d.SampleRate)
	o.Sampling = cmp.Or(o.Sampling, d.Sampling)
	o.Budget = cmp.Or(o.Budget, d.Budget)
	o.Confidence = cmp.Or(o.Confidence, d.Confidence)
	o.Chunks = cmp.Or(o.Chunks, d.Chunks)
	o.ChunkSize = cmp.Or(o.ChunkSize, d.ChunkSize)
	o.Method = cmp.Or(o.Method, d.Method)
	o.Dim = cmp.Or(o.Dim, d.Dim)
	o.Optimizer = cmp.Or(o.Optimizer, d.Optimizer)
	o.SmallTableBytes = cmp.Or(o.SmallTableBytes, d.SmallTableBytes)
	o.ShareInputs = cmp.Or(o.ShareInputs, d.ShareInputs)
	o.Workers = cmp.Or(o.Workers, d.Workers)
	o.BatchRows = cmp.Or(o.BatchRows, d.BatchRows)
	return o
}

// Validate reports every problem of o at once, each wrapping ErrOptions.
// Zero values that withDefaults would fill are errors here, so validate
// the options Run and Analyze actually use (they fill defaults first).
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("profile: "+format+": %w", append(a, ErrOptions)...))
	}
	if !(o.SampleRate > 0 && o.SampleRate <= 100) {
		bad("sample rate %v%% is outside (0, 100]", o.SampleRate)
	}
	switch o.Sampling {
	case SamplingAuto, SamplingRowGroups, SamplingRows:
	default:
		bad("sampling %q is not %q, %q or %q", o.Sampling, SamplingAuto, SamplingRowGroups, SamplingRows)
	}
	if o.Budget <= 0 {
		bad("budget %d bytes is not positive", o.Budget)
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		bad("confidence %v is outside (0, 1)", o.Confidence)
	}
	if o.Chunks < 2 {
		bad("chunks n = %d, want at least 2 (the interval needs n-1 >= 1 degrees of freedom)", o.Chunks)
	}
	if o.ChunkSize < 1 {
		bad("chunk size m = %d, want at least 1", o.ChunkSize)
	}
	switch o.Method {
	case MethodTInterval, MethodExact, MethodTopK:
	default:
		bad("method %q is not %q, %q or %q", o.Method, MethodTInterval, MethodExact, MethodTopK)
	}
	if o.Dim <= 0 {
		bad("dim %d is not positive", o.Dim)
	}
	if o.ExtraRowBytes < 0 {
		bad("extra row bytes %d < 0", o.ExtraRowBytes)
	}
	names := make([]string, 0, len(o.Dims))
	for name := range o.Dims {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if d := o.Dims[name]; d <= 0 {
			bad("dims[%s] = %d is not positive", name, d)
		}
	}
	switch o.Optimizer {
	case OptimizerSGD, OptimizerAdagrad, OptimizerAdagradFull:
	default:
		bad("optimizer %q is not %q, %q or %q", o.Optimizer, OptimizerSGD, OptimizerAdagrad, OptimizerAdagradFull)
	}
	if o.Workers < 1 {
		bad("workers %d is not positive", o.Workers)
	}
	if o.BatchRows < 1 {
		bad("batch rows %d is not positive", o.BatchRows)
	}
	if math.IsNaN(o.SampleRate) || math.IsNaN(o.Confidence) {
		bad("NaN in sample rate or confidence")
	}
	return errors.Join(errs...)
}

// BytesPerRow returns the device bytes of one hot row of dimension dim with
// the named optimizer: the float32 weights plus the optimizer's state.
func BytesPerRow(dim int, optimizer string) int64 {
	d := int64(dim)
	switch optimizer {
	case OptimizerAdagrad:
		return 4*d + 4
	case OptimizerAdagradFull:
		return 8 * d
	default:
		return 4 * d
	}
}

// dimOf returns the dimension of the named table.
func (o *Options) dimOf(table string) int {
	if d, ok := o.Dims[table]; ok {
		return d
	}
	return o.Dim
}
