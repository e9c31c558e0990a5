// Package benchtest checks the files picasso bench writes, for the tests of
// the packages that produce them (pkg/bench and the CLI).
package benchtest

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// notANumber matches what strconv writes for a NaN or an infinity.
var notANumber = regexp.MustCompile(`[+-]?(NaN|Inf)`)

// CheckChart fails t unless path is a well-formed SVG chart of at least
// 400x200 pixels with text and drawn marks, and no coordinate that is not
// a number.
func CheckChart(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := notANumber.Find(b); m != nil {
		t.Errorf("%s holds a coordinate %s", path, m)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	counts := map[string]int{}
	first := true
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed SVG: %v", path, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		counts[se.Name.Local]++
		if !first {
			continue
		}
		first = false
		if se.Name.Local != "svg" {
			t.Fatalf("%s starts with <%s>; want <svg>", path, se.Name.Local)
		}
		var w, h float64
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "width":
				w, _ = strconv.ParseFloat(a.Value, 64)
			case "height":
				h, _ = strconv.ParseFloat(a.Value, 64)
			}
		}
		if w < 400 || h < 200 {
			t.Errorf("%s is %gx%g; want at least 400x200", path, w, h)
		}
	}
	if counts["text"] < 3 || counts["rect"]+counts["path"]+counts["circle"] < 5 {
		t.Errorf("%s holds %v elements; want text and marks", path, counts)
	}
}
