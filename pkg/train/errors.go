package train

import "errors"

var (
	// ErrInvalidOptions reports Options that cannot train: a bad value, a
	// mode that needs data the options do not provide, a model shape that
	// does not match the data.
	ErrInvalidOptions = errors.New("train: invalid options")

	// ErrCheckpoint reports a checkpoint that cannot be read or does not
	// match the run resuming from it.
	ErrCheckpoint = errors.New("train: bad checkpoint")

	// ErrInterrupted reports a run stopped by its context; the checkpoint it
	// wrote resumes it. Errors wrapping it also wrap the context's error.
	ErrInterrupted = errors.New("train: interrupted")

	// ErrDiverged reports a loss that became NaN or infinite.
	ErrDiverged = errors.New("train: loss is not finite")
)
