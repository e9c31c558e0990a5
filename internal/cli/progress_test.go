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
