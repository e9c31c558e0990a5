package cli

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestProgressRateAfterWarmup: the first rate a bar shows, after its
// warm-up, is the count over the time since the bar was made (it was over
// the time since its first drawing: billions of rows a second).
func TestProgressRateAfterWarmup(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressTo(&buf, 10_000, "test", false)
	time.Sleep(progressWarmup + 100*time.Millisecond)
	p.set(1000, 10_000)
	m := regexp.MustCompile(`([0-9.]+) rows/s`).FindStringSubmatch(buf.String())
	if m == nil {
		t.Fatalf("no rate drawn: %q", buf.String())
	}
	// 1000 rows in at least 0.6 s: at most about 1,700 a second.
	if rate, _ := strconv.ParseFloat(m[1], 64); rate > 2000 {
		t.Errorf("first rate %v rows/s for 1000 rows after %v; want the count over the time since the start", rate, progressWarmup)
	}
}

// TestProgressLinesWithoutTerminal: without a terminal, progress is a line
// every progressLineEvery, with the share done, the rate and the time
// left; none before.
func TestProgressLinesWithoutTerminal(t *testing.T) {
	var buf bytes.Buffer
	g := &globals{stderr: &buf}
	p := g.newProgress(0, "classify", false)
	p.set(10, 100)
	if buf.Len() != 0 {
		t.Fatalf("a line before %v: %q", progressLineEvery, buf.String())
	}
	p.start = p.start.Add(-20 * time.Second) // as if the work had lasted 20 s
	p.last = p.last.Add(-20 * time.Second)
	p.set(40, 100)
	want := regexp.MustCompile(`^classify: 40% \(40 of 100 rows, 2 rows/s, (29|30)s left\)\n$`)
	if !want.MatchString(buf.String()) {
		t.Errorf("line %q; want it to match %v", buf.String(), want)
	}
	p.set(50, 100)
	if n := bytes.Count(buf.Bytes(), []byte{'\n'}); n != 1 {
		t.Errorf("%d lines within %v; want 1", n, progressLineEvery)
	}
	p.finish()
}

// TestProgressResumed: a resumed run's rate counts only its own work.
func TestProgressResumed(t *testing.T) {
	var buf bytes.Buffer
	g := &globals{stderr: &buf}
	p := g.newProgress(0, "train", false)
	p.resumeAt(9000)
	p.start = p.start.Add(-20 * time.Second)
	p.last = p.last.Add(-20 * time.Second)
	p.set(9200, 10000) // 200 rows in 20 s
	want := regexp.MustCompile(`^train: 92% \(9200 of 10000 rows, 10 rows/s, 1m(19|20)s left\)\n$`)
	if !want.MatchString(buf.String()) {
		t.Errorf("line %q; want it to match %v", buf.String(), want)
	}
}
