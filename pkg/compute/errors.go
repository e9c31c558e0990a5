package compute

import "errors"

var (
	// ErrBLASUnavailable reports that no BLAS library could be loaded at run
	// time. With Options.BLAS "auto" it is not fatal: the backend runs gonum's
	// pure-Go GEMM and CPU.Fallback returns the wrapped reason.
	ErrBLASUnavailable = errors.New("compute: BLAS library unavailable")

	// ErrInvalidOptions reports a bad Options value.
	ErrInvalidOptions = errors.New("compute: invalid options")

	// ErrIDOutOfRange reports an embedding ID outside its table.
	ErrIDOutOfRange = errors.New("compute: embedding id out of range")

	// ErrBadOffsets reports bag offsets that are not a valid CSR index.
	ErrBadOffsets = errors.New("compute: bad bag offsets")

	// ErrOutOfMemory reports an allocation the backend's memory cannot hold.
	ErrOutOfMemory = errors.New("compute: out of memory")

	// ErrBadPlan reports a shard plan that does not cover every table exactly once.
	ErrBadPlan = errors.New("compute: bad shard plan")
)
