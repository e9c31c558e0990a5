package train

import (
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// Mode is a placement mode: where the embedding tables and the MLPs live.
type Mode string

// Placement modes.
const (
	ModeFAE      Mode = "fae"
	ModeHybrid   Mode = "hybrid"
	ModeDevice   Mode = "device"
	ModeCPU      Mode = "cpu"
	ModeArtifact Mode = "artifact"
	// ModeHybridHash trains on raw data with no profile: PICASSO's
	// HybridHash keeps the most frequent rows on the device and the rest
	// in host memory and on disk (seeds/000 §III-D).
	ModeHybridHash Mode = "hybridhash"
)

// Modes lists the placement modes, in the order help texts show them.
var Modes = []Mode{ModeFAE, ModeArtifact, ModeHybrid, ModeDevice, ModeCPU, ModeHybridHash}

// String returns the mode's name.
func (m Mode) String() string { return string(m) }

// UnmarshalText implements encoding.TextUnmarshaler: it accepts the name of
// a mode.
func (m *Mode) UnmarshalText(b []byte) error {
	for _, v := range Modes {
		if string(b) == string(v) {
			*m = v
			return nil
		}
	}
	return fmt.Errorf("train: mode %q is not one of %v: %w", b, Modes, ErrInvalidOptions)
}

// MarshalText implements encoding.TextMarshaler.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m), nil }

// NeedsLayout reports whether the mode trains on a FAE layout's hot and
// cold mini-batches in phases (fae, artifact).
func (m Mode) NeedsLayout() bool { return m == ModeFAE || m == ModeArtifact }

// NeedsDevice reports whether the mode places anything on the device
// (every mode but cpu).
func (m Mode) NeedsDevice() bool { return m != ModeCPU }

// Optimizer is a training optimizer: SGD, Adagrad (row-wise for the
// embeddings, elementwise for the MLPs) or Adam (the MLPs only).
type Optimizer string

// Optimizers.
const (
	OptSGD     Optimizer = "sgd"
	OptAdagrad Optimizer = "adagrad"
	OptAdam    Optimizer = "adam"
)

// Optimizers lists the optimizers; EmbeddingOptimizers those that update
// embedding rows.
var (
	Optimizers          = []Optimizer{OptSGD, OptAdagrad, OptAdam}
	EmbeddingOptimizers = []Optimizer{OptSGD, OptAdagrad}
)

// compute returns the compute package's name of the rule.
func (o Optimizer) compute() compute.Optimizer {
	switch o {
	case OptAdagrad:
		return compute.OptAdagrad
	case OptAdam:
		return compute.OptAdam
	}
	return compute.OptSGD
}

// String returns the optimizer's name.
func (o Optimizer) String() string { return string(o) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *Optimizer) UnmarshalText(b []byte) error {
	for _, v := range Optimizers {
		if string(b) == string(v) {
			*o = v
			return nil
		}
	}
	return fmt.Errorf("train: optimizer %q is not one of %v: %w", b, Optimizers, ErrInvalidOptions)
}

// MarshalText implements encoding.TextMarshaler.
func (o Optimizer) MarshalText() ([]byte, error) { return []byte(o), nil }
