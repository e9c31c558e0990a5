package profile

import "fmt"

// DegenerateShare is how close to 0 or 1 a hot input share must be for
// ShareWarning to call it all cold or all hot.
const DegenerateShare = 0.001

// ShareWarning returns a warning about a hot input share (estimated by a
// profile, or counted by classify) at which FAE has nothing to do, or ""
// when the share splits the data:
//
//   - all hot (share ≥ 1-DegenerateShare): the budget holds every row the
//     inputs touch; fae then runs every mini-batch on the device, as device
//     mode would, and its comparison with hybrid says nothing about FAE;
//   - all cold (share ≤ DegenerateShare): no mini-batch can run from the
//     device alone; fae trains as hybrid does.
func ShareWarning(share float64) string {
	switch {
	case share < 0:
		return ""
	case share >= 1-DegenerateShare:
		return fmt.Sprintf("%.1f%% of inputs are hot: the budget holds every row the data uses, so FAE has nothing to split "+
			"(fae trains like device mode); lower the budget (--budget, fae.budget) below the hot bytes shown to compare hot and cold training", 100*share)
	case share <= DegenerateShare:
		return fmt.Sprintf("%.1f%% of inputs are hot: no mini-batch can train from the device alone (fae trains like hybrid); "+
			"raise the budget (--budget, fae.budget), or lower fae.small_table so that fewer tables must be kept whole", 100*share)
	}
	return ""
}
