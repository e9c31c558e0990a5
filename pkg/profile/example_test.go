package profile_test

import (
	"context"
	"fmt"
	"os"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/profile"
)

// Example counts a small sample into a logger and picks the threshold that
// fits a budget: ten popular users (60 accesses each) fit, 400 users seen
// once do not, and the 7-row day table is hot whole.
func Example() {
	spec := &dataset.Spec{Train: "data", Label: "label", Sparse: []dataset.SparseFeature{
		{Name: "user", Rows: 100_000}, {Name: "day", Rows: 7},
	}}
	lg, err := profile.NewLogger(spec, profile.LoggerOptions{KeepInputs: 1})
	if err != nil {
		panic(err)
	}
	b := &dataset.Batch{N: 1000, Sparse: make([]dataset.SparseColumn, 2)}
	for i := 0; i < b.N; i++ {
		user := int64(i % 10)
		if i >= 600 {
			user = int64(100 + i)
		}
		b.Sparse[0].IDs = append(b.Sparse[0].IDs, user)
		b.Sparse[1].IDs = append(b.Sparse[1].IDs, int64(i%7))
	}
	if err := lg.Add(b); err != nil {
		panic(err)
	}
	lg.Info.RowsTotal = 20_000 // the sample is 5% of the data

	opts := profile.DefaultOptions()
	// Row-wise Adagrad, dim 16: 68 bytes a row. The day table takes
	// 7·68 = 476 bytes; ten user rows 680 more.
	opts.Budget = 476 + 680
	res, err := profile.Analyze(context.Background(), lg, opts)
	if err != nil {
		panic(err)
	}
	user := res.Tables[0]
	fmt.Printf("t = %.4f, user rows with count >= %d are hot: %d\n", res.Threshold, user.MinCount, user.HotRowsExactSample)
	fmt.Printf("hot bytes %.0f of %d, hot inputs %.2f\n", res.HotBytes.High, res.BudgetBytes, res.HotInputShare)
	// Output:
	// t = 0.0010, user rows with count >= 2 are hot: 10
	// hot bytes 1156 of 1156, hot inputs 0.60
}

func ExampleResult_Summary() {
	res := &profile.Result{
		Version: profile.ResultVersion, Method: profile.MethodTInterval, Threshold: 2e-4,
		BudgetBytes: 64 << 20, Optimizer: profile.OptimizerAdagrad, Confidence: 0.999,
		HotBytes:            profile.Interval{Low: 60 << 20, Estimate: 62 << 20, High: 64 << 20},
		HotBytesExactSample: 63 << 20, HotRows: profile.Interval{Low: 925000, Estimate: 956000, High: 987000},
		HotRowsExactSample: 971000, HotInputShare: 0.623, HotInputShareUnsampled: 0.62, HotInputShareInSample: 0.68, ShareInputs: 250000,
		SampleRate: 5.01, SampleRateRequested: 5, Sampling: profile.SamplingRowGroups,
		RowsSampled: 250500, RowsTotal: 5_000_000, Seed: 1,
		Tables: []profile.TableResult{{Name: "C1", Rows: 2_000_000, Cutoff: 52.3, AccessesSampled: 250500,
			HotRows: profile.Interval{Low: 925000, Estimate: 956000, High: 987000}, HotRowsExactSample: 971000,
			HotBytes: profile.Interval{Estimate: 62 << 20}}},
	}
	res.Summary(os.Stdout)
	// Output:
	// method tinterval, threshold t = 0.0002 of a table's accesses
	// budget 64.0 MiB, optimizer adagrad
	// hot bytes 62.0 MiB [60.0 MiB, 64.0 MiB] at 99.9% confidence; exact on the sample 63.0 MiB
	// hot rows 956000 [925000, 987000]; exact on the sample 971000
	// hot inputs 62.3% of the dataset (62.0% of unsampled inputs, leave-one-out on 250000 sampled ones; 68.0% of the sampled inputs)
	// sample: 250500 of 5000000 rows (5.01%, asked 5%) by row-groups, seed 1
	// table                        rows     cutoff   accesses       hot rows [low, high]        exact  hot bytes  how
	// C1                        2000000       52.3     250500    956000 [925000, 987000]       971000   62.0 MiB  chunks
}
