package train

import (
	"errors"
	"fmt"
	"math"
)

// SchedulerOptions configures the Shuffle Scheduler (seeds/001 §4.3, Eq. 5).
type SchedulerOptions struct {
	// InitialRate is r at the start, in percent of each class's mini-batches
	// of an epoch run per phase (FAE starts at R(50)).
	InitialRate float64
	// MinRate and MaxRate bound r (R(1) and R(100)).
	MinRate, MaxRate float64
	// Patience is u: after this many consecutive swaps at which the loss
	// fell, r doubles.
	Patience int
}

// Validate reports every problem with o at once.
func (o SchedulerOptions) Validate() error {
	var errs []error
	if o.MinRate < 1 || o.MaxRate > 100 || o.MinRate > o.MaxRate {
		errs = append(errs, fmt.Errorf("train: scheduler rates must satisfy 1 <= min <= max <= 100, got %v..%v: %w", o.MinRate, o.MaxRate, ErrInvalidOptions))
	}
	if o.InitialRate < o.MinRate || o.InitialRate > o.MaxRate {
		errs = append(errs, fmt.Errorf("train: scheduler initial rate %v outside [%v, %v]: %w", o.InitialRate, o.MinRate, o.MaxRate, ErrInvalidOptions))
	}
	if o.Patience < 1 {
		errs = append(errs, fmt.Errorf("train: scheduler patience %d < 1: %w", o.Patience, ErrInvalidOptions))
	}
	return errors.Join(errs...)
}

// Scheduler is the Shuffle Scheduler. At every swap between hot and cold
// mini-batches the trainer evaluates the loss on a fixed held-out set and
// calls Observe, which adapts the rate r as Eq. 5 intends (the paper's
// equation swaps min and max; its text is the intent):
//
//   - the loss rose since the previous swap: r halves, not below MinRate;
//   - the loss fell at Patience consecutive swaps: r doubles, not above
//     MaxRate, and the count of falls starts again;
//   - otherwise r stays (an equal loss also ends a run of falls).
//
// PhaseLen turns r into the number of mini-batches of a class per phase.
type Scheduler struct {
	opts  SchedulerOptions
	state SchedulerState
}

// SchedulerState is the part of a Scheduler a checkpoint saves.
type SchedulerState struct {
	Rate     float64 `json:"rate"`
	Swaps    int     `json:"swaps"`
	Falls    int     `json:"falls"`     // consecutive falls of the loss so far
	PrevLoss float64 `json:"prev_loss"` // loss at the previous swap
	HasPrev  bool    `json:"has_prev"`
}

// Decision is what the scheduler did at one swap; the trainer logs it.
type Decision struct {
	Swap       int     `json:"swap"` // 1-based swap number
	Loss       Number  `json:"eval_loss"`
	PrevLoss   Number  `json:"prev_loss"` // NaN (null) at the first swap
	RateBefore float64 `json:"rate_before"`
	RateAfter  float64 `json:"rate_after"`
	// Action is "first" (nothing to compare yet), "halve", "double" or
	// "keep". A halving or doubling clamped to the bound that r already
	// sits at is still reported as such.
	Action string `json:"action"`
}

// NewScheduler returns a scheduler at the initial rate.
func NewScheduler(opts SchedulerOptions) (*Scheduler, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Scheduler{opts: opts, state: SchedulerState{Rate: opts.InitialRate}}, nil
}

// Rate returns the current r in percent.
func (s *Scheduler) Rate() float64 { return s.state.Rate }

// State returns the state a checkpoint saves.
func (s *Scheduler) State() SchedulerState { return s.state }

// SetState restores a saved state.
func (s *Scheduler) SetState(st SchedulerState) { s.state = st }

// Observe records the evaluation loss measured at a swap and updates r.
func (s *Scheduler) Observe(loss float64) Decision {
	st := &s.state
	st.Swaps++
	d := Decision{Swap: st.Swaps, Loss: Number(loss), PrevLoss: Number(math.NaN()), RateBefore: st.Rate}
	switch {
	case !st.HasPrev:
		d.Action = "first"
	case loss > st.PrevLoss:
		d.Action = "halve"
		st.Rate = max(st.Rate/2, s.opts.MinRate)
		st.Falls = 0
	case loss < st.PrevLoss:
		st.Falls++
		d.Action = "keep"
		if st.Falls >= s.opts.Patience {
			d.Action = "double"
			st.Rate = min(st.Rate*2, s.opts.MaxRate)
			st.Falls = 0
		}
	default:
		d.Action = "keep"
		st.Falls = 0
	}
	if st.HasPrev {
		d.PrevLoss = Number(st.PrevLoss)
	}
	st.PrevLoss, st.HasPrev = loss, true
	d.RateAfter = st.Rate
	return d
}

// PhaseLen returns how many mini-batches of a class with total mini-batches
// in the epoch one phase runs at the current rate: ceil(r% of total), at
// least 1 (0 when total is 0).
func (s *Scheduler) PhaseLen(total int) int {
	return phaseLen(s.state.Rate, total)
}

func phaseLen(rate float64, total int) int {
	if total <= 0 {
		return 0
	}
	n := int(math.Ceil(rate * float64(total) / 100))
	return min(max(n, 1), total)
}
