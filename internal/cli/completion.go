package cli

import (
	"github.com/spf13/cobra"

	"github.com/picasso-ctr/picasso/pkg/gen"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// enumFlags are the values of the flags that take one of a fixed set,
// offered by shell completion ('picasso completion bash|zsh|fish'). A
// command whose flag of the same name means something else registers its
// own completion first.
func enumFlags() map[string][]string {
	modes := make([]string, 0, len(train.Modes))
	for _, m := range train.Modes {
		modes = append(modes, m.String())
	}
	return map[string][]string{
		"preset":          gen.Presets(),
		"format":          {"criteo", "avazu", "csv"},
		"ids":             {"hash", "reindex"},
		"method":          {"tinterval", "exact", "topk"},
		"sampling":        {"auto", "row-groups", "rows"},
		"mode":            modes,
		"modes":           modes,
		"ablate-modes":    modes,
		"ablate":          {"packing", "interleaving", "none"},
		"blas":            {"auto", "openblas", "gonum", "ref"},
		"device":          {"auto", "emulated", "cuda", "cuda:0", "cpu"},
		"split":           splits,
		"arch":            train.Archs,
		"dense-norm":      train.DenseNorms,
		"optimizer":       {"adagrad", "sgd"},
		"dense-optimizer": {"adam", "adagrad", "sgd"},
	}
}

// registerCompletions offers the values of every enum flag of every
// command, and YAML files for --config.
func registerCompletions(root *cobra.Command) {
	enums := enumFlags()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, values := range enums {
			if c.Flags().Lookup(name) != nil {
				// An error means the command registered its own.
				_ = c.RegisterFlagCompletionFunc(name, fixedCompletion(values...))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	_ = root.RegisterFlagCompletionFunc("config", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
	})
}
