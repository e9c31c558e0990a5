package dataset

import (
	"errors"
	"fmt"
	"strings"
)

// IDMode says how the values of a sparse column map to embedding rows.
type IDMode string

const (
	// IDIndex: values are row indices in [0, rows); anything else is an error.
	IDIndex IDMode = "index"
	// IDHash: values are raw 64-bit IDs (hashes); row = mix(value) mod rows.
	IDHash IDMode = "hash"
)

// SparseFeature describes one sparse (categorical) column and the embedding
// table it looks up.
type SparseFeature struct {
	// Name is the Parquet column name.
	Name string `mapstructure:"name" json:"name" yaml:"name"`
	// Rows is the number of embedding rows of the feature's table.
	Rows int64 `mapstructure:"rows" json:"rows" yaml:"rows"`
	// Table names a shared embedding table; empty means the feature has its own.
	Table string `mapstructure:"table" json:"table,omitempty" yaml:"table,omitempty"`
	// MultiHot marks a list<int64> column (several IDs per input, sum-pooled).
	MultiHot bool `mapstructure:"multi_hot" json:"multi_hot,omitempty" yaml:"multi_hot,omitempty"`
	// IDs says how values map to rows: "index" (default) or "hash".
	IDs IDMode `mapstructure:"ids" json:"ids,omitempty" yaml:"ids,omitempty"`
}

// Spec is the data section of a configuration: where the data is and which
// columns mean what. gen and convert write one as dataset.yaml.
type Spec struct {
	// Train and Test are Parquet files or directories of them; relative paths
	// are resolved against the directory of the file that named them.
	Train string `mapstructure:"train" json:"train" yaml:"train"`
	Test  string `mapstructure:"test" json:"test,omitempty" yaml:"test,omitempty"`
	// Valid is the validation split (optional), evaluated during training
	// to keep the best model and to stop early; convert --split writes one.
	Valid string `mapstructure:"valid" json:"valid,omitempty" yaml:"valid,omitempty"`
	// Label is the 0/1 label column (int or float).
	Label string `mapstructure:"label" json:"label" yaml:"label"`
	// Dense are float32 feature columns, in model order.
	Dense []string `mapstructure:"dense" json:"dense" yaml:"dense"`
	// Sparse are the categorical features, in model order.
	Sparse []SparseFeature `mapstructure:"sparse" json:"sparse" yaml:"sparse"`
	// PTrue optionally names the generator's true click probability column.
	PTrue string `mapstructure:"p_true" json:"p_true,omitempty" yaml:"p_true,omitempty"`
	// Shuffled declares that the rows are in random order (no time, user or
	// ID ordering), so whole row groups are a random sample of rows. gen
	// sets it; logs in time order (Criteo, Avazu) must not.
	Shuffled bool `mapstructure:"shuffled" json:"shuffled,omitempty" yaml:"shuffled,omitempty"`
}

// Table is one embedding table after shared tables are resolved.
type Table struct {
	Name     string
	Rows     int64
	Features []int // indices into Spec.Sparse of the features that look it up
}

// Tables resolves shared tables: features naming the same Table share one
// (whose Rows is the largest asked for); others get a table of their own
// named after the feature. Order follows the first feature of each table.
func (s *Spec) Tables() []Table {
	var out []Table
	byName := map[string]int{}
	for i, f := range s.Sparse {
		name := f.Table
		if name == "" {
			name = f.Name
		}
		if j, ok := byName[name]; ok {
			out[j].Features = append(out[j].Features, i)
			if f.Rows > out[j].Rows {
				out[j].Rows = f.Rows
			}
			continue
		}
		byName[name] = len(out)
		out = append(out, Table{Name: name, Rows: f.Rows, Features: []int{i}})
	}
	return out
}

// FeatureTable returns, for each sparse feature, the index of its table in Tables().
func (s *Spec) FeatureTable() []int {
	ft := make([]int, len(s.Sparse))
	for ti, t := range s.Tables() {
		for _, f := range t.Features {
			ft[f] = ti
		}
	}
	return ft
}

// Validate reports every problem of the spec at once.
func (s *Spec) Validate() error {
	var errs []error
	if s.Train == "" {
		errs = append(errs, errors.New("data.train: no training data path"))
	}
	if s.Label == "" {
		errs = append(errs, errors.New("data.label: no label column"))
	}
	if len(s.Dense) == 0 && len(s.Sparse) == 0 {
		errs = append(errs, errors.New("data: no dense or sparse columns"))
	}
	seen := map[string]string{}
	claim := func(col, what string) {
		if col == "" {
			errs = append(errs, fmt.Errorf("data.%s: empty column name", what))
			return
		}
		if prev, ok := seen[col]; ok {
			errs = append(errs, fmt.Errorf("data.%s: column %q already used as %s", what, col, prev))
			return
		}
		seen[col] = what
	}
	if s.Label != "" {
		claim(s.Label, "label")
	}
	for i, d := range s.Dense {
		claim(d, fmt.Sprintf("dense[%d]", i))
	}
	for i, f := range s.Sparse {
		what := fmt.Sprintf("sparse[%d]", i)
		claim(f.Name, what)
		if f.Rows <= 0 {
			errs = append(errs, fmt.Errorf("data.%s (%s): rows must be > 0, got %d", what, f.Name, f.Rows))
		}
		switch f.IDs {
		case "", IDIndex, IDHash:
		default:
			errs = append(errs, fmt.Errorf("data.%s (%s): ids must be %q or %q, got %q", what, f.Name, IDIndex, IDHash, f.IDs))
		}
	}
	if s.PTrue != "" {
		claim(s.PTrue, "p_true")
	}
	return errors.Join(errs...)
}

// Columns lists every column the spec reads, label first, then dense, sparse
// and p_true (when named and includePTrue).
func (s *Spec) Columns(includePTrue bool) []string {
	cols := []string{s.Label}
	cols = append(cols, s.Dense...)
	for _, f := range s.Sparse {
		cols = append(cols, f.Name)
	}
	if includePTrue && s.PTrue != "" {
		cols = append(cols, s.PTrue)
	}
	return cols
}

// String is a one-line description for logs.
func (s *Spec) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "label=%s dense=%d sparse=%d", s.Label, len(s.Dense), len(s.Sparse))
	return b.String()
}

// HashID maps a raw 64-bit ID to a row of a table with rows rows
// (a splitmix64 finaliser, so nearby raw values land far apart).
func HashID(v int64, rows int64) int64 {
	z := uint64(v) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return int64(z % uint64(rows))
}
