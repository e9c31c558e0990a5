package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/bench"
	"github.com/picasso-ctr/picasso/pkg/classify"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/profile"
)

// runBenchStages is bench --stages: the data stages timed side by side.
func runBenchStages(cmd *cobra.Command, g *globals, opts *benchOptions) error {
	ctx := cmd.Context()
	c, err := g.loadConfig(cmd, loadOptions{dataDir: opts.data, bindings: benchBindings, needData: true})
	if err != nil {
		return err
	}
	ds, err := dataset.Open(&c.Data, c.Data.Train)
	if err != nil {
		return err
	}
	po := profile.DefaultOptions()
	po.Budget = int64(c.FAE.Budget)
	po.Confidence = c.FAE.Confidence
	po.Chunks = c.FAE.Chunks
	po.ChunkSize = c.FAE.ChunkSize
	po.Method = c.FAE.Method
	po.Seed = c.Train.Seed
	po.Dim = c.Model.EmbeddingDim
	po.Optimizer = string(c.Train.Optimizer)
	po.SmallTableBytes = int64(c.FAE.SmallTable)
	po.NoPromote = !c.FAE.PromoteTables
	if opts.workers > 0 {
		po.Workers = opts.workers
	}
	if err := os.MkdirAll(opts.out, 0o755); err != nil {
		return err
	}
	scratch := filepath.Join(opts.out, "stages-scratch")
	defer os.RemoveAll(scratch)
	ts, err := bench.RunStages(ctx, ds, bench.StagesOptions{
		Rates:   opts.stagesRates,
		Rounds:  opts.repeat,
		Profile: po,
		Classify: classify.Options{BatchSize: c.Train.BatchSize, Seed: c.Train.Seed, Workers: opts.workers,
			EmbeddingDim: c.Model.EmbeddingDim},
		Scratch:       scratch,
		ConvertInputs: opts.stagesConvert,
	})
	if err != nil {
		if errors.Is(err, bench.ErrInvalidOptions) {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# Data stages on %s\n\n%d rows; rounds alternate the stages, so each round's figures share one machine load.\n\n", opts.data, ds.Rows())
	if err := bench.WriteStages(&md, ts); err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(opts.out, "stages.md"), []byte(md.String())); err != nil {
		return err
	}
	js, err := json.MarshalIndent(ts, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(opts.out, "stages.json"), append(js, '\n')); err != nil {
		return err
	}
	if opts.asJSON { // the report, stages.json, as --json promises
		_, err = g.stdout.Write(append(js, '\n'))
		return err
	}
	_, err = io.WriteString(g.stdout, md.String())
	return err
}
