package config

import (
	"errors"
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/profile"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// Config is everything a picasso run reads from its configuration.
type Config struct {
	Data      dataset.Spec `mapstructure:"data" yaml:"data" json:"data"`
	Model     Model        `mapstructure:"model" yaml:"model" json:"model"`
	Train     Train        `mapstructure:"train" yaml:"train" json:"train"`
	FAE       FAE          `mapstructure:"fae" yaml:"fae" json:"fae"`
	Scheduler Scheduler    `mapstructure:"scheduler" yaml:"scheduler" json:"scheduler"`
	// HybridHash configures train mode hybridhash.
	HybridHash HybridHash `mapstructure:"hybridhash" yaml:"hybridhash" json:"hybridhash"`
}

// HybridHash holds the settings of PICASSO's HybridHash (seeds/000 §III-D),
// train mode hybridhash.
type HybridHash struct {
	// DeviceBudget is the device memory for the hot store: hot rows and
	// their optimizer state, each table's default row and one mini-batch's
	// missed rows; k, the hot rows, is what is left after the last two.
	DeviceBudget ByteSize `mapstructure:"device_budget" yaml:"device_budget" json:"device_budget"`
	// HostBudget bounds the host tier; rows beyond it spill to disk.
	HostBudget ByteSize `mapstructure:"host_budget" yaml:"host_budget" json:"host_budget"`
	// WarmupIters: steps served from the cold storage while the counter
	// warms up; FlushIters: steps between refreshes of the hot set;
	// DecayIters: steps between halvings of the counts (0: 4 × flush_iters).
	WarmupIters int64 `mapstructure:"warmup_iters" yaml:"warmup_iters" json:"warmup_iters"`
	FlushIters  int64 `mapstructure:"flush_iters" yaml:"flush_iters" json:"flush_iters"`
	DecayIters  int64 `mapstructure:"decay_iters" yaml:"decay_iters" json:"decay_iters"`
	// AdmitAfter: sightings before an unknown ID gets a row of its own
	// (until then it shares its table's default row).
	AdmitAfter int `mapstructure:"admit_after" yaml:"admit_after" json:"admit_after"`
	// DiskDir holds the disk tier (empty: RUN/hybridhash-disk).
	DiskDir string `mapstructure:"disk_dir" yaml:"disk_dir" json:"disk_dir"`
	// SketchWidth is the count-min sketch's counters per hash row.
	SketchWidth int `mapstructure:"sketch_width" yaml:"sketch_width" json:"sketch_width"`
}

// Model is the network's shape.
type Model struct {
	// Arch is the model: "dcn" (DCN-v2, the default), "dlrm", "wdl"
	// (Wide&Deep) or "deepfm".
	Arch string `mapstructure:"arch" yaml:"arch" json:"arch"`
	// EmbeddingDim is the embedding dimension of every sparse feature.
	EmbeddingDim int `mapstructure:"embedding_dim" yaml:"embedding_dim" json:"embedding_dim"`
	// BottomMLP lists the bottom MLP's layer widths after the dense input,
	// e.g. [512, 256, 64, 16] for 13-512-256-64-16; the last must equal
	// EmbeddingDim for the dot interaction.
	BottomMLP []int `mapstructure:"bottom_mlp" yaml:"bottom_mlp" json:"bottom_mlp"`
	// TopMLP lists DLRM's top MLP widths after the derived interaction
	// width, ending in 1, e.g. [512, 256, 1].
	TopMLP []int `mapstructure:"top_mlp" yaml:"top_mlp" json:"top_mlp"`
	// Interaction is DLRM's "dot" (pairwise dot products below the
	// diagonal plus the bottom output) or "cat" (concatenation).
	Interaction string `mapstructure:"interaction" yaml:"interaction" json:"interaction"`
	// DeepMLP lists the deep MLP's widths of wdl, dcn and deepfm after
	// their input (the dense features and the pooled embeddings), ending
	// in 1, e.g. [256, 128, 1].
	DeepMLP []int `mapstructure:"deep_mlp" yaml:"deep_mlp" json:"deep_mlp"`
	// CrossLayers is the number of DCN-v2 cross layers, stacked before the
	// deep MLP.
	CrossLayers int `mapstructure:"cross_layers" yaml:"cross_layers" json:"cross_layers"`
	// DenseNorm is how the dense features enter the model: "standardize"
	// (the default: minus the training rows' mean, over their standard
	// deviation, both computed when training starts and kept with the
	// model) or "none" (as the data holds them).
	DenseNorm string `mapstructure:"dense_norm" yaml:"dense_norm" json:"dense_norm"`
	// DenseWide puts the dense features in the wide part of wdl and deepfm
	// too: a first-order weight each and, for deepfm, an FM field each (a
	// vector of embedding_dim factors scaled by the feature's value).
	DenseWide bool `mapstructure:"dense_wide" yaml:"dense_wide" json:"dense_wide"`
}

// Train holds the optimisation and run settings.
type Train struct {
	Mode      train.Mode `mapstructure:"mode" yaml:"mode" json:"mode"`
	BatchSize int        `mapstructure:"batch_size" yaml:"batch_size" json:"batch_size"`
	Epochs    float64    `mapstructure:"epochs" yaml:"epochs" json:"epochs"`
	// Steps, when > 0, stops after that many mini-batches (overrides Epochs).
	Steps int64 `mapstructure:"steps" yaml:"steps" json:"steps"`
	// Optimizer is the embeddings' "sgd" or "adagrad" (row-wise), at
	// LearningRate.
	Optimizer    train.Optimizer `mapstructure:"optimizer" yaml:"optimizer" json:"optimizer"`
	LearningRate float64         `mapstructure:"learning_rate" yaml:"learning_rate" json:"learning_rate"`
	// AdagradEps is row-wise Adagrad's term in the embeddings' step,
	// lr·g/(sqrt(acc)+eps). Against gradients of a mean loss, a row met
	// once in a mini-batch of 1024 has sqrt(acc) near 1e-4, so an eps of
	// that order damps the first steps of rarely seen rows.
	AdagradEps float64 `mapstructure:"adagrad_eps" yaml:"adagrad_eps" json:"adagrad_eps"`
	// DenseOptimizer is the MLPs' "sgd", "adagrad" or "adam", at
	// DenseLearningRate; empty and 0 take Optimizer and LearningRate.
	DenseOptimizer    train.Optimizer `mapstructure:"dense_optimizer" yaml:"dense_optimizer" json:"dense_optimizer"`
	DenseLearningRate float64         `mapstructure:"dense_learning_rate" yaml:"dense_learning_rate" json:"dense_learning_rate"`
	// WeightDecay (embedding rows a batch looks up) and DenseWeightDecay
	// (MLP weights) are L2 decays added to the gradients.
	WeightDecay      float64 `mapstructure:"weight_decay" yaml:"weight_decay" json:"weight_decay"`
	DenseWeightDecay float64 `mapstructure:"dense_weight_decay" yaml:"dense_weight_decay" json:"dense_weight_decay"`
	// EarlyStop stops after that many validations in a row without a
	// better validation log loss (0: never; needs data.valid).
	EarlyStop int `mapstructure:"early_stop" yaml:"early_stop" json:"early_stop"`
	// WarmupSteps ramps the rate linearly from 0; DecayStart/DecaySteps apply
	// polynomial (power 2) decay to 0 over DecaySteps steps from DecayStart.
	WarmupSteps int64 `mapstructure:"warmup_steps" yaml:"warmup_steps" json:"warmup_steps"`
	DecayStart  int64 `mapstructure:"decay_start" yaml:"decay_start" json:"decay_start"`
	DecaySteps  int64 `mapstructure:"decay_steps" yaml:"decay_steps" json:"decay_steps"`
	// DecayFraction, when DecaySteps is 0, decays both rates the same way
	// over that last fraction of the run's steps, whatever the data's size
	// (0: no decay).
	DecayFraction float64 `mapstructure:"decay_fraction" yaml:"decay_fraction" json:"decay_fraction"`
	// EvalEvery evaluates on the test set every that many steps (0: only at the end).
	EvalEvery int64  `mapstructure:"eval_every" yaml:"eval_every" json:"eval_every"`
	Seed      uint64 `mapstructure:"seed" yaml:"seed" json:"seed"`
	// MicroBatches splits each mini-batch into that many parts.
	MicroBatches int `mapstructure:"micro_batches" yaml:"micro_batches" json:"micro_batches"`
	// Prefetch is the number of decoded mini-batches read ahead.
	Prefetch int `mapstructure:"prefetch" yaml:"prefetch" json:"prefetch"`
	// Packing runs the embedding lookups and sparse updates of all tables of
	// one dimension as one packed kernel call (PICASSO's D-packing, the
	// default); false runs one call per table. Results are identical; only
	// the speed differs (for the packing ablation of picasso bench).
	Packing bool `mapstructure:"packing" yaml:"packing" json:"packing"`
	// Threads bounds the compute threads (0: all cores).
	Threads int `mapstructure:"threads" yaml:"threads" json:"threads"`
	// BLAS picks the GEMM: "auto", "openblas", "gonum" or "ref".
	BLAS compute.BLAS `mapstructure:"blas" yaml:"blas" json:"blas"`
	// Device is what the modes other than cpu put their device part on:
	// "auto" (a GPU when one is found, else the device emulated in host
	// memory), "emulated", "cuda" or "cuda:N", or "cpu" (no device: mode
	// cpu only).
	Device Device `mapstructure:"device" yaml:"device" json:"device"`
	// TF32 lets a GPU run the float32 GEMMs on tensor cores at TF32
	// precision (10 mantissa bits); off by default.
	TF32 bool `mapstructure:"tf32" yaml:"tf32" json:"tf32"`
	// CheckpointEvery writes a checkpoint every that many steps (0: only at the end and on interrupt).
	CheckpointEvery int64 `mapstructure:"checkpoint_every" yaml:"checkpoint_every" json:"checkpoint_every"`
}

// FAE holds the profiling settings (seeds/001 §4.1).
type FAE struct {
	// SampleRate is the percentage of inputs the profiler reads (x in Eq. 1).
	SampleRate float64 `mapstructure:"sample_rate" yaml:"sample_rate" json:"sample_rate"`
	// Budget is the device memory for hot rows and their optimizer state (L).
	Budget ByteSize `mapstructure:"budget" yaml:"budget" json:"budget"`
	// Confidence of the t-interval (1-α).
	Confidence float64 `mapstructure:"confidence" yaml:"confidence" json:"confidence"`
	// Chunks (n) and ChunkSize (m) of the chunk estimator.
	Chunks    int `mapstructure:"chunks" yaml:"chunks" json:"chunks"`
	ChunkSize int `mapstructure:"chunk_size" yaml:"chunk_size" json:"chunk_size"`
	// Method is "tinterval", "exact" or "topk".
	Method profile.Method `mapstructure:"method" yaml:"method" json:"method"`
	// SmallTable: tables under this size are hot whole.
	SmallTable ByteSize `mapstructure:"small_table" yaml:"small_table" json:"small_table"`
	// PromoteTables spends the budget left once every sampled row is hot on
	// whole tables (false: stop where the paper's search stops).
	PromoteTables bool `mapstructure:"promote_tables" yaml:"promote_tables" json:"promote_tables"`
}

// Scheduler holds the Shuffle Scheduler's settings (seeds/001 §4.3, Eq. 5).
type Scheduler struct {
	// InitialRate is r at the start, in percent of each class per phase.
	InitialRate float64 `mapstructure:"initial_rate" yaml:"initial_rate" json:"initial_rate"`
	MinRate     float64 `mapstructure:"min_rate" yaml:"min_rate" json:"min_rate"`
	MaxRate     float64 `mapstructure:"max_rate" yaml:"max_rate" json:"max_rate"`
	// Patience is u: consecutive falls of the evaluation loss before r doubles.
	Patience int `mapstructure:"patience" yaml:"patience" json:"patience"`
	// EvalRows is the size of the fixed held-out set the scheduler evaluates on.
	EvalRows int `mapstructure:"eval_rows" yaml:"eval_rows" json:"eval_rows"`
}

// Default returns the configuration every setting starts from.
func Default() Config {
	return Config{
		Data: dataset.Spec{Label: "label"},
		// DCN-v2 with row-wise Adagrad on the embeddings and Adam on the
		// MLPs: the recipe that trains well at batch 1024 in one epoch (see
		// the README's "Models and recipes").
		Model: Model{
			Arch: train.ArchDCN, EmbeddingDim: 16,
			BottomMLP: []int{512, 256, 64, 16}, TopMLP: []int{512, 256, 1},
			Interaction: "dot", DeepMLP: []int{256, 128, 1}, CrossLayers: 2,
			DenseNorm: train.DenseNormStandardize,
		},
		Train: Train{
			Mode: "fae", BatchSize: 1024, Epochs: 1, Optimizer: "adagrad", LearningRate: 0.1, AdagradEps: 1e-3,
			DenseOptimizer: "adam", DenseLearningRate: 0.001,
			Seed: 1, MicroBatches: 1, Prefetch: 4, Packing: true, BLAS: "auto", Device: DeviceAuto,
		},
		FAE: FAE{
			SampleRate: 5, Budget: 512 << 20, Confidence: 0.999, Chunks: 35, ChunkSize: 1024,
			Method: "tinterval", SmallTable: 1 << 20, PromoteTables: true,
		},
		Scheduler: Scheduler{InitialRate: 50, MinRate: 1, MaxRate: 100, Patience: 4, EvalRows: 16384},
		HybridHash: HybridHash{DeviceBudget: 64 << 20, HostBudget: 1 << 30, WarmupIters: 100, FlushIters: 1000,
			AdmitAfter: 2, SketchWidth: 1 << 18},
	}
}

func oneOf(v string, opts ...string) bool {
	for _, o := range opts {
		if v == o {
			return true
		}
	}
	return false
}

// ValidateModel checks the model, train, fae and scheduler sections (not the
// data section), reporting every problem at once.
func (c *Config) ValidateModel() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("config: "+format, a...)) }
	m := c.Model
	if !oneOf(m.Arch, train.Archs...) {
		bad("model.arch: %q is not one of %v", m.Arch, train.Archs)
	}
	if m.EmbeddingDim <= 0 {
		bad("model.embedding_dim: must be > 0, got %d", m.EmbeddingDim)
	}
	if m.DenseWide && m.Arch != train.ArchWDL && m.Arch != train.ArchDeepFM {
		bad("model.dense_wide: only wdl and deepfm have a wide part, not %q", m.Arch)
	}
	if !oneOf(m.DenseNorm, train.DenseNorms...) {
		bad("model.dense_norm: %q is not one of %v", m.DenseNorm, train.DenseNorms)
	}
	if m.Arch == train.ArchDLRM {
		if len(m.BottomMLP) == 0 {
			bad("model.bottom_mlp: needs at least one layer")
		}
		if len(m.TopMLP) == 0 || m.TopMLP[len(m.TopMLP)-1] != 1 {
			bad("model.top_mlp: must end in 1, got %v", m.TopMLP)
		}
		for _, w := range append(append([]int{}, m.BottomMLP...), m.TopMLP...) {
			if w <= 0 {
				bad("model: layer widths must be > 0, got %v / %v", m.BottomMLP, m.TopMLP)
				break
			}
		}
		if !oneOf(m.Interaction, "dot", "cat") {
			bad("model.interaction: %q (want dot or cat)", m.Interaction)
		}
		if m.Interaction == "dot" && len(m.BottomMLP) > 0 && m.BottomMLP[len(m.BottomMLP)-1] != m.EmbeddingDim {
			bad("model.bottom_mlp: last width %d must equal model.embedding_dim %d for the dot interaction", m.BottomMLP[len(m.BottomMLP)-1], m.EmbeddingDim)
		}
	} else {
		if len(m.DeepMLP) == 0 || m.DeepMLP[len(m.DeepMLP)-1] != 1 {
			bad("model.deep_mlp: must end in 1, got %v", m.DeepMLP)
		}
		for _, w := range m.DeepMLP {
			if w <= 0 {
				bad("model.deep_mlp: layer widths must be > 0, got %v", m.DeepMLP)
				break
			}
		}
	}
	if m.CrossLayers < 0 || m.CrossLayers > 16 {
		bad("model.cross_layers: must be in [0, 16], got %d", m.CrossLayers)
	}
	t := c.Train
	if err := new(train.Mode).UnmarshalText([]byte(t.Mode)); err != nil {
		bad("train.mode: %q (want one of %v)", t.Mode, train.Modes)
	}
	if t.BatchSize <= 0 {
		bad("train.batch_size: must be > 0, got %d", t.BatchSize)
	}
	if t.Epochs < 0 || t.Steps < 0 || (t.Epochs == 0 && t.Steps == 0) {
		bad("train: set epochs > 0 or steps > 0 (got epochs %v, steps %d)", t.Epochs, t.Steps)
	}
	if !oneOf(string(t.Optimizer), optNames(train.EmbeddingOptimizers)...) {
		bad("train.optimizer: %q (want one of %v for the embeddings; adam is for train.dense_optimizer)", t.Optimizer, train.EmbeddingOptimizers)
	}
	if t.LearningRate <= 0 {
		bad("train.learning_rate: must be > 0, got %v", t.LearningRate)
	}
	if !(t.AdagradEps > 0) || t.AdagradEps > 1 {
		bad("train.adagrad_eps: must be in (0, 1], got %v", t.AdagradEps)
	}
	if t.DenseOptimizer != "" && !oneOf(string(t.DenseOptimizer), optNames(train.Optimizers)...) {
		bad("train.dense_optimizer: %q (want one of %v, or empty for train.optimizer)", t.DenseOptimizer, train.Optimizers)
	}
	if t.DenseLearningRate < 0 {
		bad("train.dense_learning_rate: must be >= 0 (0: train.learning_rate), got %v", t.DenseLearningRate)
	}
	if t.WeightDecay < 0 || t.DenseWeightDecay < 0 {
		bad("train.weight_decay and train.dense_weight_decay: must be >= 0, got %v and %v", t.WeightDecay, t.DenseWeightDecay)
	}
	if t.EarlyStop < 0 {
		bad("train.early_stop: must be >= 0, got %d", t.EarlyStop)
	}
	if t.DecayFraction < 0 || t.DecayFraction > 1 {
		bad("train.decay_fraction: must be in [0, 1], got %v", t.DecayFraction)
	}
	if t.MicroBatches < 1 || t.BatchSize > 0 && t.MicroBatches > t.BatchSize { // a bad batch size is said once
		bad("train.micro_batches: must be in [1, batch_size], got %d", t.MicroBatches)
	}
	if t.Prefetch < 0 {
		bad("train.prefetch: must be >= 0, got %d", t.Prefetch)
	}
	if err := new(Device).UnmarshalText([]byte(t.Device)); err != nil {
		bad("train.device: %v", err)
	}
	if err := new(compute.BLAS).UnmarshalText([]byte(t.BLAS)); err != nil {
		bad("train.blas: %q (want one of %v)", t.BLAS, compute.BLASChoices)
	}
	f := c.FAE
	if f.SampleRate <= 0 || f.SampleRate > 100 {
		bad("fae.sample_rate: must be in (0, 100] percent, got %v", f.SampleRate)
	}
	if f.Budget <= 0 {
		bad("fae.budget: must be > 0, got %v", f.Budget)
	}
	if f.Confidence <= 0 || f.Confidence >= 1 {
		bad("fae.confidence: must be in (0, 1), got %v", f.Confidence)
	}
	if f.Chunks < 2 {
		bad("fae.chunks: must be >= 2, got %d", f.Chunks)
	}
	if f.ChunkSize < 1 {
		bad("fae.chunk_size: must be >= 1, got %d", f.ChunkSize)
	}
	if err := new(profile.Method).UnmarshalText([]byte(f.Method)); err != nil {
		bad("fae.method: %q (want one of %v)", f.Method, profile.Methods)
	}
	s := c.Scheduler
	if s.MinRate < 1 || s.MaxRate > 100 || s.MinRate > s.MaxRate {
		bad("scheduler: rates must satisfy 1 <= min_rate <= max_rate <= 100, got %v..%v", s.MinRate, s.MaxRate)
	}
	if s.InitialRate < s.MinRate || s.InitialRate > s.MaxRate {
		bad("scheduler.initial_rate: %v outside [%v, %v]", s.InitialRate, s.MinRate, s.MaxRate)
	}
	if s.Patience < 1 {
		bad("scheduler.patience: must be >= 1, got %d", s.Patience)
	}
	if s.EvalRows < 1 {
		bad("scheduler.eval_rows: must be >= 1, got %d", s.EvalRows)
	}
	h := c.HybridHash
	if h.DeviceBudget <= 0 || h.HostBudget <= 0 {
		bad("hybridhash: device_budget and host_budget must be > 0, got %v and %v", h.DeviceBudget, h.HostBudget)
	}
	if h.WarmupIters < 0 || h.FlushIters < 1 || h.DecayIters < 0 {
		bad("hybridhash: warmup_iters %d, flush_iters %d, decay_iters %d (want >= 0, >= 1, >= 0)", h.WarmupIters, h.FlushIters, h.DecayIters)
	}
	if h.AdmitAfter < 1 || h.SketchWidth < 1 {
		bad("hybridhash: admit_after %d and sketch_width %d must be >= 1", h.AdmitAfter, h.SketchWidth)
	}
	return errors.Join(errs...)
}

