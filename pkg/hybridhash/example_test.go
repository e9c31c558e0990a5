package hybridhash_test

import (
	"fmt"
	"os"

	"github.com/picasso-ctr/picasso/pkg/hybridhash"
)

// A cache with a hot store of two rows: after a step of warm-up, the two
// most frequent IDs are hot, and the others miss.
func Example() {
	dir, _ := os.MkdirTemp("", "hybridhash-example-")
	defer os.RemoveAll(dir)
	c, err := hybridhash.New(hybridhash.Options{Tables: 1, Dim: 2, Width: 2, Bounds: []float64{0.1}, Seed: 1,
		HotRows: 2, HostBytes: 1 << 16, DiskDir: dir, WarmupIters: 1, FlushIters: 100, AdmitAfter: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ids := []int64{7, 7, 7, 3, 3, 9}
	out := make([]int32, len(ids))
	row := make([]float32, 2)
	for step := range 2 {
		if c.RefreshDue() {
			p := c.Refresh()
			for _, k := range p.Enter {
				c.Take(k, row) // the caller copies these rows to its hot store
			}
			fmt.Println("hot:", c.HotIDs(0))
		}
		c.Reset()
		misses := c.Resolve(0, ids, out, nil, true)
		for _, id := range misses {
			c.Fetch(hybridhash.Key{Table: 0, ID: id}, row, true)
		}
		c.EndStep()
		fmt.Printf("step %d: slots %v, misses %v\n", step, out, misses)
	}
	st := c.Stats()
	fmt.Printf("hit ratio %.2f, rows hot %d, in host memory %d\n", st.HitRatio(), st.HotRows, st.HostRows)
	// Output:
	// step 0: slots [-1 -1 -1 -2 -2 -3], misses [7 3 9]
	// hot: [3 7]
	// step 1: slots [1 1 1 0 0 -1], misses [9]
	// hit ratio 0.42, rows hot 2, in host memory 1
}
