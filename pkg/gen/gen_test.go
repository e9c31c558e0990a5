package gen

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/metrics"
)

func TestZipfMatchesPMF(t *testing.T) {
	tests := []struct {
		n int64
		s float64
	}{
		{3, 0.9},
		{50, 1.0},
		{3000, 1.3},       // head only
		{200_000, 0.9},    // head and tail, s < 1
		{20_000_000, 1.1}, // huge table
	}
	const draws = 300_000
	for _, tt := range tests {
		t.Run(fmt.Sprintf("n=%d,s=%v", tt.n, tt.s), func(t *testing.T) {
			z := newZipf(tt.n, tt.s)
			ps := newPowerSums(tt.s)
			total := ps.sum(tt.n)
			// Bins: ranks 1..10 one by one, then ranges whose edges straddle
			// the head/tail border.
			edges := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 100, 1000, zipfHeadRows + 1, 3 * zipfHeadRows, 100_000, 1_000_000}
			var bins []int64
			for _, e := range edges {
				if e <= tt.n {
					bins = append(bins, e)
				}
			}
			bins = append(bins, tt.n+1)
			counts := make([]int, len(bins)-1)
			rng := stream(1, 2, uint64(tt.n))
			for range draws {
				r := z.sample(rng)
				if r < 1 || r > tt.n {
					t.Fatalf("sample() = %d; want a rank in [1, %d]", r, tt.n)
				}
				counts[sort.Search(len(bins), func(i int) bool { return bins[i] > r })-1]++
			}
			for i, c := range counts {
				p := (ps.sum(bins[i+1]-1) - ps.sum(bins[i]-1)) / total
				got := float64(c) / draws
				if tol := 5*math.Sqrt(p*(1-p)/draws) + 1e-4; math.Abs(got-p) > tol {
					t.Errorf("share of ranks [%d, %d) = %.5f; want %.5f ± %.5f", bins[i], bins[i+1], got, p, tol)
				}
			}
		})
	}
}

func TestPermutationIsBijection(t *testing.T) {
	for _, n := range []int64{1, 2, 3, 7, 64, 1000, permCacheRows + 1, 100_003} {
		p := newPermutation(n, uint64(n)*7919)
		seen := make([]bool, n)
		for r := int64(0); r < n; r++ {
			id := p.apply(uint64(r))
			if id >= uint64(n) || seen[id] {
				t.Fatalf("n=%d: apply(%d) = %d: out of range or repeated", n, r, id)
			}
			seen[id] = true
		}
	}
}

// TestPermutationLargeTable: tables above 2^31 rows (terabyte at scale 60)
// get IDs in [0, n) from the cached ranks too, not int32-wrapped negatives.
func TestPermutationLargeTable(t *testing.T) {
	for _, n := range []int64{3_000_000_000, 1 << 40} {
		p := newPermutation(n, 11)
		above := 0
		for r := uint64(0); r < permCacheRows+100; r++ {
			id := int64(p.apply(r))
			if id < 0 || id >= n {
				t.Fatalf("n=%d: apply(%d) = %d; want in [0, %d)", n, r, id, n)
			}
			if id >= 1<<31 {
				above++
			}
		}
		if above == 0 {
			t.Fatalf("n=%d: no ID of the first %d ranks is above 2^31; the test checks nothing", n, permCacheRows+100)
		}
	}
}

