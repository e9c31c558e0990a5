package hybridhash

import (
	"errors"
	"strings"
	"testing"
)

// TestOptionsValidate: every bad field is reported, in one error.
func TestOptionsValidate(t *testing.T) {
	o := Options{Tables: 2, Dim: 4, Width: 3, Bounds: []float64{1}, HotRows: -1, HostBytes: 10, FlushIters: 0, SketchDepth: 17}
	err := o.Validate()
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Validate() = %v; want ErrInvalidOptions", err)
	}
	for _, want := range []string{"width 3", "1 init bounds for 2 tables", "hot rows -1", "host budget 10 bytes", "no disk directory", "flush every 0", "depth 1 to 16"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q; want it to mention %q", err, want)
		}
	}
	good := testOptions(t)
	if err := good.Validate(); err != nil {
		t.Errorf("Validate() of good options = %v; want nil", err)
	}
	wide := testOptions(t)
	wide.Width = maxFloats + 1 // more floats than a disk record holds
	if err := wide.Validate(); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "width 65536") {
		t.Errorf("Validate() of a %d-float row = %v; want it refused", wide.Width, err)
	}
}
