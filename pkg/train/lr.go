package train

import "math"

// LRSchedule is DLRM's learning-rate policy (LRPolicyScheduler in
// facebookresearch/dlrm): a linear warm-up from 0 over WarmupSteps steps,
// then the base rate, then, from DecayStart, a polynomial decay of power 2
// that reaches 0 after DecaySteps steps and stays there. Steps count from 1:
// the first update uses Rate(1).
type LRSchedule struct {
	Base        float64
	WarmupSteps int64
	DecayStart  int64
	DecaySteps  int64
}

// decayed returns s with its decay over the last fraction of a run of
// total steps, when s has no decay of its own and fraction is positive.
func (s LRSchedule) decayed(fraction float64, total int64) LRSchedule {
	if fraction <= 0 || s.DecaySteps > 0 || total <= 0 {
		return s
	}
	n := max(1, int64(math.Ceil(fraction*float64(total))))
	s.DecayStart, s.DecaySteps = total-n+1, n
	return s
}

// Rate returns the learning rate of update number step (1-based).
func (s LRSchedule) Rate(step int64) float64 {
	if step < s.WarmupSteps {
		return s.Base * (1 - float64(s.WarmupSteps-step)/float64(s.WarmupSteps))
	}
	end := s.DecayStart + s.DecaySteps
	if s.DecaySteps > 0 && step >= s.DecayStart {
		if step >= end {
			return 0
		}
		left := float64(s.DecaySteps-(step-s.DecayStart)) / float64(s.DecaySteps)
		return s.Base * left * left
	}
	return s.Base
}