// hashDir hashes the names and bytes of every file below dir.
func hashDir(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func TestGenerateIsDeterministic(t *testing.T) {
	gen := func(workers int, seed uint64) (string, *Result) {
		dir := t.TempDir()
		res, err := Run(context.Background(), Options{
			Preset: "demo", Rows: 30_000, Seed: seed, OutDir: dir,
			RowGroupRows: 5000, FileRows: 12_000, Workers: workers,
		})
		if err != nil {
			t.Fatal(err)
		}
		return hashDir(t, dir), res
	}
	one, res := gen(1, 3)
	if res.TrainFiles != 3 || res.TestFiles != 1 {
		t.Errorf("files = %d train, %d test; want 3 and 1 (27,000 and 3,000 rows at 12,000 a file)", res.TrainFiles, res.TestFiles)
	}
	if three, _ := gen(3, 3); three != one {
		t.Errorf("3 workers wrote other bytes than 1 worker")
	}
	if again, _ := gen(3, 3); again != one {
		t.Errorf("a second run wrote other bytes")
	}
	if other, _ := gen(3, 4); other == one {
		t.Errorf("seed 4 wrote the same bytes as seed 3")
	}
}

// readAll reads every row of the dataset at path with p_true.
func readAll(t *testing.T, spec *dataset.Spec, path string) (*dataset.Dataset, []*dataset.Batch) {
	t.Helper()
	ds, err := dataset.Open(spec, path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ds.NewReader(dataset.ReaderOptions{BatchRows: 1 << 15, WithPTrue: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*dataset.Batch
	for {
		b, err := r.Next(context.Background())
		if err == io.EOF {
			return ds, out
		}
		if err != nil {
			t.Fatal(err) // includes IDs out of [0, rows)
		}
		out = append(out, b)
	}
}

// TestGenerateKaggle checks the calibration, the skew and the files of a
// small kaggle run.
func TestGenerateKaggle(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200,000 rows")
	}
	dir := t.TempDir()
	res, err := Run(context.Background(), Options{Preset: "kaggle", Scale: 0.01, Rows: 200_000, Seed: 7, OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CTR %.4f, mean p_true %.4f, oracle AUC %.4f, %.0f rows/s", res.CTR, res.MeanPTrue, res.OracleAUC, res.RowsPerSecond)
	if math.Abs(res.CTR-0.256) > 0.02 {
		t.Errorf("CTR = %.4f; want 0.256 ± 0.02", res.CTR)
	}
	if math.Abs(res.MeanPTrue-res.CTR) > 0.01 {
		t.Errorf("mean p_true = %.4f; want the CTR %.4f ± 0.01", res.MeanPTrue, res.CTR)
	}
	if res.OracleAUC < 0.78 || res.OracleAUC > 0.82 {
		t.Errorf("oracle AUC = %.4f; want 0.78..0.82", res.OracleAUC)
	}
	if res.TrainRows != 180_000 || res.TestRows != 20_000 {
		t.Errorf("rows = %d train, %d test; want 180000 and 20000", res.TrainRows, res.TestRows)
	}

	// The files hold the spec's columns and rows.
	spec := res.Spec
	if len(spec.Dense) != 13 || len(spec.Sparse) != 26 || spec.Label != "label" || spec.PTrue != "p_true" {
		t.Fatalf("spec = %+v; want label, 13 dense, 26 sparse, p_true", spec)
	}
	if spec.Sparse[2].Rows != 101_312 || spec.Sparse[8].Rows != 3 {
		t.Errorf("C3, C9 rows = %d, %d; want 101312 (10131227 × 0.01) and 3", spec.Sparse[2].Rows, spec.Sparse[8].Rows)
	}
	ds, test := readAll(t, &spec, filepath.Join(dir, spec.Test))
	if ds.Rows() != res.TestRows {
		t.Errorf("test split has %d rows; want %d", ds.Rows(), res.TestRows)
	}
	var ps, ys []float32
	for _, b := range test {
		ps = append(ps, b.PTrue...)
		ys = append(ys, b.Label...)
	}
	if got := metrics.AUC(ps, ys); got != res.OracleAUC {
		t.Errorf("AUC of p_true read back = %v; want the reported %v", got, res.OracleAUC)
	}
	ds, train := readAll(t, &spec, filepath.Join(dir, spec.Train))
	if ds.Rows() != res.TrainRows {
		t.Errorf("train split has %d rows; want %d", ds.Rows(), res.TrainRows)
	}

	// Skew of the largest table, C3: a Zipf head, spread over the IDs.
	n := spec.Sparse[2].Rows
	counts := make([]float64, n)
	for _, b := range train {
		for _, id := range b.Sparse[2].IDs {
			counts[id]++
		}
	}
	sorted := slices.Clone(counts)
	slices.SortFunc(sorted, func(a, b float64) int { return int(b - a) })
	var top, all float64
	for i, c := range sorted {
		if int64(i) < n/100 {
			top += c
		}
		all += c
	}
	t.Logf("C3 (%d rows): top 1%% of IDs take %.3f of accesses", n, top/all)
	if share := top / all; share < 0.5 {
		t.Errorf("top 1%% of C3's IDs take %.3f of its accesses; want > 0.5", share)
	}
	ids := make([]float64, n)
	for i := range ids {
		ids[i] = float64(i)
	}
	rho := spearman(ids, counts)
	t.Logf("C3: rank correlation of ID and count %.4f", rho)
	if math.Abs(rho) > 0.03 {
		t.Errorf("rank correlation of C3's IDs and counts = %.4f; want |ρ| < 0.03 (popular IDs spread)", rho)
	}
}

// spearman returns the rank correlation of x and y, ties averaged.
func spearman(x, y []float64) float64 {
	rx, ry := ranks(x), ranks(y)
	n := float64(len(x))
	var sx, sy, sxy, sxx, syy float64
	for i := range rx {
		sx += rx[i]
		sy += ry[i]
	}
	mx, my := sx/n, sy/n
	for i := range rx {
		sxy += (rx[i] - mx) * (ry[i] - my)
		sxx += (rx[i] - mx) * (rx[i] - mx)
		syy += (ry[i] - my) * (ry[i] - my)
	}
	return sxy / math.Sqrt(sxx*syy)
}

func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && v[idx[j]] == v[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r[idx[k]] = float64(i+j-1) / 2
		}
		i = j
	}
	return r
}

func TestGenerateCancelLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	_, err := Run(ctx, Options{
		Preset: "demo", Rows: 100_000, OutDir: dir, RowGroupRows: 4096, FileRows: 20_000,
		Progress: func(done, total int64) {
			calls++
			if done >= 30_000 {
				cancel()
			}
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v; want context.Canceled", err)
	}
	if calls == 0 {
		t.Fatal("Progress was never called")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("cancelled Run left %v in the output directory; want nothing", names)
	}
}

func TestGenerateExistingOutput(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Preset: "demo", Rows: 5000, OutDir: dir}
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), opts); !errors.Is(err, ErrOutputExists) {
		t.Fatalf("second Run into %s = %v; want ErrOutputExists", dir, err)
	}
	opts.Overwrite, opts.Rows = true, 3000
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("Run with Overwrite: %v", err)
	}
	ds, err := dataset.Open(&res.Spec, filepath.Join(dir, "train"))
	if err != nil {
		t.Fatal(err)
	}
	if ds.Rows() != 2700 {
		t.Errorf("overwritten train split has %d rows; want 2700", ds.Rows())
	}
}

