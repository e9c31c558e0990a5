package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func f32(v ...float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func near(got, want float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) < 1e-9
}

func TestAUC(t *testing.T) {
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name           string
		scores, labels []float32
		want           float64
	}{
		// Positives 0.35, 0.8 against negatives 0.1, 0.4: 3 of 4 pairs right.
		{"no ties", f32(0.1, 0.4, 0.35, 0.8), f32(0, 0, 1, 1), 0.75},
		{"perfect", f32(0.1, 0.2, 0.8, 0.9), f32(0, 0, 1, 1), 1},
		{"inverted", f32(0.9, 0.1), f32(0, 1), 0},
		{"all tied", f32(0.5, 0.5, 0.5, 0.5), f32(0, 1, 0, 1), 0.5},
		// Pairs: (0.5,0.2)=1 (0.5,0.5)=½ (0.9,0.2)=1 (0.9,0.5)=1 → 3.5/4.
		{"one tie across classes", f32(0.2, 0.5, 0.5, 0.9), f32(0, 1, 0, 1), 0.875},
		// Positives 0.3, 0.3, 0.7; negatives 0.1, 0.3: 1.5+1.5+2 = 5 of 6.
		{"three-way tie", f32(0.1, 0.3, 0.3, 0.3, 0.7), f32(0, 1, 0, 1, 1), 5.0 / 6},
		// -0 and +0 tie; negative scores order below them.
		{"signed zeros and negatives", f32(-1, negZero, 0, 2), f32(0, 1, 0, 1), 0.875},
		{"labels as any value above 0.5", f32(0.1, 0.9), f32(0, 0.75), 1},
		{"only positives", f32(0.1, 0.9), f32(1, 1), math.NaN()},
		{"only negatives", f32(0.1, 0.9), f32(0, 0), math.NaN()},
		{"empty", nil, nil, math.NaN()},
		{"NaN score", f32(0.1, math.NaN(), 0.3), f32(0, 1, 1), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AUC(tt.scores, tt.labels); !near(got, tt.want) {
				t.Errorf("AUC(%v, %v) = %v; want %v", tt.scores, tt.labels, got, tt.want)
			}
		})
	}
}

// bruteAUC counts every positive-negative pair.
func bruteAUC(scores, labels []float32) float64 {
	var wins, pairs float64
	for i := range scores {
		if labels[i] != 1 {
			continue
		}
		for j := range scores {
			if labels[j] != 0 {
				continue
			}
			pairs++
			switch {
			case scores[i] > scores[j]:
				wins++
			case scores[i] == scores[j]:
				wins += 0.5
			}
		}
	}
	return wins / pairs
}

func TestAUCMatchesPairCount(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		n := 2 + r.IntN(300)
		levels := 1 + r.IntN(20) // few distinct scores: many ties
		scores := make([]float32, n)
		labels := make([]float32, n)
		for i := range scores {
			scores[i] = float32(r.IntN(levels)-levels/2) / 7
			if r.Float64() < 0.3+0.4*float64(scores[i]) {
				labels[i] = 1
			}
		}
		labels[0], labels[1] = 0, 1
		want := bruteAUC(scores, labels)
		if got := AUC(scores, labels); math.Abs(got-want) > 1e-12 {
			t.Fatalf("trial %d: AUC = %v; want %v (pair count)", trial, got, want)
		}
	}
}

func TestLogLoss(t *testing.T) {
	tests := []struct {
		name          string
		probs, labels []float32
		want          float64
	}{
		{"two rows", f32(0.9, 0.2), f32(1, 0), (-math.Log(0.9) - math.Log(0.8)) / 2},
		{"coin", f32(0.5, 0.5), f32(1, 0), math.Ln2},
		{"clamped mistakes", f32(0, 1), f32(1, 0), -math.Log(Eps)},
		{"clamped hits", f32(1, 0), f32(1, 0), -math.Log(1 - Eps)},
		{"empty", nil, nil, math.NaN()},
		{"NaN probability", f32(0.5, math.NaN()), f32(1, 0), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// float32 inputs: compare to 1e-6 relative.
			got := LogLoss(tt.probs, tt.labels)
			if math.IsNaN(tt.want) != math.IsNaN(got) || math.Abs(got-tt.want) > 1e-6*math.Max(1, math.Abs(tt.want)) {
				t.Errorf("LogLoss(%v, %v) = %v; want %v", tt.probs, tt.labels, got, tt.want)
			}
		})
	}
}

