// Package gcfirst turns the garbage collector off while the program's
// packages initialize, and Restore turns it back on. picasso's
// dependencies allocate about 4.5 MB of tables in their initializers, all
// of which live as long as the process: past the collector's first goal
// (4 MB) that set off a collection that freed nothing, 2-3 ms of every
// command's start on two cores. The command line (internal/cli) imports it
// and calls Restore before a command runs; profile, whose heap lives to
// its end too, keeps the collector off instead (see lazyGC there).
//
// Packages initialize in import-path order where their imports allow, so
// some (those whose paths sort first) still run with the collector on;
// they allocate less than its first goal.
package gcfirst

import "runtime/debug"

// saved is the setting of GOGC (100 unless the environment says
// otherwise) before init turned the collector off.
var saved = debug.SetGCPercent(-1)

// Restore sets the collector back to what GOGC says.
func Restore() { debug.SetGCPercent(saved) }