// Validate checks every section.
func (c *Config) Validate() error {
	var errs []error
	if err := c.Data.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.ValidateModel(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// TrainerOptions returns the run settings of the model, train and
// scheduler sections as train.Options; the caller adds the data, the
// backends and the run directory.
func (c *Config) TrainerOptions() train.Options {
	t, s := c.Train, c.Scheduler
	return train.Options{
		Mode:      t.Mode,
		Model:     c.ModelOptions(),
		Optimizer: t.Optimizer,
		LR:        train.LRSchedule{Base: t.LearningRate, WarmupSteps: t.WarmupSteps, DecayStart: t.DecayStart, DecaySteps: t.DecaySteps},
		// The MLPs' schedule has the embeddings' warm-up and decay.
		DenseOptimizer: t.DenseOptimizer,
		DenseLR:        train.LRSchedule{Base: t.DenseLearningRate, WarmupSteps: t.WarmupSteps, DecayStart: t.DecayStart, DecaySteps: t.DecaySteps},
		AdagradEps:     t.AdagradEps,
		WeightDecay:    t.WeightDecay, DenseWeightDecay: t.DenseWeightDecay, EarlyStop: t.EarlyStop,
		DecayFraction: t.DecayFraction,
		BatchSize:     t.BatchSize, Epochs: t.Epochs, Steps: t.Steps,
		EvalEvery: t.EvalEvery, CheckpointEvery: t.CheckpointEvery, Seed: t.Seed,
		MicroBatches: t.MicroBatches, Prefetch: t.Prefetch, Unpacked: !t.Packing,
		Scheduler:         train.SchedulerOptions{InitialRate: s.InitialRate, MinRate: s.MinRate, MaxRate: s.MaxRate, Patience: s.Patience},
		SchedulerEvalRows: s.EvalRows,
		HybridHash: train.HybridHashOptions{DeviceBytes: int64(c.HybridHash.DeviceBudget), HostBytes: int64(c.HybridHash.HostBudget),
			DiskDir: c.HybridHash.DiskDir, WarmupIters: c.HybridHash.WarmupIters, FlushIters: c.HybridHash.FlushIters,
			DecayIters: c.HybridHash.DecayIters, AdmitAfter: c.HybridHash.AdmitAfter, SketchWidth: c.HybridHash.SketchWidth},
	}
}

// ModelOptions returns the model section as train.ModelOptions: DLRM's
// bottom and top MLPs and interaction, or the deep MLP (and cross layers)
// of the other models.
func (c *Config) ModelOptions() train.ModelOptions {
	m := c.Model
	if m.Arch == train.ArchDLRM || m.Arch == "" {
		return train.ModelOptions{Arch: train.ArchDLRM, Dim: m.EmbeddingDim, Bottom: m.BottomMLP, Top: m.TopMLP, Interaction: m.Interaction, DenseNorm: m.DenseNorm}
	}
	o := train.ModelOptions{Arch: m.Arch, Dim: m.EmbeddingDim, Top: m.DeepMLP, DenseNorm: m.DenseNorm, DenseWide: m.DenseWide}
	if m.Arch == train.ArchDCN {
		o.Cross = m.CrossLayers
	}
	return o
}

// RowDim is the width of a stored embedding row: the embedding dimension,
// plus the first-order weight of Wide&Deep and DeepFM.
func (m Model) RowDim() int {
	if m.Arch == train.ArchWDL || m.Arch == train.ArchDeepFM {
		return m.EmbeddingDim + 1
	}
	return m.EmbeddingDim
}

func optNames(opts []train.Optimizer) []string {
	out := make([]string, len(opts))
	for i, o := range opts {
		out[i] = string(o)
	}
	return out
}
