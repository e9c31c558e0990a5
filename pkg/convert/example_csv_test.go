package convert_test

import (
	"context"
	"fmt"
	"os"

	"github.com/picasso-ctr/picasso/pkg/convert"
)

// Converting a delimited log whose columns' roles are given by Columns, and
// splitting it by time into train and test.
func ExampleRun_csv() {
	out, err := os.MkdirTemp("", "convert-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(out)
	split, err := convert.ParseSplit("train=0.5,test=0.5")
	if err != nil {
		panic(err)
	}
	res, err := convert.Run(context.Background(), convert.Options{
		Format: "csv",
		Columns: &convert.Columns{
			Label:    "clicked",
			Dense:    []string{"price", "views:log1p"},
			Sparse:   []string{"user", "item"},
			MultiHot: []string{"tags:|"},
			Time:     "ts",
			Ignore:   []string{"leak"},
		},
		Inputs:  []string{"testdata/clicks.csv"},
		OutDir:  out,
		IDs:     convert.Reindex,
		Split:   split,
		SplitBy: "ts",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("dense:", res.Spec.Dense)
	fmt.Println("train, test rows:", res.Rows, res.TestRows)
	fmt.Println("distinct training values per table:", res.Counts)
	// Output:
	// dense: [price views ts_hour ts_weekday]
	// train, test rows: 3 3
	// distinct training values per table: [2 2 3]
}
