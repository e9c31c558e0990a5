package layout

import "errors"

// ErrInvalid marks a directory that is not a complete, consistent layout.
var ErrInvalid = errors.New("invalid layout")
