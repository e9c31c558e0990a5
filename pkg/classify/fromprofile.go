package classify

import (
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
	"github.com/picasso-ctr/picasso/pkg/profile"
)

// HotSetFromProfile applies a profile's per-table cutoffs to its access
// counts (the embedding classifier, seeds/001 §4.2): a row is hot when its
// sampled count reaches its table's MinCount, every row of a table whose
// MinCount is 0. lg must be the profile's logger and spec the data it was
// made from.
func HotSetFromProfile(res *profile.Result, lg *profile.Logger, spec *dataset.Spec) (*layout.HotSet, error) {
	if err := lg.Check(spec); err != nil {
		return nil, err
	}
	tables := spec.Tables()
	if len(res.Tables) != len(tables) {
		return nil, fmt.Errorf("the profile has %d tables, the data %d: %w", len(res.Tables), len(tables), profile.ErrMismatch)
	}
	hot := make([][]int64, len(tables))
	rows := make([]int64, len(tables))
	for t, tr := range res.Tables {
		hot[t] = lg.HotIDs(t, tr.MinCount)
		rows[t] = tables[t].Rows
	}
	return layout.NewHotSet(hot, rows)
}
