package bench

import (
	"fmt"
	"reflect"
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

// Ablation is an optimisation the bench can turn off, and the configuration
// key and value that turn it off.
type Ablation struct {
	Name  string
	Key   string
	Value any
	// Doc says what turning it off means.
	Doc string
}

// Ablations lists the optimisations the bench can turn off.
var Ablations = []Ablation{
	{Name: "packing", Key: "train.packing", Value: false,
		Doc: "every embedding table looked up and updated on its own instead of in one packed operation (PICASSO's D-packing)"},
	{Name: "interleaving", Key: "train.prefetch", Value: 0,
		Doc: "mini-batches read and decoded in line with compute instead of ahead on a background goroutine (PICASSO's D-interleaving)"},
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
// the ablation's key set. It fails when this build's configuration has no
// such key, so a missing knob is never silently ignored, and when base
// already has the ablation's value, since the ablation would then change
// nothing.
func (a Ablation) Apply(base config.Config) (Variant, error) {
	c := base
	c.Model.BottomMLP = append([]int(nil), base.Model.BottomMLP...)
	c.Model.TopMLP = append([]int(nil), base.Model.TopMLP...)
	old, err := setKey(&c, a.Key, a.Value)
	if err != nil {
		return Variant{}, fmt.Errorf("bench: ablation %s: %w", a.Name, err)
	}
	if reflect.DeepEqual(old, a.Value) {
		return Variant{}, fmt.Errorf("bench: ablation %s: the configuration already sets %s=%v, so the ablation would change nothing: %w",
			a.Name, a.Key, a.Value, ErrInvalidOptions)
	}
	return Variant{
		Name: base.Train.Mode + "-no-" + a.Name, Ablation: a.Name,
		Setting: fmt.Sprintf("%s=%v", a.Key, a.Value), Config: c,
	}, nil
}

// setKey sets the field of c named by a dotted configuration key (the
// mapstructure names, as in the YAML files) to v and returns its old value.
func setKey(c *config.Config, key string, v any) (any, error) {
	rv := reflect.ValueOf(c).Elem()
	parts := strings.Split(key, ".")
	for i, p := range parts {
		if rv.Kind() != reflect.Struct {
			return nil, fmt.Errorf("config key %s: %s is not a section: %w", key, strings.Join(parts[:i], "."), ErrUnknownKey)
		}
		f, ok := fieldByTag(rv, p)
		if !ok {
			return nil, fmt.Errorf("this build of picasso has no config key %s: %w", key, ErrUnknownKey)
		}
		rv = f
	}
	val := reflect.ValueOf(v)
	sameKind := val.Kind() == rv.Kind() || isInt(val.Kind()) && isInt(rv.Kind())
	if !sameKind || !val.Type().ConvertibleTo(rv.Type()) {
		return nil, fmt.Errorf("config key %s is a %s, not a %s: %w", key, rv.Type(), val.Type(), ErrUnknownKey)
	}
	old := rv.Interface()
	rv.Set(val.Convert(rv.Type()))
	if isInt(rv.Kind()) {
		old = int(reflect.ValueOf(old).Int())
	}
	return old, nil
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}

// fieldByTag finds the field of struct value rv whose mapstructure name is name.
func fieldByTag(rv reflect.Value, name string) (reflect.Value, bool) {
	t := rv.Type()
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("mapstructure"), ",")
		if tag == name {
			return rv.Field(i), true
		}
	}
	return reflect.Value{}, false
}
