package metrics

import "math"

// Calibration compares predicted click probabilities with the observed
// click rate: overall (MeanScore against Rate) and per bin of equal width
// in probability (a reliability diagram).
type Calibration struct {
	// MeanScore is the mean predicted probability and Rate the share of
	// positive labels; Ratio is MeanScore/Rate (1 is calibrated, above 1
	// over-predicts clicks), NaN when Rate is 0.
	MeanScore float64 `json:"mean_score"`
	Rate      float64 `json:"rate"`
	Ratio     float64 `json:"ratio"`
	// ECE is the expected calibration error: Σ over bins of
	// (rows in bin / rows) × |mean score − observed rate|.
	ECE  float64    `json:"ece"`
	Bins []CalibBin `json:"bins"`
}

// CalibBin is one bin of a Calibration: the scores in [Lo, Hi).
type CalibBin struct {
	Lo        float64 `json:"lo"`
	Hi        float64 `json:"hi"`
	Rows      int     `json:"rows"`
	MeanScore float64 `json:"mean_score"`
	Rate      float64 `json:"rate"`
}

// Calibrate computes the calibration of probs against labels with nbins
// bins of equal width over [0, 1] (a score of 1 falls in the last bin; NaN
// scores are left out of the bins). Empty bins have NaN means.
func Calibrate(probs, labels []float32, nbins int) Calibration {
	check(probs, labels)
	nbins = max(nbins, 1)
	c := Calibration{Bins: make([]CalibBin, nbins)}
	sum := make([]float64, nbins)
	pos := make([]float64, nbins)
	var total, totalPos float64
	n := 0
	for i, p := range probs {
		if p != p {
			continue
		}
		y := 0.0
		if labels[i] > 0.5 {
			y = 1
		}
		k := min(max(int(float64(p)*float64(nbins)), 0), nbins-1)
		c.Bins[k].Rows++
		sum[k] += float64(p)
		pos[k] += y
		total += float64(p)
		totalPos += y
		n++
	}
	c.MeanScore, c.Rate, c.Ratio = math.NaN(), math.NaN(), math.NaN()
	if n > 0 {
		c.MeanScore, c.Rate = total/float64(n), totalPos/float64(n)
		if c.Rate > 0 {
			c.Ratio = c.MeanScore / c.Rate
		}
	}
	for k := range c.Bins {
		b := &c.Bins[k]
		b.Lo, b.Hi = float64(k)/float64(nbins), float64(k+1)/float64(nbins)
		b.MeanScore, b.Rate = math.NaN(), math.NaN()
		if b.Rows > 0 {
			b.MeanScore, b.Rate = sum[k]/float64(b.Rows), pos[k]/float64(b.Rows)
			c.ECE += float64(b.Rows) / float64(n) * math.Abs(b.MeanScore-b.Rate)
		}
	}
	return c
}
