package gen

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Preset describes one shape of synthetic data that Run can write: the
// features and table sizes of a public click log, the skew of its embedding
// accesses, its click rate and the model FAE trains on it (seeds/001 Table 2).
type Preset struct {
	Name        string
	Description string
	// Dense and Sparse are the column names, in model order.
	Dense  []string
	Sparse []string
	// Cardinalities are the rows of each sparse feature's table at scale 1.
	Cardinalities []int64
	// Exponents are each table's Zipf exponent: the r-th most popular row of
	// a table is accessed with probability proportional to r^-s.
	Exponents []float64
	// TargetCTR is the click rate the generator calibrates to.
	TargetCTR float64
	// DefaultRows is the number of rows written when Options.Rows is 0.
	DefaultRows int64
	// Model is the model configuration suggested for the data.
	Model ModelHint
}

// ModelHint is the model a preset's data is meant for: FAE's RMC2, RMC3 and
// RMC4 shapes (seeds/001 Table 2), or a small DLRM for the demo.
type ModelHint struct {
	// Name is the model's short name ("rmc2") and Config the ready
	// configuration in configs/ that trains it ("rmc2-kaggle").
	Name, Config string
	// EmbeddingDim is the width of every embedding row.
	EmbeddingDim int
	// BottomMLP and TopMLP are the layer widths after the dense input and
	// after the interaction, as in config.Model.
	BottomMLP, TopMLP []int
}

// MinScaledRows is the smallest table Scale shrinks to: a table with at most
// this many rows (a categorical of a few values) is never scaled, and a
// larger one is never scaled below it, so that no feature degenerates into a
// constant and the small, well-learnable tables keep their character.
const MinScaledRows = 32

// TableRows returns the rows of each table at scale: round(card*scale), but
// tables of at most MinScaledRows rows keep their size and no other table
// drops below MinScaledRows.
func (p *Preset) TableRows(scale float64) []int64 {
	out := make([]int64, len(p.Cardinalities))
	for i, c := range p.Cardinalities {
		out[i] = scaleTableRows(c, scale)
	}
	return out
}

func scaleTableRows(card int64, scale float64) int64 {
	if card <= MinScaledRows {
		return card
	}
	return max(MinScaledRows, int64(math.Round(float64(card)*scale)))
}

// HotSet is the analytic skew of a preset: the hot rows are those whose
// access probability is at least Cutoff, in every table alike (as FAE's
// threshold, a share of each table's accesses, picks them), and an input is
// hot when all its IDs are hot. Tables are sampled independently, so
// InputShare is the product over tables of the share of accesses that hit
// hot rows.
type HotSet struct {
	Cutoff float64
	// Rows is the number of hot rows over all tables.
	Rows int64
	// InputShare is the expected share of inputs that touch only hot rows.
	InputShare float64
}

// HotSetFor returns the largest hot set, at the given scale, that holds at
// most maxRows rows (for example budget / (4 bytes · dim)).
func (p *Preset) HotSetFor(scale float64, maxRows int64) HotSet {
	rows := p.TableRows(scale)
	sums := make([]powerSums, len(rows))
	for t := range rows {
		sums[t] = newPowerSums(p.Exponents[t])
	}
	at := func(cut float64) HotSet {
		h := HotSet{Cutoff: cut, InputShare: 1}
		for t, k := range hotRanks(rows, sums, cut) {
			h.Rows += k
			h.InputShare *= sums[t].sum(k) / sums[t].sum(rows[t])
		}
		return h
	}
	// Hot rows fall as the cutoff rises; bisect on log(cutoff).
	lo, hi := math.Log(1e-15), math.Log(1.0)
	if at(math.Exp(lo)).Rows <= maxRows {
		return at(math.Exp(lo))
	}
	for range 100 {
		mid := (lo + hi) / 2
		if at(math.Exp(mid)).Rows <= maxRows {
			hi = mid
		} else {
			lo = mid
		}
	}
	return at(math.Exp(hi))
}

// hotRanks returns, per table, how many of the most popular rows have an
// access probability of at least cut: rank r is hot when r^-s / H(n) >= cut.
func hotRanks(rows []int64, sums []powerSums, cut float64) []int64 {
	out := make([]int64, len(rows))
	for t, n := range rows {
		s := sums[t].s
		k := int64(math.Floor(math.Pow(cut*sums[t].sum(n), -1/s) * (1 + 1e-12)))
		out[t] = min(max(k, 0), n)
	}
	return out
}

// powerSums gives the generalised harmonic numbers H(n) = sum_{r=1..n} r^-s:
// exact up to powerSumsExact terms, then by the midpoint integral, whose
// relative error is below 1e-9.
type powerSums struct {
	s      float64
	prefix []float64 // prefix[n] = H(n)
}

const powerSumsExact = 4096

func newPowerSums(s float64) powerSums {
	p := powerSums{s: s, prefix: make([]float64, powerSumsExact+1)}
	for r := 1; r <= powerSumsExact; r++ {
		p.prefix[r] = p.prefix[r-1] + math.Pow(float64(r), -s)
	}
	return p
}

