package profile

import "errors"

// Sentinel errors; they are wrapped with where the problem is.
var (
	// ErrOptions marks invalid Options.
	ErrOptions = errors.New("invalid options")
	// ErrBudget marks a budget that not even the largest meaningful
	// threshold fits (for example, the small tables alone exceed it).
	ErrBudget = errors.New("budget too small")
	// ErrCorrupt marks a logger side file or profile that fails its checks
	// (magic, version, lengths, checksum).
	ErrCorrupt = errors.New("corrupt profile file")
	// ErrVersion marks a file written by a newer, unknown format version.
	ErrVersion = errors.New("unsupported profile format version")
	// ErrMismatch marks loggers or batches whose tables do not match.
	ErrMismatch = errors.New("table layout mismatch")
	// ErrEmpty marks a sample with no inputs.
	ErrEmpty = errors.New("empty sample")
)
