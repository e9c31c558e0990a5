package profile

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// sideLogger covers every encoding: a dense table stored dense, a dense
// table stored sparse (few rows seen), a hash-map table with 64-bit IDs
// (so kept IDs are int64) and a multi-hot feature on a shared table.
func sideLogger(t *testing.T) *Logger { return sideLoggerOf(t, true) }

// sideLoggerOf is sideLogger, with its third table of 1<<40 rows (wide) or
// of 70,000 rows (kept IDs of 32 bits, stored in 1, 2 and 3 bytes).
func sideLoggerOf(t *testing.T, wide bool) *Logger {
	t.Helper()
	third := int64(70_000)
	if wide {
		third = 1 << 40
	}
	spec := &dataset.Spec{Train: "x", Label: "label", Sparse: []dataset.SparseFeature{
		{Name: "a", Rows: 1000},
		{Name: "few", Rows: 200_000},
		{Name: "huge", Rows: third, IDs: dataset.IDHash},
		{Name: "m", Rows: 50, Table: "shared", MultiHot: true},
		{Name: "s", Rows: 50, Table: "shared"},
	}}
	lg, err := NewLogger(spec, LoggerOptions{KeepInputs: 0.7, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	in := zipfInputs(2, 3000, []tab{{"a", 1000}, {"few", 100}, {"huge", 5000}, {"s", 50}}, []float64{1.2, 1.5, 1.1, 1.3})
	for lo := 0; lo < len(in); lo += 700 {
		hi := min(lo+700, len(in))
		b := &dataset.Batch{N: hi - lo, Pos: dataset.Position{File: "f", RowGroup: lo / 700}, Sparse: make([]dataset.SparseColumn, 5)}
		b.Sparse[3].Offsets = []int32{0}
		for i := lo; i < hi; i++ {
			b.Sparse[0].IDs = append(b.Sparse[0].IDs, in[i][0])
			b.Sparse[1].IDs = append(b.Sparse[1].IDs, in[i][1]*1997)
			b.Sparse[2].IDs = append(b.Sparse[2].IDs, dataset.HashID(in[i][2], third))
			for j := 0; j < i%3; j++ { // 0, 1 or 2 IDs
				b.Sparse[3].IDs = append(b.Sparse[3].IDs, (in[i][3]+int64(j))%50)
			}
			b.Sparse[3].Offsets = append(b.Sparse[3].Offsets, int32(len(b.Sparse[3].IDs)))
			b.Sparse[4].IDs = append(b.Sparse[4].IDs, in[i][3])
		}
		if err := lg.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	lg.Info = SampleInfo{RowsSampled: lg.Info.RowsSampled, RowsTotal: 60000, SampleRate: 5, Sampling: SamplingRowGroups, Seed: 4, Fingerprint: "abc"}
	return lg
}

func countsOf(l *Logger) [][][2]int64 {
	out := make([][][2]int64, len(l.tables))
	for z := range l.tables {
		l.ForEach(z, func(id int64, c uint32) { out[z] = append(out[z], [2]int64{id, int64(c)}) })
	}
	return out
}

// keptOf is l's kept inputs as the file holds them: blocks of one weight
// in a row are one.
type keptRun struct {
	weight float64
	n      int64
	ids32  []uint32
	ids64  []int64
	lens   []uint32
}

func keptOf(l *Logger) []keptRun {
	var out []keptRun
	for i, b := range l.blocks {
		if i == 0 || b.weight != l.blocks[i-1].weight {
			out = append(out, keptRun{weight: b.weight})
		}
		r := &out[len(out)-1]
		r.n += b.n
		if !l.wide {
			p, li := 0, 0
			l.lay.eachID(b.n, b.lens, &li, func(f int) {
				w := l.lay.feats[f].width
				r.ids32 = append(r.ids32, idAt(b.packed, p, w))
				p += w
			})
		}
		r.ids64 = append(r.ids64, b.ids64...)
		r.lens = append(r.lens, b.lens...)
	}
	return out
}

func TestSideFileRoundTrip(t *testing.T) {
	for _, wide := range []bool{true, false} {
		t.Run(fmt.Sprintf("wide=%v", wide), func(t *testing.T) { testSideFileRoundTrip(t, wide) })
	}
}

func testSideFileRoundTrip(t *testing.T, wide bool) {
	lg := sideLoggerOf(t, wide)
	if lg.wide != wide || (lg.tables[2].sparse == nil) != (lg.tables[2].dense != nil) || lg.KeptInputs() == 0 {
		t.Fatalf("test logger: wide %v, map table %v, kept %d; want %v, %v, > 0", lg.wide, lg.tables[2].sparse != nil, lg.KeptInputs(), wide, wide)
	}
	path := filepath.Join(t.TempDir(), "profile.counts")
	if err := lg.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLogger(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Info != lg.Info {
		t.Errorf("info = %+v; want %+v", got.Info, lg.Info)
	}
	if !reflect.DeepEqual(got.Tables(), lg.Tables()) || !reflect.DeepEqual(got.Features(), lg.Features()) {
		t.Errorf("tables, features = %v, %v; want %v, %v", got.Tables(), got.Features(), lg.Tables(), lg.Features())
	}
	if !reflect.DeepEqual(countsOf(got), countsOf(lg)) {
		t.Errorf("counts differ after the round trip")
	}
	for z := range lg.tables {
		if got.Accesses(z) != lg.Accesses(z) {
			t.Errorf("table %d: accesses %d; want %d", z, got.Accesses(z), lg.Accesses(z))
		}
	}
	if !reflect.DeepEqual(keptOf(got), keptOf(lg)) {
		t.Errorf("kept inputs differ after the round trip (%d inputs; want %d)", got.KeptInputs(), lg.KeptInputs())
	}
	opts := DefaultOptions()
	opts.Budget = 1 << 20
	opts.ChunkSize = 16
	ra, err := Analyze(context.Background(), got, opts)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := Analyze(context.Background(), lg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(ra)
	jw, _ := json.Marshal(rw)
	if string(ja) != string(jw) {
		t.Errorf("result from the read logger =\n%s\nwant\n%s", ja, jw)
	}
	if ra.HotInputShare < 0 || ra.HotInputShare > ra.HotInputShareInSample {
		t.Errorf("hot input share %v (in sample %v); want in [0, in-sample]", ra.HotInputShare, ra.HotInputShareInSample)
	}

	// The result file too.
	rpath := filepath.Join(t.TempDir(), "profile.json")
	if err := WriteResult(rpath, ra); err != nil {
		t.Fatal(err)
	}
	rr, err := ReadResult(rpath)
	if err != nil {
		t.Fatal(err)
	}
	if jr, _ := json.Marshal(rr); string(jr) != string(ja) {
		t.Errorf("ReadResult =\n%s\nwant\n%s", jr, ja)
	}
}

// TestSideFileVersion1 reads counts files the previous format version
// wrote (testdata, written from sideLoggerOf) and checks they hold the
// logger the current one writes, in a smaller file.
func TestSideFileVersion1(t *testing.T) {
	for _, wide := range []bool{false, true} {
		name := map[bool]string{false: "narrow", true: "wide"}[wide]
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", "counts-v1-"+name+".counts")
			got, err := ReadLogger(path)
			if err != nil {
				t.Fatal(err)
			}
			want := sideLoggerOf(t, wide)
			if got.Info != want.Info || !reflect.DeepEqual(got.Tables(), want.Tables()) || !reflect.DeepEqual(got.Features(), want.Features()) {
				t.Errorf("header = %+v %v %v; want %+v %v %v", got.Info, got.Tables(), got.Features(), want.Info, want.Tables(), want.Features())
			}
			if !reflect.DeepEqual(countsOf(got), countsOf(want)) {
				t.Errorf("counts differ from the logger's")
			}
			if !reflect.DeepEqual(keptOf(got), keptOf(want)) {
				t.Errorf("kept inputs differ from the logger's")
			}
			var b bytes.Buffer
			if err := want.encode(&b); err != nil {
				t.Fatal(err)
			}
			old, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if !wide && float64(b.Len()) > 0.6*float64(old.Size()) {
				t.Errorf("version %d file is %d bytes; want at most 0.6 of version 1's %d", loggerVersion, b.Len(), old.Size())
			}
		})
	}
}

func TestSideFileCorrupt(t *testing.T) {
	for _, wide := range []bool{true, false} {
		t.Run(fmt.Sprintf("wide=%v", wide), func(t *testing.T) { testSideFileCorrupt(t, wide) })
	}
}

func testSideFileCorrupt(t *testing.T, wide bool) {
	lg := sideLoggerOf(t, wide)
	dir := t.TempDir()
	path := filepath.Join(dir, "good")
	if err := lg.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, data []byte) {
		t.Helper()
		_, err := decodeLogger(bufio.NewReader(bytes.NewReader(data)))
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
			t.Errorf("ReadLogger(%s) error = %v; want ErrCorrupt or ErrVersion", what, err)
		}
	}
	// Flip one bit at positions spread over the whole file, densely in the
	// first 300 bytes (magic, version, header).
	var positions []int
	for p := 0; p < min(300, len(good)); p++ {
		positions = append(positions, p)
	}
	for p := 300; p < len(good); p += max(1, len(good)/200) {
		positions = append(positions, p)
	}
	positions = append(positions, len(good)-1)
	for _, p := range positions {
		data := append([]byte(nil), good...)
		data[p] ^= 1 << (p % 8)
		check("bit flip", data)
	}
	for _, n := range []int{0, 3, 8, 12, 16, 100, len(good) / 2, len(good) - 4, len(good) - 1} {
		check("truncated", good[:n])
	}
	check("trailing byte", append(append([]byte(nil), good...), 0))
	// Through the file API as well.
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, good[:len(good)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLogger(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ReadLogger(truncated file) error = %v; want ErrCorrupt", err)
	}
	if _, err := ReadLogger(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("ReadLogger(missing file) error = nil; want one")
	}
	// A result file with a newer version is refused.
	rpath := filepath.Join(dir, "profile.json")
	if err := os.WriteFile(rpath, []byte(`{"version": 99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResult(rpath); !errors.Is(err, ErrVersion) {
		t.Errorf("ReadResult(version 99) error = %v; want ErrVersion", err)
	}
}

// TestPairMismatch: profile.json names the digest of its counts file, so
// counts from another run (a kill between the two renames left a new
// counts file beside an old profile.json) are refused, not used silently.
func TestPairMismatch(t *testing.T) {
	dir := t.TempDir()
	jsonPath, countsPath := filepath.Join(dir, "profile.json"), filepath.Join(dir, "profile.counts")
	lg := sideLogger(t)
	res := &Result{Version: ResultVersion, Method: MethodTInterval, Optimizer: OptimizerAdagrad, Threshold: 3e-3, Confidence: 0.99}
	if err := WritePair(jsonPath, countsPath, res, lg); err != nil {
		t.Fatal(err)
	}
	got, gotLg, err := ReadPair(jsonPath)
	if err != nil {
		t.Fatalf("ReadPair of a fresh pair: %v", err)
	}
	if len(got.LoggerXXH64) != 16 || got.LoggerSHA256 != "" || got.LoggerFile != "profile.counts" || !reflect.DeepEqual(countsOf(gotLg), countsOf(lg)) {
		t.Fatalf("ReadPair = digest %q (SHA-256 %q), file %q; want 16 hex digits of XXH64, profile.counts and the written counts",
			got.LoggerXXH64, got.LoggerSHA256, got.LoggerFile)
	}
	other := sideLogger(t)
	other.Info.Seed = 5
	if err := other.WriteFile(countsPath); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadPair(jsonPath); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadPair with counts of another run = %v; want %v", err, ErrCorrupt)
	}
}

// TestPairOldDigest: a profile written before XXH64 names its counts by
// SHA-256; ReadPair still checks that digest, accepting the right counts
// and refusing others.
func TestPairOldDigest(t *testing.T) {
	dir := t.TempDir()
	jsonPath, countsPath := filepath.Join(dir, "profile.json"), filepath.Join(dir, "profile.counts")
	lg := sideLogger(t)
	if err := lg.WriteFile(countsPath); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(countsPath)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	res := &Result{Version: ResultVersion, Method: MethodTInterval, Optimizer: OptimizerAdagrad, Threshold: 3e-3, Confidence: 0.99,
		LoggerFile: "profile.counts", LoggerSHA256: hex.EncodeToString(sum[:])}
	if err := WriteResult(jsonPath, res); err != nil {
		t.Fatal(err)
	}
	if _, gotLg, err := ReadPair(jsonPath); err != nil || !reflect.DeepEqual(countsOf(gotLg), countsOf(lg)) {
		t.Fatalf("ReadPair of an old pair: %v", err)
	}
	other := sideLogger(t)
	other.Info.Seed = 5
	if err := other.WriteFile(countsPath); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadPair(jsonPath); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("ReadPair of an old profile with counts of another run = %v; want %v naming SHA-256", err, ErrCorrupt)
	}
}

// TestAnalyzeAndWrite: the counts written during the analysis carry the
// digest the result names; an analysis that fails (bad options, a
// cancelled context) leaves the earlier pair byte for byte and no
// temporary file behind.
func TestAnalyzeAndWrite(t *testing.T) {
	dir := t.TempDir()
	jsonPath, countsPath := filepath.Join(dir, "profile.json"), filepath.Join(dir, "profile.counts")
	lg := sideLogger(t)
	opts := Options{Budget: 1 << 30, SampleRate: 5}
	res, err := AnalyzeAndWrite(context.Background(), lg, opts, jsonPath, countsPath)
	if err != nil {
		t.Fatal(err)
	}
	got, gotLg, err := ReadPair(jsonPath)
	if err != nil {
		t.Fatalf("ReadPair: %v", err)
	}
	if got.LoggerXXH64 != res.LoggerXXH64 || got.LoggerXXH64 == "" || !reflect.DeepEqual(countsOf(gotLg), countsOf(lg)) {
		t.Fatalf("pair written: digest %q (result %q) or counts differ", got.LoggerXXH64, res.LoggerXXH64)
	}
	before := map[string][]byte{}
	for _, p := range []string{jsonPath, countsPath} {
		if before[p], err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	other := sideLogger(t)
	other.Info.Seed = 9 // other bytes, were they written
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	bad := opts
	bad.Dims = map[string]int{"no-such-table": 8}
	for _, c := range []struct {
		ctx  context.Context
		opts Options
	}{{context.Background(), bad}, {cancelled, opts}} {
		if _, err := AnalyzeAndWrite(c.ctx, other, c.opts, jsonPath, countsPath); err == nil {
			t.Fatalf("AnalyzeAndWrite with %+v succeeded; want an error", c.opts.Dims)
		}
		for p, b := range before {
			if now, err := os.ReadFile(p); err != nil || !bytes.Equal(now, b) {
				t.Fatalf("%s changed by a failed analysis (%v)", p, err)
			}
		}
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) != 2 {
			t.Fatalf("after a failed analysis the directory holds %d entries (%v); want the pair alone", len(ents), err)
		}
	}
	// A result that cannot be written (NaN has no JSON) leaves the earlier
	// pair too: the new counts are not put in place before it is.
	nan := &Result{Version: ResultVersion, Method: MethodTInterval, Threshold: math.NaN()}
	if err := WritePair(jsonPath, countsPath, nan, other); err == nil {
		t.Fatal("WritePair of a NaN threshold succeeded; want an error")
	}
	for p, b := range before {
		if now, err := os.ReadFile(p); err != nil || !bytes.Equal(now, b) {
			t.Fatalf("%s changed by a result that could not be written (%v)", p, err)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 2 {
		t.Fatalf("after a failed write the directory holds %d entries (%v); want the pair alone", len(ents), err)
	}
}

// TestBlocksOfOneWeightWriteAsOne: Sample hands the logger a block of kept
// inputs per row group; consecutive blocks of one weight are written as
// the single block they add up to, so the file does not depend on how the
// sample was cut.
func TestBlocksOfOneWeightWriteAsOne(t *testing.T) {
	encode := func(l *Logger) []byte {
		var b bytes.Buffer
		if err := l.encode(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for _, wide := range []bool{true, false} {
		lg := sideLoggerOf(t, wide)
		if len(lg.blocks) != 1 || lg.blocks[0].n < 4 || len(lg.blocks[0].lens) == 0 {
			t.Fatalf("sideLogger has %d blocks; want one of several inputs with multi-hot lengths", len(lg.blocks))
		}
		whole := encode(lg)
		// Cut the block in two at an input boundary.
		blk := lg.blocks[0]
		half := blk.n / 2
		ids, size, li := 0, 0, 0
		lg.lay.eachID(half, blk.lens, &li, func(f int) { ids, size = ids+1, size+lg.lay.feats[f].width })
		a := &inputBlock{weight: blk.weight, n: half, lens: blk.lens[:li]}
		b := &inputBlock{weight: blk.weight, n: blk.n - half, lens: blk.lens[li:]}
		if wide {
			a.ids64, b.ids64 = blk.ids64[:ids], blk.ids64[ids:]
		} else {
			a.packed, b.packed = blk.packed[:size], blk.packed[size:]
		}
		lg.blocks = []*inputBlock{a, b}
		if got := encode(lg); !bytes.Equal(got, whole) {
			t.Fatalf("wide %v: two blocks of one weight wrote %d bytes, unlike the %d of the block they make", wide, len(got), len(whole))
		}
	}
}

// TestTableSegments checks tables written in one or several segments of
// varint pairs (exactly full ones, one pair over, a map table of several)
// with counts of every size up to MaxUint32, read back as they were.
func TestTableSegments(t *testing.T) {
	for _, tc := range []struct {
		rows int64
		seen int
	}{
		{segmentPairs, segmentPairs}, {segmentPairs + 1, segmentPairs + 1}, {2 * segmentPairs, 2 * segmentPairs},
		{3*segmentPairs + 77, segmentPairs / 3}, {1000, 0},
		{1 << 29, 3*segmentPairs + 3}, {1 << 29, segmentPairs}, {1 << 40, 2 * segmentPairs},
	} {
		lg := newLogger([]TableInfo{{Name: "t", Rows: tc.rows}}, []FeatureInfo{{Name: "t"}})
		tl := &lg.tables[0]
		r := rand.New(rand.NewPCG(7, 8))
		for i := 0; i < tc.seen; {
			id := int64(i) // every row, in order
			if tl.dense == nil || tc.seen < int(tc.rows)/2 {
				id = r.Int64N(tc.rows) // at random, the last row first
				if i == 0 {
					id = tc.rows - 1
				}
			}
			if lg.Count(0, id) != 0 {
				continue
			}
			c := uint32(1 + r.Uint32N(1<<r.IntN(32)))
			if i%7 == 0 {
				c = math.MaxUint32
			}
			if tl.dense != nil {
				tl.dense[id] = c
			} else {
				tl.sparse[id] = c
			}
			tl.accesses += int64(c)
			i++
		}
		got := roundTrip(t, lg)
		if !reflect.DeepEqual(countsOf(got), countsOf(lg)) {
			t.Errorf("rows %d, %d seen: counts read back differ", tc.rows, tc.seen)
		}
	}
}

// roundTrip encodes lg and decodes it.
func roundTrip(t *testing.T, lg *Logger) *Logger {
	t.Helper()
	var b bytes.Buffer
	if err := lg.encode(&b); err != nil {
		t.Fatal(err)
	}
	got, err := decodeLogger(bufio.NewReader(&b))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestKeptIDWidths checks the packed kept IDs at every width and its
// boundaries (tables of 1 to 2^32-1 rows, the IDs at both ends), one-hot
// only and with multi-hot features, in runs of blocks (one empty) that the
// decoder reads in several chunks.
func TestKeptIDWidths(t *testing.T) {
	rowsList := []int64{1, 2, 255, 256, 257, 65535, 65536, 65537, 1<<24 - 1, 1 << 24, 1<<24 + 1, 1 << 30, 1<<32 - 1}
	for _, multi := range []bool{false, true} {
		var tabs []TableInfo
		var feats []FeatureInfo
		for i, rows := range rowsList {
			tabs = append(tabs, TableInfo{Name: fmt.Sprint("t", i), Rows: rows})
			feats = append(feats, FeatureInfo{Name: fmt.Sprint("f", i), Table: i, MultiHot: multi && i%2 == 1})
		}
		lg := newLogger(tabs, feats)
		r := rand.New(rand.NewPCG(5, 6))
		for bi, n := range []int{3, 0, 60_000} {
			blk := &inputBlock{weight: float64(1 + bi/2), n: int64(n)}
			for range n {
				for f := range feats {
					cnt := 1
					if feats[f].MultiHot {
						cnt = r.IntN(4)
						blk.lens = append(blk.lens, uint32(cnt))
					}
					for range cnt {
						id := []int64{0, rowsList[f] - 1, r.Int64N(rowsList[f])}[r.IntN(3)]
						blk.packed = appendID(blk.packed, uint32(id), lg.lay.feats[f].width)
					}
				}
			}
			blk.packed = spare(blk.packed)
			lg.blocks = append(lg.blocks, blk)
		}
		got := roundTrip(t, lg)
		if !reflect.DeepEqual(keptOf(got), keptOf(lg)) {
			t.Errorf("multi-hot %v: kept inputs read back differ", multi)
		}
	}
}

// rawCounts is a version 2 counts file of header hdr and body (tables and
// input blocks), with valid checksums: what a crafted file can hold.
func rawCounts(t *testing.T, hdr fileHeader, body []byte) []byte {
	t.Helper()
	h, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	b := le.AppendUint32(le.AppendUint32([]byte(loggerMagic), 2), uint32(len(h)))
	b = le.AppendUint32(append(b, h...), crc32.Checksum(h, castagnoli))
	b = append(b, body...)
	return le.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// TestSideFileCrafted: files with valid checksums whose lengths overflow,
// that name no features, or whose IDs wrap past int64 are corrupt, without
// a panic, and a huge length does not allocate before the file runs out.
func TestSideFileCrafted(t *testing.T) {
	le := binary.LittleEndian
	emptyTable := func(b []byte) []byte { return le.AppendUint32(le.AppendUint64(append(b, 2), 0), 0) }
	block := func(b []byte, n uint64, lens ...uint32) []byte {
		b = le.AppendUint64(le.AppendUint64(le.AppendUint32(b, 1), math.Float64bits(1)), n)
		b = le.AppendUint64(b, uint64(len(lens)))
		var ids uint64
		for _, l := range lens {
			b = le.AppendUint32(b, l)
			ids += uint64(l)
		}
		return le.AppendUint64(b, ids)
	}
	fourMulti := func(rows int64, wide bool) fileHeader {
		h := fileHeader{Tables: []TableInfo{{Name: "t", Rows: rows}}, Wide: wide}
		for i := range 4 {
			h.Features = append(h.Features, FeatureInfo{Name: fmt.Sprint("m", i), MultiHot: true})
		}
		return h
	}
	var pairs []byte // IDs 2^62, then past MaxInt64
	for _, v := range []uint64{1 << 62, 1, 1<<63 - 2, 1} {
		pairs = binary.AppendUvarint(pairs, v)
	}
	wrap := le.AppendUint32(le.AppendUint32(le.AppendUint64([]byte{2}, 2), 2), uint32(len(pairs)))
	wrap = le.AppendUint32(le.AppendUint32(append(wrap, pairs...), 0), 0)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		// n·features wraps to 0, so no lengths and no IDs would pass.
		{"inputs overflow", rawCounts(t, fourMulti(100, false), append(block(emptyTable(nil), 1<<62), make([]byte, 1<<16)...))},
		{"inputs overflow, wide", rawCounts(t, fourMulti(1<<40, true), block(emptyTable(nil), 1<<62))},
		{"no features", rawCounts(t, fileHeader{Tables: []TableInfo{{Name: "t", Rows: 100}}}, block(emptyTable(nil), 1))},
		{"no features, no inputs", rawCounts(t, fileHeader{Tables: []TableInfo{{Name: "t", Rows: 100}}}, block(emptyTable(nil), 0))},
		{"IDs past int64", rawCounts(t, fileHeader{Tables: []TableInfo{{Name: "t", Rows: math.MaxInt64}}, Features: []FeatureInfo{{Name: "t"}}, Wide: true}, wrap)},
		{"16M IDs in a 300-byte file", rawCounts(t, fileHeader{Tables: []TableInfo{{Name: "t", Rows: 1 << 30}}, Features: []FeatureInfo{{Name: "m", MultiHot: true}}},
			block(emptyTable(nil), 1, 16<<20-1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := decodeLogger(bufio.NewReader(bytes.NewReader(tc.data)))
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("error %v; want ErrCorrupt", err)
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 8<<20 {
				t.Errorf("decoding a %d-byte file allocated %d bytes", len(tc.data), a)
			}
		})
	}
}

// TestSideFileCorruptDeep changes bytes of version 2 files and fixes
// their checksums, so that the changes reach every check of the decoder:
// a changed file decodes or is corrupt, and never panics.
func TestSideFileCorruptDeep(t *testing.T) {
	for _, wide := range []bool{false, true} {
		var b bytes.Buffer
		if err := sideLoggerOf(t, wide).encode(&b); err != nil {
			t.Fatal(err)
		}
		good := b.Bytes()
		hl := int(binary.LittleEndian.Uint32(good[12:]))
		r := rand.New(rand.NewPCG(1, 2))
		for range 1000 {
			data := slices.Clone(good)
			for range 1 + r.IntN(3) {
				data[16+hl+4+r.IntN(len(data)-16-hl-8)] = byte(r.IntN(256)) // past the header
			}
			if r.IntN(4) == 0 {
				data = data[:16+hl+4+r.IntN(len(data)-16-hl-4)]
			}
			binary.LittleEndian.PutUint32(data[len(data)-4:], crc32.Checksum(data[:len(data)-4], castagnoli))
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("wide %v: the decoder panicked: %v", wide, p)
					}
				}()
				if _, err := decodeLogger(bufio.NewReader(bytes.NewReader(data))); err != nil && !errors.Is(err, ErrCorrupt) {
					t.Errorf("wide %v: error %v; want ErrCorrupt", wide, err)
				}
			}()
		}
	}
}