func TestAccuracy(t *testing.T) {
	tests := []struct {
		name          string
		probs, labels []float32
		want          float64
	}{
		// Predictions 1, 0 (0.5 predicts 0), 1, 0.
		{"threshold", f32(0.9, 0.5, 0.51, 0.2), f32(1, 1, 1, 0), 0.75},
		{"all right", f32(0.1, 0.7), f32(0, 1), 1},
		{"all wrong", f32(0.9, 0.3), f32(0, 1), 0},
		{"empty", nil, nil, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Accuracy(tt.probs, tt.labels); !near(got, tt.want) {
				t.Errorf("Accuracy(%v, %v) = %v; want %v", tt.probs, tt.labels, got, tt.want)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	probs, labels := f32(0.1, 0.4, 0.35, 0.8), f32(0, 0, 1, 1)
	got := Evaluate(probs, labels)
	if got.N != 4 || got.Positives != 2 || !near(got.AUC, 0.75) || !near(got.Accuracy, 0.75) ||
		!near(got.LogLoss, LogLoss(probs, labels)) {
		t.Errorf("Evaluate = %+v; want N 4, Positives 2, AUC 0.75, Accuracy 0.75", got)
	}
}

func TestLengthMismatchPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("AUC with 2 scores and 1 label did not panic")
		}
	}()
	AUC(f32(0.1, 0.2), f32(1))
}

func ExampleEvaluate() {
	probs := []float32{0.1, 0.4, 0.35, 0.8}
	labels := []float32{0, 0, 1, 1}
	s := Evaluate(probs, labels)
	fmt.Printf("AUC %.2f, accuracy %.2f, log loss %.3f\n", s.AUC, s.Accuracy, s.LogLoss)
	// Output: AUC 0.75, accuracy 0.75, log loss 0.472
}

func BenchmarkAUC(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 1 << 20
	scores := make([]float32, n)
	labels := make([]float32, n)
	for i := range scores {
		scores[i] = r.Float32()
		if r.Float32() < scores[i] {
			labels[i] = 1
		}
	}
	b.ResetTimer()
	for b.Loop() {
		AUC(scores, labels)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func TestCalibrate(t *testing.T) {
	probs := []float32{0.05, 0.15, 0.15, 0.95, 1, float32(math.NaN())}
	labels := []float32{0, 0, 1, 1, 1, 1}
	c := Calibrate(probs, labels, 10)
	if c.Bins[0].Rows != 1 || c.Bins[1].Rows != 2 || c.Bins[9].Rows != 2 {
		t.Fatalf("Calibrate bins %+v; want 1 in bin 0, 2 in bin 1, 2 in bin 9", c.Bins)
	}
	if math.Abs(c.MeanScore-0.46) > 1e-6 || c.Rate != 0.6 {
		t.Errorf("Calibrate mean %v rate %v; want 0.46 and 0.6", c.MeanScore, c.Rate)
	}
	// |0.05-0|·1 + |0.15-0.5|·2 + |0.975-1|·2, over 5 rows.
	if want := (0.05 + 0.7 + 0.05) / 5; math.Abs(c.ECE-want) > 1e-6 {
		t.Errorf("Calibrate ECE %v; want %v", c.ECE, want)
	}
	if !math.IsNaN(c.Bins[5].MeanScore) {
		t.Errorf("empty bin mean %v; want NaN", c.Bins[5].MeanScore)
	}
}
