package compute

import (
	"math"
	"sort"
)

// TableStat is what the shard planner knows about one table, gathered in
// warm-up iterations.
type TableStat struct {
	Dim int // embedding dimension
	// Lookups is the sum over the table's IDs of their frequency (ID_freq in
	// PICASSO's Eq. 1), that is the number of lookups of the table seen.
	Lookups float64
}

// CalcVParam returns PICASSO's estimate of the parameter volume a packed
// operation over tables moves (seeds/000 Eq. 1):
//
//	CalcVParam(T) = N · Σ_{t∈T} t_dim · Σ_{ID∈t} ID_freq
//
// where n is N, the total number of categorical IDs.
func CalcVParam(n float64, tables []TableStat) float64 {
	var v float64
	for _, t := range tables {
		v += float64(t.Dim) * t.Lookups
	}
	return n * v
}

// Shard is one unit of embedding work run by one goroutine: part Part of
// Parts of table Table. A lookup shard pools samples
// [Part·N/Parts, (Part+1)·N/Parts); an update shard updates the rows whose
// ID satisfies ID mod Parts = Part, so shards never write the same row.
type Shard struct {
	Table, Part, Parts int
	Cost               float64 // CalcVParam share, for scheduling; informative
}

// DefaultSplit is the PlanShards threshold used when split <= 0: a table is
// split when its CalcVParam exceeds twice the mean.
const DefaultSplit = 2

// PlanShards splits the work of one packed operation into shards following
// PICASSO §III-B: it computes CalcVParam for each table (N being the total
// lookups over all tables), and a table whose value exceeds split times the
// mean is split evenly into ceil(value/mean) shards (at most maxParts; 0
// means no limit other than 64). Other tables are one shard each. Shards are
// returned most costly first, the order in which workers pick them up.
func PlanShards(tables []TableStat, split float64, maxParts int) []Shard {
	if split <= 0 {
		split = DefaultSplit
	}
	if maxParts <= 0 {
		maxParts = 64
	}
	var n float64
	for _, t := range tables {
		n += t.Lookups
	}
	cost := make([]float64, len(tables))
	var mean float64
	for i, t := range tables {
		cost[i] = CalcVParam(n, []TableStat{t})
		mean += cost[i]
	}
	if len(tables) > 0 {
		mean /= float64(len(tables))
	}
	var plan []Shard
	for i, c := range cost {
		parts := 1
		if mean > 0 && c > split*mean {
			parts = min(int(math.Ceil(c/mean)), maxParts)
		}
		for p := range parts {
			plan = append(plan, Shard{Table: i, Part: p, Parts: parts, Cost: c / float64(parts)})
		}
	}
	sort.SliceStable(plan, func(a, b int) bool { return plan[a].Cost > plan[b].Cost })
	return plan
}

func defaultPlan(tables int) []Shard {
	plan := make([]Shard, tables)
	for i := range plan {
		plan[i] = Shard{Table: i, Parts: 1}
	}
	return plan
}
