package classify

import "errors"

// ErrExists marks an output directory that already exists.
var ErrExists = errors.New("output exists")
