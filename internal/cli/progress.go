package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress is a progress bar on stderr when it is a terminal; when it is
// not (a log file, CI, nohup), a line every progressLineEvery on work that
// lasts that long; nothing with --quiet.
type progress struct {
	bar   *progressbar.ProgressBar
	start time.Time

	lines io.Writer // where the lines go, when there is no bar
	desc  string
	bytes bool
	last  time.Time // when the last line was written

	base int64 // work done before this run (resumeAt): no part of its rate
}

// progressLineEvery is how often progress without a terminal writes a line.
const progressLineEvery = 10 * time.Second

// progressWarmup is how long a bar waits before it shows anything: its rate
// is the count over the elapsed time, absurd over the first milliseconds
// (a block of input read in one go).
const progressWarmup = 500 * time.Millisecond

func (g *globals) newProgress(total int64, desc string, bytes bool) *progress {
	if g.quiet {
		return &progress{}
	}
	if !isTerminal(g.stderr) {
		now := time.Now()
		return &progress{lines: g.stderr, desc: desc, bytes: bytes, start: now, last: now}
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

// resumeAt says that done was done before this run (a resumed train): the
// bar then shows this run's part of the work, and rates and the time left
// count only what this run does. Counted as done now, it made a resumed
// run's first rate millions of rows a second.
func (p *progress) resumeAt(done int64) {
	if p == nil {
		return
	}
	p.base = done
}

// set moves the bar to done of total (safe on a nil bar).
func (p *progress) set(done, total int64) {
	if p == nil {
		return
	}
	if p.lines != nil {
		p.line(done, total)
		return
	}
	if p.bar == nil {
		return
	}
	if time.Since(p.start) < progressWarmup {
		return
	}
	if total > 0 && total-p.base != p.bar.GetMax64() {
		p.bar.ChangeMax64(total - p.base)
	}
	_ = p.bar.Set64(done - p.base)
}

func (p *progress) finish() {
	if p == nil || p.bar == nil {
		return
	}
	_ = p.bar.Finish()
}

// line writes a progress line when progressLineEvery has passed since the
// last one: "profile: 45% (2025000 of 4500000 rows, 1210000 rows/s, 1m12s
// left)".
func (p *progress) line(done, total int64) {
	now := time.Now()
	if now.Sub(p.last) < progressLineEvery {
		return
	}
	p.last = now
	unit := "rows"
	if p.bytes {
		unit = "bytes"
	}
	el := now.Sub(p.start).Seconds()
	rate := float64(done-p.base) / el
	msg := fmt.Sprintf("%s: %d %s, %.0f %s/s", p.desc, done, unit, rate, unit)
	if total > 0 {
		left := ""
		if rate > 0 && done < total {
			left = fmt.Sprintf(", %s left", time.Duration(float64(total-done)/rate*float64(time.Second)).Round(time.Second))
		}
		msg = fmt.Sprintf("%s: %.0f%% (%d of %d %s, %.0f %s/s%s)", p.desc, 100*float64(done)/float64(total), done, total, unit, rate, unit, left)
	}
	fmt.Fprintln(p.lines, msg)
}