func (p *powerSums) sum(n int64) float64 {
	if n <= powerSumsExact {
		return p.prefix[max(n, 0)]
	}
	a, b := float64(powerSumsExact)+0.5, float64(n)+0.5
	if math.Abs(p.s-1) < 1e-12 {
		return p.prefix[powerSumsExact] + math.Log(b/a)
	}
	return p.prefix[powerSumsExact] + (math.Pow(b, 1-p.s)-math.Pow(a, 1-p.s))/(1-p.s)
}

// denseKind says how a dense feature is drawn.
type denseKind int

const (
	// denseCount: a heavy-tailed count, 0 with probability zero, otherwise
	// floor(lognormal(mu, sigma)) with the log correlated (rho) with a
	// per-row activity factor; written as log(1+count), as convert writes
	// Criteo's integer features.
	denseCount denseKind = iota
	// denseCycle: a position in a cycle of period values (hour of the day,
	// day of the week), v = 0..period-1 drawn with weight
	// 1 + amp·cos(2π(v-peak)/period) and written as v/(period-1) in [0, 1],
	// as convert writes Avazu's hour.
	denseCycle
)

type denseDef struct {
	kind                 denseKind
	zero, mu, sigma, rho float64 // denseCount
	period, peak         int     // denseCycle
	amp                  float64 // denseCycle
}

// presetDef is a preset with the generator's private settings.
type presetDef struct {
	Preset
	dense []denseDef
	// logitStd is the standard deviation of the planted logit (before the
	// bias), which sets the oracle AUC; share splits its variance between the
	// model's terms, in the order of the comp* constants.
	logitStd float64
	share    [nComp]float64
}

func countFeature(zero, mu, sigma, rho float64) denseDef {
	return denseDef{kind: denseCount, zero: zero, mu: mu, sigma: sigma, rho: rho}
}

// criteoDense imitates Criteo's 13 integer features: many zeros (missing
// values become 0), long tails, and correlated magnitudes.
var criteoDense = []denseDef{
	countFeature(0.45, 1.0, 1.2, 0.5),
	countFeature(0.05, 2.0, 1.8, 0.3),
	countFeature(0.25, 2.3, 1.3, 0.6),
	countFeature(0.22, 1.6, 1.0, 0.6),
	countFeature(0.03, 7.5, 2.0, 0.4),
	countFeature(0.22, 3.5, 1.6, 0.5),
	countFeature(0.05, 1.8, 1.4, 0.7),
	countFeature(0.02, 2.4, 1.0, 0.2),
	countFeature(0.05, 4.0, 1.3, 0.7),
	countFeature(0.45, 0.3, 0.6, 0.3),
	countFeature(0.05, 1.0, 1.0, 0.6),
	countFeature(0.77, 0.5, 1.0, 0.4),
	countFeature(0.22, 1.9, 1.1, 0.6),
}

func numberedNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i+1)
	}
	return out
}

// Variance shares of the planted model's terms (dense linear, dense
// nonlinear, per-ID effects, table×table interactions, dense×table
// interactions). Most of the signal sits in the dense features, the popular
// IDs and the small tables, which a model can learn from a few million rows.
var (
	criteoShare = [nComp]float64{0.30, 0.08, 0.35, 0.17, 0.10}
	avazuShare  = [nComp]float64{0.08, 0.05, 0.50, 0.25, 0.12}
)

