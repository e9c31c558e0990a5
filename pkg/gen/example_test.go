package gen_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/gen"
)

func ExampleRun() {
	dir, err := os.MkdirTemp("", "picasso-gen")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	res, err := gen.Run(context.Background(), gen.Options{
		Preset: "demo", Rows: 20_000, Seed: 1, OutDir: dir,
	})
	if err != nil {
		panic(err)
	}
	ds, err := dataset.Open(&res.Spec, filepath.Join(dir, res.Spec.Train))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d train rows (%d read back), %d test rows\n", res.TrainRows, ds.Rows(), res.TestRows)
	fmt.Printf("%d dense and %d sparse features; C3 has %d rows\n", len(res.Spec.Dense), len(res.Spec.Sparse), res.Spec.Sparse[2].Rows)
	// Output:
	// 18000 train rows (18000 read back), 2000 test rows
	// 13 dense and 26 sparse features; C3 has 22055 rows
}
