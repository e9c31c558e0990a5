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
	// The CPU backend computes in host memory: Go slices, wrapped, are its
	// buffers.
	b.Gemm(false, true, 2, 2, 3, 1, compute.Wrap(x), 3, compute.Wrap(w), 3, 0, compute.Wrap(y), 2)
	b.BiasAct(compute.Wrap(y), 2, 2, compute.Wrap([]float32{1, -3}), true)
	fmt.Println(b.Name(), y)
	// Output: cpu/gonum [0 0 0 4.5]
}

func ExampleCPU_Emulate() {
	host, err := compute.New(compute.Options{BLAS: compute.BLASGonum, Threads: 2})
	if err != nil {
		panic(err)
	}
	defer host.Close()
	// A device on a machine without one: its memory is its own, and data
	// crosses only through CopyIn and CopyOut, as with a GPU.
	dev := host.Emulate(false)
	defer dev.Close()

	x, err := dev.Alloc(compute.Float32, 4)
	if err != nil {
		panic(err)
	}
	defer dev.Free(x)
	dev.CopyIn(x, compute.Wrap([]float32{-1, 2, -3, 4}))
	dev.BiasAct(x, 2, 2, compute.Buffer{}, true) // ReLU on the device
	out := make([]float32, 4)
	dev.CopyOut(compute.Wrap(out), x)
	if err := dev.Sync(); err != nil {
		panic(err)
	}
	fmt.Println(dev.Name(), out, dev.InUse(), "bytes in use")
	// Output: cpu/gonum (emulated device) [0 2 0 4] 16 bytes in use
}

func ExamplePackedTable() {
	b := compute.Reference()
	// Two tables of dimension 2, packed: 3 rows and 2 rows.
	t, err := compute.NewPackedTable(b, 2, []int64{3, 2})
	if err != nil {
		panic(err)
	}
	defer t.Free()
	b.CopyIn(t.W, compute.Wrap([]float32{1, 1, 2, 2, 3, 3, 10, 10, 20, 20}))

	// Two samples. Table 0: bags {0, 2} and {1}; table 1: one ID each.
	bags := &compute.Bags{
		N:       2,
		IDs:     []compute.Buffer{compute.Wrap([]int64{0, 2, 1}), compute.Wrap([]int64{1, 1})},
		Offsets: []compute.Buffer{compute.Wrap([]int32{0, 2, 3}), {}},
	}
	out := make([]float32, 2*2*2) // samples × tables × dim
	if err := b.EmbeddingBagForward(t, bags, compute.Wrap(out)); err != nil {
		panic(err)
	}
	fmt.Println("pooled:", out)

	// Table 1's row 1 is used by both samples: its gradients are summed
	// before one step.
	dOut := []float32{0, 0, 1, 1, 0, 0, 1, 1}
	step := compute.Step{Opt: compute.OptSGD, LR: 0.5}
	if err := b.EmbeddingBagUpdate(t, bags, compute.Wrap(dOut), step); err != nil {
		panic(err)
	}
	fmt.Println("row 1 of table 1:", t.Row(1, 1).Float32s())

	// The same lookup with packed rows: table 1's row 1 is packed row 4.
	bags.IDs[1], bags.Packed = compute.Wrap([]int32{4, 4}), true
	bags.IDs[0] = compute.Wrap([]int32{0, 2, 1})
	if err := b.EmbeddingBagForward(t, bags, compute.Wrap(out)); err != nil {
		panic(err)
	}
	fmt.Println("pooled:", out)
	// Output:
	// pooled: [4 4 20 20 2 2 20 20]
	// row 1 of table 1: [19 19]
	// pooled: [4 4 19 19 2 2 19 19]
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
