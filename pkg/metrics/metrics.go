package metrics

import (
	"fmt"
	"math"
	"slices"
)

// Eps bounds the probabilities LogLoss uses to [Eps, 1-Eps], so one confident
// mistake costs at most -log(Eps) ≈ 16.1 instead of +Inf.
const Eps = 1e-7

// Summary holds every metric of one evaluation.
type Summary struct {
	// N is the number of examples and Positives the number labelled 1.
	N, Positives int
	// AUC is NaN when all examples have the same label (see AUC).
	AUC float64
	// LogLoss is the mean clamped binary cross-entropy (see LogLoss).
	LogLoss float64
	// Accuracy is the share of examples on the right side of 0.5.
	Accuracy float64
}

// Evaluate computes every metric of probs against labels.
func Evaluate(probs, labels []float32) Summary {
	check(probs, labels)
	pos := 0
	for _, y := range labels {
		if y > 0.5 {
			pos++
		}
	}
	return Summary{
		N: len(labels), Positives: pos,
		AUC:      AUC(probs, labels),
		LogLoss:  LogLoss(probs, labels),
		Accuracy: Accuracy(probs, labels),
	}
}

// AUC returns the exact area under the ROC curve of scores against labels:
// the probability that a random positive scores higher than a random
// negative, counting ties as one half. It is the Mann-Whitney statistic
// computed from ranks, with tied scores given their average rank, in
// O(n log n) time and 8 bytes of scratch per example.
//
// A label above 0.5 is positive, anything else negative. AUC is undefined,
// and returned as NaN, when there are no positives or no negatives (also for
// empty input), and when any score is NaN. Callers that serialise it to JSON
// must handle NaN.
func AUC(scores, labels []float32) float64 {
	check(scores, labels)
	n := len(scores)
	// Each key holds the score's bits in an order-preserving form in its high
	// 32 bits and the label in bit 0, so sorting the keys sorts by score and
	// keeps each example's label with it.
	keys := make([]uint64, n)
	var pos int64
	for i, s := range scores {
		if s != s { // NaN
			return math.NaN()
		}
		var y uint64
		if labels[i] > 0.5 {
			y = 1
			pos++
		}
		keys[i] = uint64(orderedBits(s))<<32 | y
	}
	neg := int64(n) - pos
	if pos == 0 || neg == 0 {
		return math.NaN()
	}
	slices.Sort(keys)
	// Sum the (1-based, tie-averaged) ranks of the positives.
	var rankSum float64
	for i := 0; i < n; {
		j := i
		var p int64
		for j < n && keys[j]>>32 == keys[i]>>32 {
			p += int64(keys[j] & 1)
			j++
		}
		// Ranks i+1..j share the average (i+1+j)/2.
		rankSum += float64(p) * float64(i+1+j) / 2
		i = j
	}
	u := rankSum - float64(pos)*float64(pos+1)/2
	return u / (float64(pos) * float64(neg))
}

// orderedBits maps a float32 to a uint32 whose unsigned order is the float
// order (-0 and +0 map to the same key, so they tie).
func orderedBits(f float32) uint32 {
	if f == 0 {
		f = 0 // fold -0 into +0
	}
	b := math.Float32bits(f)
	if b&0x80000000 != 0 {
		return ^b
	}
	return b | 0x80000000
}

// LogLoss returns the mean binary cross-entropy of probs against labels,
// -mean(y·log p + (1-y)·log(1-p)), with p clamped to [Eps, 1-Eps] and labels
// above 0.5 taken as 1. It is NaN for empty input or when a probability is NaN.
func LogLoss(probs, labels []float32) float64 {
	check(probs, labels)
	if len(probs) == 0 {
		return math.NaN()
	}
	var sum float64
	for i, pf := range probs {
		p := float64(pf)
		if p != p {
			return math.NaN()
		}
		p = min(max(p, Eps), 1-Eps)
		if labels[i] > 0.5 {
			sum -= math.Log(p)
		} else {
			sum -= math.Log1p(-p)
		}
	}
	return sum / float64(len(probs))
}

// Accuracy returns the share of examples whose prediction (1 when the
// probability is above 0.5, 0 otherwise, so exactly 0.5 predicts 0, as
// rounding does in DLRM) equals the label (above 0.5 is 1). It is NaN for
// empty input; a NaN probability predicts 0.
func Accuracy(probs, labels []float32) float64 {
	check(probs, labels)
	if len(probs) == 0 {
		return math.NaN()
	}
	right := 0
	for i, p := range probs {
		if (p > 0.5) == (labels[i] > 0.5) {
			right++
		}
	}
	return float64(right) / float64(len(probs))
}

func check(a, b []float32) {
	if len(a) != len(b) {
		panic(fmt.Sprintf("metrics: %d predictions for %d labels", len(a), len(b)))
	}
}
