package convert

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkConvertCriteo converts 100,000 synthetic Criteo TSV lines
// (about 17 MB) to Parquet, end to end, in each ID mode.
func BenchmarkConvertCriteo(b *testing.B) {
	const lines = 100_000
	text := synthCriteo(lines, 42)
	in := filepath.Join(b.TempDir(), "day.tsv")
	if err := os.WriteFile(in, text, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, ids := range []string{Hash, Reindex} {
		b.Run(ids, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			dir := b.TempDir()
			i := 0
			for b.Loop() {
				out := filepath.Join(dir, fmt.Sprint(i))
				i++
				res, err := Run(context.Background(), Options{Format: "criteo", Inputs: []string{in}, OutDir: out, IDs: ids})
				if err != nil {
					b.Fatal(err)
				}
				if res.Rows != lines {
					b.Fatalf("Rows = %d; want %d", res.Rows, lines)
				}
				b.StopTimer()
				os.RemoveAll(out)
				b.StartTimer()
			}
			b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkParseCriteoLine measures the line parser alone.
func BenchmarkParseCriteoLine(b *testing.B) {
	lines := bytes.Split(bytes.TrimSuffix(synthCriteo(1000, 7), []byte{'\n'}), []byte{'\n'})
	lay := criteoDefaultLayout('\t')
	row := newParsedRow(13, 26)
	n := 0
	for b.Loop() {
		if err := parseLine(lines[n%len(lines)], lay, row); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}
