package compute_test

import (
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

func ExampleNew() {
	// "auto" would load OpenBLAS when present; gonum keeps the output fixed.
	b, err := compute.New(compute.Options{BLAS: compute.BLASGonum, Threads: 2})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	if err := b.Fallback(); err != nil {
		fmt.Println("warning:", err) // what a CLI prints once
	}

	// A linear layer: Y = X·Wᵀ + bias, then ReLU. X is 2×3, W is 2×3.
	x := []float32{1, 2, 3, 4, 5, 6}
	w := []float32{1, 0, -1, 0.5, 0.5, 0.5}
	y := make([]float32, 4)
	b.Gemm(false, true, 2, 2, 3, 1, x, 3, w, 3, 0, y, 2)
	b.BiasAct(y, 2, 2, []float32{1, -3}, true)
	fmt.Println(b.Name(), y)
	// Output: cpu/gonum [0 0 0 4.5]
}

func ExamplePackedTable() {
	b := compute.Reference()
	// Two tables of dimension 2, packed: 3 rows and 2 rows.
	t, err := compute.NewPackedTable(2, []int64{3, 2})
	if err != nil {
		panic(err)
	}
	copy(t.W, []float32{1, 1, 2, 2, 3, 3, 10, 10, 20, 20})

	// Two samples. Table 0: bags {0, 2} and {1}; table 1: one ID each.
	bags := &compute.Bags{
		N:       2,
		IDs:     [][]int64{{0, 2, 1}, {1, 1}},
		Offsets: [][]int32{{0, 2, 3}, nil},
	}
	out := make([]float32, 2*2*2) // samples × tables × dim
	if err := b.EmbeddingBagForward(t, bags, out); err != nil {
		panic(err)
	}
	fmt.Println("pooled:", out)

	// Table 1's row 1 is used by both samples: its gradients are summed
	// before one step.
	dOut := []float32{0, 0, 1, 1, 0, 0, 1, 1}
	touched := compute.NewRowSet(t.Rows())
	step := compute.SparseStep{Opt: compute.OptSGD, LR: 0.5}
	if err := b.EmbeddingBagUpdate(t, bags, dOut, step, touched); err != nil {
		panic(err)
	}
	fmt.Println("row 1 of table 1:", t.Row(1, 1), "touched:", touched.AppendRows(nil))
	// Output:
	// pooled: [4 4 20 20 2 2 20 20]
	// row 1 of table 1: [19 19] touched: [0 1 2 4]
}

func ExamplePlanShards() {
	// Four tables of dimension 16; table 2 gets 10× the lookups, so its
	// CalcVParam is 10/3.25 times the mean: it is split into 4 shards.
	stats := []compute.TableStat{{16, 100}, {16, 100}, {16, 1000}, {16, 100}}
	for _, s := range compute.PlanShards(stats, 0, 0) {
		fmt.Printf("table %d part %d/%d\n", s.Table, s.Part, s.Parts)
	}
	// Output:
	// table 2 part 0/4
	// table 2 part 1/4
	// table 2 part 2/4
	// table 2 part 3/4
	// table 0 part 0/1
	// table 1 part 0/1
	// table 3 part 0/1
}
