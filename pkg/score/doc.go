// Package score applies a trained model to data: it scores every row of a
// dataset in input order (writing the scores as Parquet) and evaluates the
// scores against the labels (AUC, log loss, accuracy and calibration).
//
// It reads the model with train.ReadModel and scores with train.Predictor,
// whose kernels, lanes and batch size are those of the trainer's test
// evaluation: scoring a run's test split reproduces the run's test AUC
// exactly.
package score
