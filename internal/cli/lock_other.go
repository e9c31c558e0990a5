//go:build !unix

package cli

import "os"

// flockExclusive does not lock where flock is unavailable.
func flockExclusive(*os.File) error { return nil }
