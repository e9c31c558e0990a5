package cli

import (
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress is a progress bar on stderr, or nothing when stderr is not a
// terminal or --quiet is set.
type progress struct {
	bar *progressbar.ProgressBar
}

func (g *globals) newProgress(total int64, desc string, bytes bool) *progress {
	if g.quiet || !isTerminal(g.stderr) {
		return &progress{}
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(g.stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("rows"),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionFullWidth(),
	}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	}
	return &progress{bar: progressbar.NewOptions64(total, opts...)}
}

// set moves the bar to done of total (safe on a nil bar).
func (p *progress) set(done, total int64) {
	if p == nil || p.bar == nil {
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
