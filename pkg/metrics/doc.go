// Package metrics computes the quality measures picasso reports for a
// click-through-rate model: exact area under the ROC curve (AUC), log loss
// (binary cross-entropy) and accuracy at a 0.5 threshold, the three metrics
// FAE reports for every workload (seeds/001 §5, Table 4, following MLPerf).
//
// Inputs are float32 slices of predicted probabilities (any score for AUC)
// and 0/1 labels of the same length, as the trainer and the dataset reader
// produce them; sums are kept in float64. A length mismatch is a programmer
// error and panics.
package metrics
