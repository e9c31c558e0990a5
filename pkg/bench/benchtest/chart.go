// Package benchtest checks the files picasso bench writes, for the tests of
// the packages that produce them (pkg/bench and the CLI).
package benchtest

import (
	"image/png"
	"os"
	"testing"
)

// CheckChart fails t unless path is a PNG image of at least 400×200 pixels,
// the smallest size at which a chart's labels stay readable.
func CheckChart(t testing.TB, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a valid PNG: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 200 {
		t.Errorf("%s is %dx%d; want at least 400x200", path, b.Dx(), b.Dy())
	}
}
