package hybridhash

import (
	"cmp"
	"errors"
	"fmt"
)

// Options configures a Cache. Zero fields marked "default" take it in
// Validate's caller, New.
type Options struct {
	// Tables is the number of embedding tables; Dim the floats of a row's
	// embedding and Width the floats stored per row (Dim plus the
	// optimizer's state, e.g. Dim+1 for row-wise Adagrad).
	Tables, Dim, Width int
	// Bounds holds each table's initial-value bound: a new row is uniform
	// in [-Bounds[t], Bounds[t]) (InitRow); its state starts at zero.
	Bounds []float64
	// Seed seeds the rows' initial values and the counter's hashes.
	Seed uint64
	// HotRows is k, the rows the hot store (device memory) holds.
	HotRows int
	// HostBytes bounds the host tier: rows of Width floats plus about 64
	// bytes each of bookkeeping.
	HostBytes int64
	// DiskDir holds the disk tier's log, rows.log (created; a log already
	// there is indexed and reused).
	DiskDir string
	// WarmupIters are the steps served from the cold storage alone while the
	// counter warms up (Algorithm 1, L8-12); then the hot set is refreshed
	// every FlushIters steps (L23-26).
	WarmupIters, FlushIters int64
	// DecayIters halves every count that often (0: never), so that the
	// counter follows drift. Default: 4·FlushIters.
	DecayIters int64
	// AdmitAfter is the sightings an unknown ID needs before it gets a row
	// of its own (1: at once); until then lookups of it are served by its
	// table's default row. Default 2.
	AdmitAfter uint32
	// SketchWidth and SketchDepth size the count-min sketch (default 2^18 ×
	// 4: 4 MiB); Heavy is the number of heavy hitters kept (default
	// 1.25·HotRows, at least 1024; the set holds up to twice that between
	// prunings).
	SketchWidth, SketchDepth, Heavy int
	// DiskBatchRows is the rows written to disk per batch (default 4096).
	DiskBatchRows int
}

// withDefaults returns o with its zero defaults filled in.
func (o Options) withDefaults() Options {
	o.DecayIters = cmp.Or(o.DecayIters, 4*o.FlushIters)
	o.AdmitAfter = cmp.Or(o.AdmitAfter, 2)
	o.SketchWidth = cmp.Or(o.SketchWidth, 1<<18)
	o.SketchDepth = cmp.Or(o.SketchDepth, 4)
	o.Heavy = cmp.Or(o.Heavy, max(o.HotRows+o.HotRows/4, 1024))
	o.DiskBatchRows = cmp.Or(o.DiskBatchRows, 4096)
	return o
}

// HostRows returns how many rows a host budget holds at a row width.
func HostRows(hostBytes int64, width int) int64 {
	return hostBytes / int64(4*width+hostEntryOverhead)
}

// Validate reports every problem with o at once (after defaults).
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("hybridhash: "+format+": %w", append(a, ErrInvalidOptions)...))
	}
	if o.Tables < 1 || o.Dim < 1 || o.Width < o.Dim || o.Width > maxFloats {
		bad("%d tables, dim %d, row width %d (want tables ≥ 1, dim ≥ 1, dim ≤ width ≤ %d)", o.Tables, o.Dim, o.Width, maxFloats)
	}
	if len(o.Bounds) != o.Tables {
		bad("%d init bounds for %d tables", len(o.Bounds), o.Tables)
	}
	if o.HotRows < 0 {
		bad("hot rows %d", o.HotRows)
	}
	if r := HostRows(o.HostBytes, o.Width); r < hostShards {
		bad("host budget %d bytes holds %d rows of %d floats; want at least %d", o.HostBytes, r, o.Width, hostShards)
	}
	if o.DiskDir == "" {
		bad("no disk directory")
	}
	if o.WarmupIters < 0 || o.FlushIters < 1 || o.DecayIters < 0 {
		bad("warm-up %d, flush every %d, decay every %d steps (want ≥ 0, ≥ 1, ≥ 0)", o.WarmupIters, o.FlushIters, o.DecayIters)
	}
	if o.SketchWidth < 1 || o.SketchDepth < 1 || o.SketchDepth > 16 || o.Heavy < o.HotRows {
		bad("sketch %d × %d (depth 1 to 16), %d heavy hitters for %d hot rows", o.SketchWidth, o.SketchDepth, o.Heavy, o.HotRows)
	}
	if o.DiskBatchRows < 1 {
		bad("disk batch %d rows (want ≥ 1)", o.DiskBatchRows)
	}
	return errors.Join(errs...)
}