// presetDefs builds the presets afresh, so callers may keep and change what
// they are given.
func presetDefs() map[string]*presetDef {
	rmc2 := ModelHint{Name: "rmc2", Config: "rmc2-kaggle", EmbeddingDim: 16,
		BottomMLP: []int{512, 256, 64, 16}, TopMLP: []int{512, 256, 1}}
	kaggleCard := []int64{1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194,
		27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572}
	// Drawn once from [0.9, 1.3] ([1.0, 1.15] for tables of a million rows or
	// more, which decide how many inputs are hot): at full scale a hot set of
	// 256 MiB at dim 16 serves 67% of inputs, 512 MiB 79% (FAE Fig. 1B).
	kaggleExp := []float64{0.954, 1.239, 1.115, 1.038, 1.098, 1.08, 1.161, 1.215, 0.938, 0.911, 1.234, 1.065,
		1.205, 0.901, 1.078, 1.108, 0.992, 1.278, 1.261, 0.912, 1.004, 1.117, 1.276, 1.052, 0.987, 1.069}
	return map[string]*presetDef{
		"demo": {
			Preset: Preset{
				Name: "demo",
				Description: "Criteo-shaped, 13 dense and 26 sparse features, tables compressed to " +
					"at most 22k rows (about 90k in all); runs end to end in seconds",
				Dense:  numberedNames("I", 13),
				Sparse: numberedNames("C", 26),
				Cardinalities: []int64{92, 52, 22055, 8563, 35, 24, 347, 55, 3, 1205, 213, 19566, 149, 27, 388,
					15036, 10, 212, 117, 4, 17609, 18, 15, 2416, 32, 1569},
				Exponents:   kaggleExp,
				TargetCTR:   0.25,
				DefaultRows: 200_000,
				Model: ModelHint{Name: "demo", Config: "demo", EmbeddingDim: 8,
					BottomMLP: []int{64, 8}, TopMLP: []int{64, 32, 1}},
			},
			dense: criteoDense, logitStd: 1.4, share: criteoShare,
		},
		"kaggle": {
			Preset: Preset{
				Name:          "kaggle",
				Description:   "Criteo Kaggle (Display Advertising Challenge): 13 dense and 26 sparse features, 33.8M rows of tables at scale 1",
				Dense:         numberedNames("I", 13),
				Sparse:        numberedNames("C", 26),
				Cardinalities: kaggleCard,
				Exponents:     kaggleExp,
				TargetCTR:     0.256,
				DefaultRows:   45_840_617,
				Model:         rmc2,
			},
			dense: criteoDense, logitStd: 1.4, share: criteoShare,
		},
		"terabyte": {
			Preset: Preset{
				Name: "terabyte",
				Description: "Criteo Terabyte as MLPerf DLRM preprocesses it (tables capped at 40M rows): " +
					"13 dense and 26 sparse features, 188M rows of tables at scale 1",
				Dense:  numberedNames("I", 13),
				Sparse: numberedNames("C", 26),
				Cardinalities: []int64{39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546,
					403346, 10, 2208, 11938, 155, 4, 976, 14, 39979771, 25641295, 39664984, 585935, 12972, 108, 36},
				// Tables of a million rows or more drawn from [1.15, 1.3]: at full
				// scale a hot set of 512 MiB at dim 64 serves 73% of inputs (FAE
				// §1: ~400 MB for 81.6%).
				Exponents: []float64{1.293, 1.279, 0.923, 0.934, 1.234, 1.194, 1.168, 1.023, 1.142, 1.241, 1.237,
					0.963, 1.072, 1.057, 1.189, 1.298, 1.28, 1.118, 1.078, 1.19, 1.155, 1.154, 1.086, 1.027, 1.052, 1.257},
				TargetCTR:   0.25,
				DefaultRows: 80_000_000,
				Model: ModelHint{Name: "rmc3", Config: "rmc3-terabyte", EmbeddingDim: 64,
					BottomMLP: []int{512, 256, 64}, TopMLP: []int{512, 512, 256, 1}},
			},
			dense: criteoDense, logitStd: 1.45, share: criteoShare,
		},
		"avazu": {
			Preset: Preset{
				Name: "avazu",
				Description: "Avazu CTR: 21 sparse features and, as convert derives them from Avazu's hour, " +
					"two dense features in [0, 1]: hour_of_day (HH/23) and weekday (0 = Monday, /6); " +
					"9.4M rows of tables at scale 1",
				Dense: []string{"hour_of_day", "weekday"},
				Sparse: []string{"C1", "banner_pos", "site_id", "site_domain", "site_category", "app_id",
					"app_domain", "app_category", "device_id", "device_ip", "device_model", "device_type",
					"device_conn_type", "C14", "C15", "C16", "C17", "C18", "C19", "C20", "C21"},
				Cardinalities: []int64{7, 7, 4737, 7745, 26, 8552, 559, 36, 2686408, 6729486, 8251, 5, 4, 2626, 8,
					9, 435, 4, 68, 172, 60},
				// At full scale a hot set of 128 MiB at dim 16 serves 87% of inputs.
				Exponents: []float64{0.995, 1.118, 1.048, 1.142, 1.15, 0.926, 0.905, 1.235, 1.039, 1.035, 1.298,
					1.088, 1.235, 1.091, 1.156, 0.96, 1.154, 1.247, 1.109, 1.197, 1.169},
				TargetCTR:   0.17,
				DefaultRows: 40_428_967,
				Model: ModelHint{Name: "rmc4", Config: "rmc4-avazu", EmbeddingDim: 16,
					BottomMLP: []int{512, 256, 64, 16}, TopMLP: []int{512, 256, 1}},
			},
			dense: []denseDef{
				{kind: denseCycle, period: 24, peak: 14, amp: 0.6},
				{kind: denseCycle, period: 7, peak: 2, amp: 0.1},
			},
			logitStd: 1.12, share: avazuShare,
		},
	}
}

// Presets lists the preset names, sorted.
func Presets() []string {
	defs := presetDefs()
	out := make([]string, 0, len(defs))
	for name := range defs {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// LookupPreset returns the named preset.
func LookupPreset(name string) (Preset, bool) {
	d, ok := presetDefs()[name]
	if !ok {
		return Preset{}, false
	}
	return d.Preset, true
}

// PresetModel returns the model suggested for the named preset's data.
func PresetModel(name string) (ModelHint, bool) {
	p, ok := LookupPreset(name)
	if !ok {
		return ModelHint{}, false
	}
	m := p.Model
	m.BottomMLP, m.TopMLP = slices.Clone(m.BottomMLP), slices.Clone(m.TopMLP)
	return m, true
}
