package classify

import "errors"

var (
	// ErrLayout marks a directory that is not a complete, consistent layout.
	ErrLayout = errors.New("invalid layout")
	// ErrExists marks an output directory that already exists.
	ErrExists = errors.New("output exists")
)
