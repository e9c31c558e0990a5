package bench

import (
	"fmt"
	"strings"

	"github.com/picasso-ctr/picasso/pkg/config"
)

// Variant is one training configuration the bench runs: a placement mode,
// possibly with one optimisation turned off.
type Variant struct {
	// Name identifies the variant in the report and the benchmark lines:
	// the mode ("fae") or the mode and the ablation ("fae-no-packing").
	Name string
	// Ablation is the optimisation turned off ("" for none).
	Ablation string
	// Setting is the configuration change the ablation made, as
	// "key=value" ("" for none).
	Setting string
	// Config is the complete configuration the variant trains with; its
	// Train.Mode is the placement mode.
	Config config.Config
}

// Ablation is an optimisation the bench can turn off, and the change of
// configuration that turns it off.
type Ablation struct {
	Name string
	// Off turns the optimisation off in c and returns the setting it made
	// ("train.packing=false"), or false when c has it off already.
	Off func(c *config.Config) (setting string, changed bool)
	// Doc says what turning it off means.
	Doc string
}

// Ablations lists the optimisations the bench can turn off.
var Ablations = []Ablation{
	{Name: "packing", Off: func(c *config.Config) (string, bool) {
		was := c.Train.Packing
		c.Train.Packing = false
		return "train.packing=false", was
	}, Doc: "every embedding table looked up and updated on its own instead of in one packed operation (PICASSO's D-packing)"},
	{Name: "interleaving", Off: func(c *config.Config) (string, bool) {
		was := c.Train.Prefetch
		c.Train.Prefetch = 0
		return "train.prefetch=0", was != 0
	}, Doc: "mini-batches read and decoded in line with compute instead of ahead on a background goroutine (PICASSO's D-interleaving)"},
}

// AblationNamed returns the ablation called name.
func AblationNamed(name string) (Ablation, error) {
	var names []string
	for _, a := range Ablations {
		if a.Name == name {
			return a, nil
		}
		names = append(names, a.Name)
	}
	return Ablation{}, fmt.Errorf("bench: no ablation %q (want one of %s): %w", name, strings.Join(names, ", "), ErrInvalidOptions)
}

// Apply returns a variant of base (whose Train.Mode names the mode) with
// the optimisation off. It fails when base has it off already, since the
// ablation would then change nothing.
func (a Ablation) Apply(base config.Config) (Variant, error) {
	c := base
	c.Model.BottomMLP = append([]int(nil), base.Model.BottomMLP...)
	c.Model.TopMLP = append([]int(nil), base.Model.TopMLP...)
	c.Model.DeepMLP = append([]int(nil), base.Model.DeepMLP...)
	setting, changed := a.Off(&c)
	if !changed {
		return Variant{}, fmt.Errorf("bench: ablation %s: the configuration already sets %s, so the ablation would change nothing: %w",
			a.Name, setting, ErrInvalidOptions)
	}
	return Variant{
		Name: base.Train.Mode.String() + "-no-" + a.Name, Ablation: a.Name,
		Setting: setting, Config: c,
	}, nil
}