// TestOverwriteRemovesDerived: outputs derived from the old data (a
// profile, an FAE layout) and temporary directories a killed run left behind
// must not survive an Overwrite beside the new data; other files stay.
func TestOverwriteRemovesDerived(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Preset: "demo", Rows: 3000, OutDir: dir}
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	stale := []string{"dataset.yaml", "profile.json", "profile.counts", "fae/manifest.json", ".train.tmp-123/part-00000.parquet", ".gen-9/x"}
	for _, p := range append(stale, "notes.txt") {
		fn := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(fn), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fn, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts.Overwrite = true
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	// dataset.yaml too: the caller writes the new one last (a kill
	// between the two splits' swaps then leaves no config to pair them).
	for _, p := range []string{"dataset.yaml", "profile.json", "profile.counts", "fae", ".train.tmp-123", ".gen-9"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Overwrite, %s: Stat = %v; want it removed", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("after Overwrite, notes.txt: %v; want it kept", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	err := (&Options{Preset: "nope", Scale: -1, Rows: 1, TestFraction: 1, RowGroupRows: -1, FileRows: -1, Workers: -1}).Validate()
	if err == nil {
		t.Fatal("Validate accepted bad options")
	}
	for _, want := range []string{"unknown preset", "scale", "rows must be at least 2", "no output directory",
		"test fraction", "row group rows", "file rows", "workers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q; want it to mention %q", err, want)
		}
	}
	if err := (&Options{Preset: "demo", OutDir: "x"}).Validate(); err != nil {
		t.Errorf("Validate of defaults = %v; want nil", err)
	}
}

