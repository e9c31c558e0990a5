package cli

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestLazyGC: a profile runs with the collector off under a soft memory
// limit of the tables' growth twice over and a GiB; once the heap has
// grown by half of that, check lets the collector run at GOGC=400; restore
// puts back the environment's settings.
func TestLazyGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	wasPct, wasLimit := gcPercent(), debug.SetMemoryLimit(-1)
	spec := &dataset.Spec{Sparse: []dataset.SparseFeature{{Name: "a", Rows: 1 << 20}, {Name: "b", Rows: 10}}}
	runtime.GC() // the earlier tests' garbage, swept now rather than during the test
	start := heapBytes()
	check, restore := lazyGC(spec)
	if p := gcPercent(); p != -1 {
		t.Fatalf("collector at GOGC=%d during the profile; want off", p)
	}
	limit := debug.SetMemoryLimit(-1)
	want := start + 2*4*(1<<20+10) + 1<<30
	if half := int64(physicalMemory() / 2); half > 0 {
		want = min(want, half)
	}
	if limit < want-64<<20 || limit > want+64<<20 {
		t.Fatalf("soft limit %d; want about %d", limit, want)
	}
	check()
	if p := gcPercent(); p != -1 {
		t.Fatalf("check on a small heap set GOGC=%d; want the collector still off", p)
	}
	big := make([]byte, (limit-start)/2+1<<20) // not touched: no memory used
	check()
	if p := gcPercent(); p != 400 {
		t.Fatalf("check past half the growth: GOGC=%d, want 400", p)
	}
	runtime.KeepAlive(big)
	big = nil
	restore()
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); l != wasLimit || p == -1 && wasPct != -1 {
		t.Fatalf("after restore GOGC=%d, limit %d; want the collector on and limit %d", p, l, wasLimit)
	}
}
