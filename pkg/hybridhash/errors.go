package hybridhash

import "errors"

// Sentinel errors.
var (
	// ErrInvalidOptions: an Options field is out of range.
	ErrInvalidOptions = errors.New("invalid hybridhash options")
	// ErrDisk: the disk tier failed to read or write.
	ErrDisk = errors.New("hybridhash disk tier")
	// ErrCheckpoint: a saved cache state is missing, corrupt or does not
	// match the cache.
	ErrCheckpoint = errors.New("bad hybridhash checkpoint")
)
