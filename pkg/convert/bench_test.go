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

// BenchmarkConvertCSV converts 100,000 lines of a TalkingData-like log
// (five categorical columns and a time), without a split, split by hash and
// split by time (one more pass).
func BenchmarkConvertCSV(b *testing.B) {
	const lines = 100_000
	var text bytes.Buffer
	text.WriteString("ip,app,device,os,channel,click_time,attributed_time,is_attributed\n")
	for i := range lines {
		fmt.Fprintf(&text, "%d,%d,%d,%d,%d,2017-11-%02d %02d:%02d:%02d,,%d\n", (i*7919)%40000, i%300, i%90, i%130, i%170,
			7+i/40000, (i/1000)%24, (i/60)%60, i%60, i%400/399)
	}
	in := filepath.Join(b.TempDir(), "log.csv")
	if err := os.WriteFile(in, text.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	cols := &Columns{Label: "is_attributed", Sparse: []string{"ip", "app", "device", "os", "channel"},
		Time: "click_time", Ignore: []string{"attributed_time"}}
	split := []SplitPart{{PartTrain, 0.8}, {PartValid, 0.1}, {PartTest, 0.1}}
	for _, tc := range []struct {
		name    string
		split   []SplitPart
		splitBy string
	}{{"nosplit", nil, ""}, {"hash", split, ""}, {"time", split, "click_time"}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(text.Len()))
			dir := b.TempDir()
			i := 0
			for b.Loop() {
				out := filepath.Join(dir, fmt.Sprint(i))
				i++
				res, err := Run(context.Background(), Options{Format: "csv", Columns: cols, Inputs: []string{in}, OutDir: out,
					Split: tc.split, SplitBy: tc.splitBy})
				if err != nil {
					b.Fatal(err)
				}
				if n := res.Rows + res.ValidRows + res.TestRows; n != lines {
					b.Fatalf("rows = %d; want %d", n, lines)
				}
				b.StopTimer()
				os.RemoveAll(out)
				b.StartTimer()
			}
			b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
