package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/picasso-ctr/picasso/internal/gcfirst"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
	"github.com/picasso-ctr/picasso/pkg/profile"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=...".
var Version = "0.1.0-dev"

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitBadData     = 3
	exitInterrupted = 130
)

// errUsage marks errors in how picasso was called (flags, config).
var errUsage = errors.New("usage")

func usageErrorf(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, a...)...)
}

// globals are the flags every command shares.
type globals struct {
	configs []string
	// defaults replace config.Default's values of some keys: a resumed
	// run's settings that predate the key (see resumeArgs).
	defaults map[string]any
	quiet    bool
	stdout   io.Writer
	stderr   io.Writer
}

// Execute runs picasso with args and returns the process exit code.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr}
	root := newRootCmd(g)
	root.InitDefaultCompletionCmd()
	usageArgs(root)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if strings.HasPrefix(err.Error(), "unknown command ") { // cobra's, for a word no command takes
		// Its "Did you mean this?" lines end with a line break.
		err = fmt.Errorf("%w: %s\nsee 'picasso --help'", errUsage, strings.TrimRight(err.Error(), "\n"))
	}
	msg := err.Error()
	interrupted := errors.Is(err, context.Canceled) || ctx.Err() != nil
	if c := context.Canceled.Error(); ctx.Err() != nil && strings.HasSuffix(msg, c) {
		// Ctrl-C or SIGTERM: say so, not "context canceled".
		msg = strings.TrimSuffix(msg, c) + "interrupted"
	}
	fmt.Fprintf(stderr, "picasso: %s\n", msg)
	switch {
	case interrupted:
		return exitInterrupted
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.Is(err, dataset.ErrBadData), errors.Is(err, dataset.ErrSchema), errors.Is(err, dataset.ErrNoData),
		errors.Is(err, layout.ErrInvalid), errors.Is(err, train.ErrCheckpoint), errors.Is(err, profile.ErrCorrupt):
		return exitBadData
	}
	return exitError
}

// usageArgs makes every argument error of c's command tree a usage error
// (exit 2), as flag errors are: cobra's "accepts 1 arg(s), received 0"
// exited 1, the code of a failed run. A command that only groups others
// (config, completion) refuses a word that is none of them, where cobra
// printed its help and exited 0.
func usageArgs(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return fmt.Errorf("%w: %s: %v; see '%s --help'", errUsage, cmd.CommandPath(), err, cmd.CommandPath())
			}
			return nil
		}
	}
	if c.HasParent() && c.HasSubCommands() && !c.Runnable() { // the root refuses unknown words itself
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%w: %s: unknown command %q; see '%s --help'", errUsage, cmd.CommandPath(), args[0], cmd.CommandPath())
			}
			return cmd.Help()
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}

func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "picasso",
		Short: "Train click-through-rate models with embedding tables larger than device memory",
		Long: `picasso trains recommendation (click-through-rate) models whose embedding tables
are too large for accelerator memory, by keeping the popular ("hot") rows on the
device and the rest in host memory (the FAE pipeline with PICASSO's packing and
interleaving).

A typical run:
  picasso gen --preset demo --out data            # or: picasso convert ... --out data
  picasso profile --data data --out data/profile.json
  picasso classify --data data --profile data/profile.json --out data/fae
  picasso train --data data/fae --out run

Configuration is read, lowest precedence first, from built-in defaults, the
--config files in order, PICASSO_* environment variables (PICASSO_TRAIN_BATCH_SIZE
sets train.batch_size) and flags. 'picasso config show' prints the result. A
flag's "(default ...)" is the built-in value, which config files and PICASSO_*
variables change. A PICASSO_* variable that names no setting is an error
(PICASSO_LIBCUDA, PICASSO_LIBNVRTC and PICASSO_LIBCUBLAS name libraries).

Every command that reports a result prints it as JSON on stdout with --json.

Exit codes:
  0    success
  1    any other error (I/O, a failed run)
  2    usage: a bad flag, argument, config key, setting or budget; the
       message says what to change
  3    bad data: a malformed input file, schema, layout or checkpoint; the
       message names the file and, where it can, the row group, row and column
  130  interrupted (Ctrl-C or SIGTERM); train leaves a checkpoint to --resume`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Annotations[lazyGCAnnotation] == "" {
				gcfirst.Restore() // else the command's lazyGC decides
			}
			return checkEnv(os.Environ())
		},
	}
	root.SetVersionTemplate("picasso {{.Version}}\n")
	root.PersistentFlags().StringArrayVar(&g.configs, "config", nil, "YAML config file; may repeat, later files override earlier ones")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "no progress bars or progress messages on stderr")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErrorf("%v (see '%s --help')", err, c.CommandPath())
	})
	root.AddCommand(
		newVersionCmd(g),
		newConfigCmd(g),
		newGenCmd(g),
		newConvertCmd(g),
		newProfileCmd(g),
		newClassifyCmd(g),
		newTrainCmd(g),
		newPredictCmd(g),
		newEvalCmd(g),
		newExportCmd(g),
		newBenchCmd(g),
		newHitratioCmd(g),
		newDevicesCmd(g),
	)
	registerCompletions(root)
	return root
}

func newVersionCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print picasso's version (also: picasso --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return printJSON(g.stdout, struct {
					Version string `json:"version"`
					Go      string `json:"go"`
					OS      string `json:"os"`
					Arch    string `json:"arch"`
				}{Version, runtime.Version(), runtime.GOOS, runtime.GOARCH})
			}
			fmt.Fprintf(g.stdout, "picasso %s\n", Version)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version, Go version and platform as JSON")
	return cmd
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
