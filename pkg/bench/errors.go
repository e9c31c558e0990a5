package bench

import "errors"

var (
	// ErrInvalidOptions marks options the bench cannot run with.
	ErrInvalidOptions = errors.New("invalid bench options")
	// ErrPrep marks a failure to profile or classify the data.
	ErrPrep = errors.New("bench preparation failed")
)
