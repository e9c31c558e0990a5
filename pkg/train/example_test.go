package train_test

import (
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/train"
)

// The Shuffle Scheduler starts at R(50), halves its rate when the held-out
// loss rises at a swap and doubles it after Patience consecutive falls.
func ExampleScheduler() {
	s, err := train.NewScheduler(train.SchedulerOptions{InitialRate: 50, MinRate: 1, MaxRate: 100, Patience: 2})
	if err != nil {
		panic(err)
	}
	fmt.Printf("start R(%g): %d of 40 cold mini-batches per phase\n", s.Rate(), s.PhaseLen(40))
	for _, loss := range []float64{0.52, 0.55, 0.51, 0.50} {
		d := s.Observe(loss)
		fmt.Printf("swap %d: loss %.2f → %s, R(%g)\n", d.Swap, loss, d.Action, d.RateAfter)
	}
	// Output:
	// start R(50): 20 of 40 cold mini-batches per phase
	// swap 1: loss 0.52 → first, R(50)
	// swap 2: loss 0.55 → halve, R(25)
	// swap 3: loss 0.51 → keep, R(25)
	// swap 4: loss 0.50 → double, R(50)
}

// DLRM's learning rate: linear warm-up, then a polynomial decay of power 2.
func ExampleLRSchedule() {
	s := train.LRSchedule{Base: 0.1, WarmupSteps: 2, DecayStart: 4, DecaySteps: 2}
	for step := int64(1); step <= 6; step++ {
		fmt.Printf("%.4f ", s.Rate(step))
	}
	fmt.Println()
	// Output: 0.0500 0.1000 0.1000 0.1000 0.0250 0.0000
}

// PICASSO's Eq. 2 sizes micro-batches so that one fits the device memory
// left for activations.
func ExampleMicroBatches() {
	s := train.Shape{Dense: 13, Features: 26, Dim: 16, Bottom: []int{512, 256, 64, 16}, Top: []int{512, 256, 1},
		Interaction: "dot", TableRows: make([]int64, 26), FeatureTable: make([]int, 26)}
	fmt.Printf("%d bytes per sample; a batch of 65536 in 64 MiB: %d micro-batches\n",
		train.ActivationBytes(s), train.MicroBatches(s, 65536, 64<<20))
	// Output: 15484 bytes per sample; a batch of 65536 in 64 MiB: 16 micro-batches
}
