package cli

import (
	"cmp"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/onnx"
	"github.com/picasso-ctr/picasso/pkg/train"
)

type exportOptions struct {
	run    string
	best   bool
	format string
	out    string
	asJSON bool
}

// exportFormats are the values of export --format.
var exportFormats = []string{"onnx"}

func newExportCmd(g *globals) *cobra.Command {
	opts := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export --run RUN --format onnx --out model.onnx",
		Short: "Export a trained run's model for serving (ONNX)",
		Long: `export writes the model of a 'picasso train' run (RUN/checkpoint.bin, or
best.bin with --best) in a format other tools serve. --format onnx writes an
ONNX model (IR version 8, opset 13) that ONNX Runtime runs, for every model
picasso trains (DLRM, Wide&Deep, DCN-v2, DeepFM):

  inputs   dense   float32, batch x dense features, in the data's column order
           sparse  int64, batch x one-hot features: each feature's embedding
                   row (the IDs of the converted data), in column order
           one int64 input per multi-hot feature, named after it, batch x L,
           padded with the table's row count
  output   score   float32, batch x 1: the click probability

Per feature a Gather from its embedding table and a ReduceSum over its IDs;
then the model: DLRM's bottom MLP (Gemm, Relu), interaction (pairwise dot
products, or concatenation) and top MLP; or, over the dense features and the
pooled embeddings, DCN-v2's cross layers and the deep MLP, with the
first-order weights (Wide&Deep, DeepFM) and the factorization machine's
second-order term (DeepFM); a Sigmoid last. Its scores match 'picasso predict'
to about 1e-6 (float32 rounding; scripts/onnx-check.sh checks them with
onnxruntime-node).`,
		Example: `  picasso export --run runs/fae --format onnx --out runs/fae/model.onnx`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case opts.run == "" || opts.out == "":
				return usageErrorf("export: --run and --out are required")
			case opts.format != "onnx":
				return usageErrorf("export: --format must be onnx, got %q", opts.format)
			}
			return runExport(g, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.run, "run", "", "run directory written by 'picasso train' (required)")
	f.BoolVar(&opts.best, "best", false, "export the run's best.bin (best validation log loss, written with --valid) instead of checkpoint.bin")
	f.StringVar(&opts.format, "format", "onnx", "output format: onnx")
	f.StringVar(&opts.out, "out", "", "file to write (required)")
	f.BoolVar(&opts.asJSON, "json", false, "print the result as JSON on stdout instead of a summary")
	_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletion(exportFormats...))
	return cmd
}

func runExport(g *globals, opts *exportOptions) error {
	c, err := runConfig(opts.run)
	if err != nil {
		return err
	}
	m, err := train.ReadModel(modelPath(opts.run, opts.best))
	if err != nil {
		return err
	}
	b, err := onnx.Export(m, &c.Data, Version)
	arch := cmp.Or(m.Shape.Arch, train.ArchDLRM)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := atomicfile.WriteBytes(opts.out, b); err != nil {
		return err
	}
	if opts.asJSON {
		return printJSON(g.stdout, struct {
			Run    string `json:"run"`
			Format string `json:"format"`
			Out    string `json:"out"`
			Bytes  int    `json:"bytes"`
			Arch   string `json:"arch"`
			Step   int64  `json:"step"`
		}{opts.run, opts.format, opts.out, len(b), arch, m.Step})
	}
	fmt.Fprintf(g.stdout, "export: %s model of %s (%s mode, step %d) written to %s (%d bytes, ONNX IR %d, opset %d)\n",
		arch, opts.run, m.Mode, m.Step, opts.out, len(b), onnx.IRVersion, onnx.Opset)
	return nil
}
