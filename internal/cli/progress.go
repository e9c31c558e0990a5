package cli

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress is a progress bar on stderr, or nothing when stderr is not a
// terminal or --quiet is set.
type progress struct {
	bar   *progressbar.ProgressBar
	start time.Time
}

// progressWarmup is how long a bar waits before it shows anything: its rate
// is the count over the elapsed time, absurd over the first milliseconds
// (a block of input read in one go).
const progressWarmup = 500 * time.Millisecond

func (g *globals) newProgress(total int64, desc string, bytes bool) *progress {
	if g.quiet || !isTerminal(g.stderr) {
		return &progress{}
	}
	return newProgressTo(g.stderr, total, desc, bytes)
}

// newProgressTo is a progress bar drawn on w.
func newProgressTo(w io.Writer, total int64, desc string, bytes bool) *progress {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionFullWidth(),
	}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true)) // counts and rates in B, KB, MB
	} else {
		opts = append(opts, progressbar.OptionSetItsString("rows"))
	}
	bar := progressbar.NewOptions64(total, opts...)
	// The bar's clock starts now, not at its first drawing: drawn first
	// after the warm-up, with a count already large, it showed rates of
	// billions of rows a second.
	bar.StartWithoutRender()
	return &progress{bar: bar, start: time.Now()}
}

// set moves the bar to done of total (safe on a nil bar).
func (p *progress) set(done, total int64) {
	if p == nil || p.bar == nil {
		return
	}
	if time.Since(p.start) < progressWarmup {
		return
	}
	if total > 0 && total != p.bar.GetMax64() {
		p.bar.ChangeMax64(total)
	}
	_ = p.bar.Set64(done)
}

func (p *progress) finish() {
	if p == nil || p.bar == nil {
		return
	}
	_ = p.bar.Finish()
}