func TestPresets(t *testing.T) {
	if got, want := Presets(), []string{"avazu", "demo", "kaggle", "terabyte"}; !slices.Equal(got, want) {
		t.Fatalf("Presets() = %v; want %v", got, want)
	}
	for _, name := range Presets() {
		p, ok := LookupPreset(name)
		if !ok {
			t.Fatalf("LookupPreset(%q) not found", name)
		}
		if len(p.Sparse) != len(p.Cardinalities) || len(p.Sparse) != len(p.Exponents) || len(p.Dense) == 0 {
			t.Errorf("%s: %d sparse names, %d cardinalities, %d exponents, %d dense", name,
				len(p.Sparse), len(p.Cardinalities), len(p.Exponents), len(p.Dense))
		}
		for i, s := range p.Exponents {
			if s < 0.9 || s > 1.3 {
				t.Errorf("%s: exponent of %s = %v; want 0.9..1.3", name, p.Sparse[i], s)
			}
		}
		m, ok := PresetModel(name)
		if !ok || m.EmbeddingDim <= 0 || m.TopMLP[len(m.TopMLP)-1] != 1 {
			t.Errorf("PresetModel(%q) = %+v, %v; want a model ending in 1 output", name, m, ok)
		}
		if name != "terabyte" && m.BottomMLP[len(m.BottomMLP)-1] != m.EmbeddingDim {
			t.Errorf("%s: bottom MLP %v does not end in the embedding dim %d", name, m.BottomMLP, m.EmbeddingDim)
		}
	}
	if m, _ := PresetModel("terabyte"); m.EmbeddingDim != 64 || m.Name != "rmc3" {
		t.Errorf("terabyte model = %+v; want rmc3 with dim 64", m)
	}
	p, _ := LookupPreset("kaggle")
	rows := p.TableRows(0.001)
	for i, c := range p.Cardinalities {
		want := max(int64(math.Round(float64(c)*0.001)), MinScaledRows)
		if c <= MinScaledRows {
			want = c
		}
		if rows[i] != want {
			t.Errorf("kaggle %s at scale 0.001: %d rows; want %d", p.Sparse[i], rows[i], want)
		}
	}
}

// TestHotSet checks the analytic skew: FAE's Fig. 1B shape at full scale,
// and agreement with inputs drawn by the samplers.
func TestHotSet(t *testing.T) {
	for _, tt := range []struct {
		preset string
		dim    int
		budget int64
		lo, hi float64
	}{
		{"kaggle", 16, 256 << 20, 0.6, 0.85},
		{"kaggle", 16, 512 << 20, 0.6, 0.85},
		{"terabyte", 64, 512 << 20, 0.6, 0.85},
		{"avazu", 16, 128 << 20, 0.6, 0.9},
	} {
		p, _ := LookupPreset(tt.preset)
		h := p.HotSetFor(1, tt.budget/int64(4*tt.dim))
		t.Logf("%s: %d MiB at dim %d: %d hot rows serve %.3f of inputs", tt.preset, tt.budget>>20, tt.dim, h.Rows, h.InputShare)
		if h.InputShare < tt.lo || h.InputShare > tt.hi || h.Rows*int64(4*tt.dim) > tt.budget {
			t.Errorf("%s HotSetFor(%d MiB) = %+v; want an input share in %v..%v within the budget", tt.preset, tt.budget>>20, h, tt.lo, tt.hi)
		}
	}
	// Draw inputs from the samplers and count those whose ranks are all hot.
	p, _ := LookupPreset("demo")
	h := p.HotSetFor(1, 3000)
	rows := p.TableRows(1)
	sums := make([]powerSums, len(rows))
	zs := make([]zipf, len(rows))
	for i := range rows {
		sums[i] = newPowerSums(p.Exponents[i])
		zs[i] = newZipf(rows[i], p.Exponents[i])
	}
	k := hotRanks(rows, sums, h.Cutoff)
	rng := stream(5, 6, 7)
	const n = 40_000
	hot := 0
	for range n {
		all := true
		for i := range zs {
			if zs[i].sample(rng) > k[i] {
				all = false
			}
		}
		if all {
			hot++
		}
	}
	if got := float64(hot) / n; math.Abs(got-h.InputShare) > 0.015 {
		t.Errorf("drawn inputs all hot: %.4f; want the analytic %.4f ± 0.015", got, h.InputShare)
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, preset := range []string{"demo", "kaggle"} {
		b.Run(preset, func(b *testing.B) {
			const rows = 200_000
			for b.Loop() {
				dir := b.TempDir()
				if _, err := Run(context.Background(), Options{Preset: preset, Scale: 0.01, Rows: rows, OutDir: dir}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkGenerateRows measures drawing rows alone, on one core.
func BenchmarkGenerateRows(b *testing.B) {
	def := presetDefs()["kaggle"]
	m := newPlantedModel(def, def.TableRows(0.05), 1)
	m.calibrate(def, func(n int, f func(int)) { parallel(1, n, f) })
	batch := newBatch(len(m.dense), len(m.tables), chunkRows)
	sc := m.newScratch()
	k := int64(0)
	for b.Loop() {
		m.fillChunk(k, chunkRows, batch, sc)
		k++
	}
	b.ReportMetric(float64(chunkRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
