package compute_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

func TestCalcVParam(t *testing.T) {
	// N = 10; tables: dim 8 with 3 lookups, dim 32 with 7: 10·(24 + 224).
	got := compute.CalcVParam(10, []compute.TableStat{{Dim: 8, Lookups: 3}, {Dim: 32, Lookups: 7}})
	if got != 2480 {
		t.Errorf("CalcVParam = %v; want 2480", got)
	}
}

func TestPlanShards(t *testing.T) {
	uniform := func(n, dim int) []compute.TableStat {
		s := make([]compute.TableStat, n)
		for i := range s {
			s[i] = compute.TableStat{Dim: dim, Lookups: 100}
		}
		return s
	}
	heavy := uniform(8, 16)
	heavy[3].Lookups = 100 * 5 // cost 5× the others: mean = 12/8 of theirs
	wide := uniform(4, 8)
	wide[0].Dim = 64 // 8× the others' cost: mean = 11/4 units
	tests := []struct {
		name     string
		stats    []compute.TableStat
		split    float64
		maxParts int
		want     map[int]int // table -> parts; others 1
	}{
		{"uniform", uniform(26, 16), 0, 0, nil},
		{"one hot table", heavy, 0, 0, map[int]int{3: 4}},                  // 5 / 1.5 -> ceil 3.33
		{"one wide table", wide, 0, 0, map[int]int{0: 3}},                  // 8 / 2.75 -> ceil 2.9
		{"high threshold", heavy, 4, 0, nil},                               // 5 < 4·1.5
		{"capped", heavy, 0, 2, map[int]int{3: 2}},                         //
		{"empty", nil, 0, 0, nil},                                          //
		{"no lookups", []compute.TableStat{{Dim: 4}, {Dim: 4}}, 0, 0, nil}, //
	}
	for _, tt := range tests {
		plan := compute.PlanShards(tt.stats, tt.split, tt.maxParts)
		parts := map[int]int{}
		count := map[int]int{}
		for _, s := range plan {
			parts[s.Table] = s.Parts
			count[s.Table]++
		}
		for i := range tt.stats {
			want := 1
			if p, ok := tt.want[i]; ok {
				want = p
			}
			if parts[i] != want || count[i] != want {
				t.Errorf("%s: PlanShards: table %d in %d shards of %d parts; want %d", tt.name, i, count[i], parts[i], want)
			}
		}
		if !slices.IsSortedFunc(plan, func(a, b compute.Shard) int {
			switch {
			case a.Cost > b.Cost:
				return -1
			case a.Cost < b.Cost:
				return 1
			}
			return 0
		}) {
			t.Errorf("%s: PlanShards not ordered by decreasing cost: %v", tt.name, plan)
		}
		if len(tt.stats) > 0 {
			pt, err := compute.NewPackedTable(compute.Reference(), 4, make([]int64, len(tt.stats)))
			if err != nil {
				t.Fatal(err)
			}
			if err := pt.SetPlan(plan); err != nil {
				t.Errorf("%s: SetPlan(PlanShards(...)) = %v", tt.name, err)
			}
		}
	}
}

func TestSetPlanErrors(t *testing.T) {
	pt, err := compute.NewPackedTable(compute.Reference(), 2, []int64{3, 4})
	if err != nil {
		t.Fatal(err)
	}
	for name, plan := range map[string][]compute.Shard{
		"missing table": {{Table: 0, Parts: 1}},
		"bad table":     {{Table: 0, Parts: 1}, {Table: 2, Parts: 1}},
		"missing part":  {{Table: 0, Parts: 1}, {Table: 1, Part: 0, Parts: 2}},
		"twice":         {{Table: 0, Parts: 1}, {Table: 0, Parts: 1}, {Table: 1, Parts: 1}},
		"mixed parts":   {{Table: 0, Parts: 1}, {Table: 1, Part: 0, Parts: 2}, {Table: 1, Part: 1, Parts: 3}},
		"part range":    {{Table: 0, Parts: 1}, {Table: 1, Part: 1, Parts: 1}},
		"zero parts":    {{Table: 0}, {Table: 1, Parts: 1}},
	} {
		if err := pt.SetPlan(plan); !errors.Is(err, compute.ErrBadPlan) {
			t.Errorf("SetPlan(%s %v) = %v; want ErrBadPlan", name, plan, err)
		}
	}
	if len(pt.Plan()) != 2 {
		t.Errorf("a rejected plan replaced the default: %v", pt.Plan())
	}
}

func TestNewPackedTable(t *testing.T) {
	ref := compute.Reference()
	pt, err := compute.NewPackedTable(ref, 3, []int64{2, 0, 5})
	if err != nil {
		t.Fatal(err)
	}
	if pt.Tables() != 3 || pt.Rows() != 7 || pt.W.Len() != 21 || pt.TableRows(2) != 5 || !slices.Equal(pt.Start, []int64{0, 2, 2, 7}) {
		t.Errorf("NewPackedTable(3, [2 0 5]) = tables %d rows %d len(W) %d start %v", pt.Tables(), pt.Rows(), pt.W.Len(), pt.Start)
	}
	if got := ref.InUse(); got != 21*4 {
		t.Errorf("InUse after NewPackedTable = %d bytes; want %d", got, 21*4)
	}
	pt.Row(2, 1).Float32s()[0] = 9
	if pt.W.Float32s()[(2+1)*3] != 9 {
		t.Errorf("Row(2, 1) is not a view of packed row 3")
	}
	for _, bad := range []struct {
		dim  int
		rows []int64
	}{{0, []int64{1}}, {4, []int64{1, -1}}, {1 << 20, []int64{1 << 50}}} {
		if _, err := compute.NewPackedTable(ref, bad.dim, bad.rows); !errors.Is(err, compute.ErrInvalidOptions) {
			t.Errorf("NewPackedTable(%d, %v) error = %v; want ErrInvalidOptions", bad.dim, bad.rows, err)
		}
	}
}
