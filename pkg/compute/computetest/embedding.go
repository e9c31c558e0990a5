package computetest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// hostBags is a batch of lookups on the host: per table, IDs local to the
// table and CSR offsets (nil for one ID per sample).
type hostBags struct {
	n   int
	ids [][]int64
	off [][]int32
}

// randomBags returns a batch of n samples for tables of the given rows:
// even tables have one ID per sample (nil offsets), odd ones bags of 0..4
// IDs. IDs come from a small range so that duplicates, within and across
// bags, are common.
func randomBags(r *rand.Rand, rows []int64, n int) *hostBags {
	b := &hostBags{n: n, ids: make([][]int64, len(rows)), off: make([][]int32, len(rows))}
	for i, tr := range rows {
		pick := func() int64 {
			if r.IntN(2) == 0 {
				return r.Int64N(min(tr, 4)) // hot IDs
			}
			return r.Int64N(tr)
		}
		if i%2 == 0 {
			for range n {
				b.ids[i] = append(b.ids[i], pick())
			}
			continue
		}
		off := []int32{0}
		for range n {
			for range r.IntN(5) {
				b.ids[i] = append(b.ids[i], pick())
			}
			off = append(off, int32(len(b.ids[i])))
		}
		b.off[i] = off
	}
	return b
}

// idForm is how a batch's IDs reach the kernels.
type idForm struct {
	name   string
	int32  bool // int32 IDs instead of int64
	packed bool // rows of the packed table instead of IDs local to each table
}

var idForms = []idForm{{"int64", false, false}, {"int32", true, false}, {"packed int32", true, true}, {"packed int64", false, true}}

// hostIDs returns b in form f as host buffers (for the reference backend).
func (b *hostBags) hostIDs(pt *compute.PackedTable, f idForm) *compute.Bags {
	return b.bags(pt, f, func(ids []int64) compute.Buffer { return compute.Wrap(ids) },
		func(ids []int32) compute.Buffer { return compute.Wrap(ids) },
		func(off []int32) compute.Buffer { return compute.Wrap(off) })
}

// devIDs returns b in form f in the backend's memory.
func (b *hostBags) devIDs(m *mem, pt *compute.PackedTable, f idForm) *compute.Bags {
	return b.bags(pt, f, m.i64, m.i32, m.i32)
}

func (b *hostBags) bags(pt *compute.PackedTable, f idForm, wide func([]int64) compute.Buffer, narrow, offs func([]int32) compute.Buffer) *compute.Bags {
	out := &compute.Bags{N: b.n, IDs: make([]compute.Buffer, len(b.ids)), Offsets: make([]compute.Buffer, len(b.ids)), Packed: f.packed}
	for i, ids := range b.ids {
		ids = slices.Clone(ids)
		if f.packed {
			for k := range ids {
				ids[k] += pt.Start[i]
			}
		}
		if f.int32 {
			n := make([]int32, len(ids))
			for k, id := range ids {
				n[k] = int32(id)
			}
			out.IDs[i] = narrow(n)
		} else {
			out.IDs[i] = wide(ids)
		}
		if b.off[i] != nil {
			out.Offsets[i] = offs(b.off[i])
		}
	}
	return out
}

// table returns a packed table in the backend's memory holding w (and acc,
// when not nil), with plan when not nil; it is freed when the test ends.
func (m *mem) table(dim int, rows []int64, w, acc []float32, plan []compute.Shard) *compute.PackedTable {
	m.t.Helper()
	pt, err := compute.NewPackedTable(m.be, dim, rows)
	if err != nil {
		m.t.Fatalf("NewPackedTable(%d, %v): %v", dim, rows, err)
	}
	m.tables = append(m.tables, pt)
	if w != nil {
		m.be.CopyIn(pt.W, compute.Wrap(w))
	}
	if acc != nil {
		if err := pt.AllocAcc(); err != nil {
			m.t.Fatal(err)
		}
		m.be.CopyIn(pt.Acc, compute.Wrap(acc))
	}
	if plan != nil {
		if err := pt.SetPlan(plan); err != nil {
			m.t.Fatalf("SetPlan: %v", err)
		}
	}
	return pt
}

// rowsOf returns the row counts of pt's tables.
func rowsOf(pt *compute.PackedTable) []int64 {
	rows := make([]int64, pt.Tables())
	for i := range rows {
		rows[i] = pt.TableRows(i)
	}
	return rows
}

// clone returns a copy of pt (weights, Adagrad state, plan) made by the
// backend of m; src may live in another backend, read through its own mem.
func (m *mem) clone(src *compute.PackedTable, srcMem *mem) *compute.PackedTable {
	m.t.Helper()
	var acc []float32
	if src.Acc.Valid() {
		acc = srcMem.get(src.Acc)
	}
	return m.table(src.Dim, rowsOf(src), srcMem.get(src.W), acc, src.Plan())
}

// hostMem returns a mem for the reference backend, whose buffers are Go
// slices.
func hostMem(t testing.TB) *mem { return newMem(t, compute.Reference()) }

// embeddingPlans returns the plans the suite runs for a table: one shard per
// table, a planner's split of a heavy table, and a hand-made 3-way split.
func embeddingPlans(tables int) map[string][]compute.Shard {
	stats := make([]compute.TableStat, tables)
	for i := range stats {
		stats[i] = compute.TableStat{Dim: 4, Lookups: 1}
	}
	stats[1].Lookups = 20
	manual := []compute.Shard{}
	def := []compute.Shard{}
	for i := range tables {
		def = append(def, compute.Shard{Table: i, Parts: 1})
		parts := 1
		if i == 1 || i == 2 {
			parts = 3
		}
		for p := range parts {
			manual = append(manual, compute.Shard{Table: i, Part: p, Parts: parts})
		}
	}
	slices.Reverse(manual)
	return map[string][]compute.Shard{
		"default": def,
		"planner": compute.PlanShards(stats, 0, 0),
		"manual":  manual,
	}
}

// TestEmbeddingBag checks EmbeddingBagForward and EmbeddingBagUpdate (SGD
// and row-wise Adagrad) against the reference, under several shard plans
// and with every form of IDs (int64, int32, table-local, packed rows).
func TestEmbeddingBag(t *testing.T, b compute.Backend) {
	m, h := newMem(t, b), hostMem(t)
	ref := h.be
	rows := []int64{5, 40, 1, 17, 3, 1000}
	nt := len(rows)
	for _, dim := range []int{1, 3, 16} {
		for _, n := range []int{0, 1, 17, 300} {
			r := newRand(uint64(dim*1000 + n))
			var total int64
			for _, tr := range rows {
				total += tr
			}
			w0 := randSlice(r, int(total)*dim)
			bags := randomBags(r, rows, n)
			dOut := randSlice(r, n*nt*dim)
			for name, plan := range embeddingPlans(nt) {
				for fi, form := range idForms {
					if fi > 0 && name != "manual" {
						continue // the ID forms once, under the most split plan
					}
					what := fmt.Sprintf("dim=%d n=%d plan=%s ids=%s", dim, n, name, form.name)
					hp := h.table(dim, rows, w0, nil, plan)
					pt := m.table(dim, rows, w0, nil, plan)
					want := make([]float32, n*nt*dim)
					if err := ref.EmbeddingBagForward(hp, bags.hostIDs(hp, form), host(want)); err != nil {
						t.Fatalf("%s: reference forward: %v", what, err)
					}
					devBags := bags.devIDs(m, pt, form)
					g := m.guardedOut(n*nt*dim, func(s []float32) { fill(r, s) }) // must be overwritten, empty bags included
					if err := b.EmbeddingBagForward(pt, devBags, g.ddata); err != nil {
						t.Fatalf("%s: EmbeddingBagForward: %v", what, err)
					}
					m.fetch(g)
					g.check(t, "EmbeddingBagForward "+what)
					compareSlices(t, "EmbeddingBagForward "+what, g.data, want, 1e-6, 4)

					dd := m.f32(dOut)
					for _, step := range []compute.Step{
						{Opt: compute.OptSGD, LR: 0.1},
						{Opt: compute.OptAdagrad, LR: 0.1, Eps: 0.5},
					} {
						got, exp := m.clone(pt, m), h.clone(hp, h)
						for iter := range 2 { // twice, so Adagrad's accumulators matter
							if err := ref.EmbeddingBagUpdate(exp, bags.hostIDs(exp, form), host(dOut), step); err != nil {
								t.Fatalf("%s: reference update: %v", what, err)
							}
							if err := b.EmbeddingBagUpdate(got, devBags, dd, step); err != nil {
								t.Fatalf("%s: EmbeddingBagUpdate: %v", what, err)
							}
							w := fmt.Sprintf("EmbeddingBagUpdate(%v) %s iter %d", step.Opt, what, iter)
							compareSlices(t, w+" W", m.get(got.W), h.get(exp.W), 1e-5, 1)
							if step.Opt == compute.OptAdagrad {
								compareSlices(t, w+" Acc", m.get(got.Acc), h.get(exp.Acc), 1e-5, 1)
							}
						}
					}
				}
			}
		}
	}
}

// TestEmbeddingBagHand checks a small batch with duplicate IDs against
// values worked out by hand.
func TestEmbeddingBagHand(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	// Table A: rows [1 2] [3 4] [5 6]; table B: rows [7 8] [9 10].
	// Sample 0 looks up A{1, 1} and B 0; sample 1 looks up A{2} and B 0.
	w0 := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	newTable := func() *compute.PackedTable { return m.table(2, []int64{3, 2}, w0, nil, nil) }
	bags := &compute.Bags{N: 2,
		IDs:     []compute.Buffer{m.i64([]int64{1, 1, 2}), m.i64([]int64{0, 0})},
		Offsets: []compute.Buffer{m.i32([]int32{0, 2, 3}), {}},
	}
	out := m.alloc(compute.Float32, 8)
	if err := b.EmbeddingBagForward(newTable(), bags, out); err != nil {
		t.Fatal(err)
	}
	if got, want := m.get(out), []float32{6, 8, 7, 8, 5, 6, 7, 8}; !slices.Equal(got, want) {
		t.Errorf("EmbeddingBagForward = %v; want %v", got, want)
	}

	// Gradients: A1 2·[1 2] = [2 4]; A2 [3 4]; B0 [0.5 -1] + [1.5 1] = [2 0].
	dOut := m.f32([]float32{1, 2, 0.5, -1, 3, 4, 1.5, 1})
	pt := newTable()
	if err := b.EmbeddingBagUpdate(pt, bags, dOut, compute.Step{Opt: compute.OptSGD, LR: 0.5}); err != nil {
		t.Fatal(err)
	}
	if got, want := m.get(pt.W), []float32{1, 2, 2, 2, 3.5, 4, 6, 8, 9, 10}; !slices.Equal(got, want) {
		t.Errorf("SGD update: W = %v; want %v", got, want)
	}

	// Row-wise Adagrad, lr 0.5, eps 0, two steps: acc gains mean(g²) each
	// step (A1 10, A2 12.5, B0 2), w -= 0.5·g/sqrt(acc).
	pt = newTable()
	step := compute.Step{Opt: compute.OptAdagrad, LR: 0.5}
	for range 2 {
		if err := b.EmbeddingBagUpdate(pt, bags, dOut, step); err != nil {
			t.Fatal(err)
		}
	}
	s10, s20 := 1/math.Sqrt(10), 1/math.Sqrt(20)
	s125, s25 := 1/math.Sqrt(12.5), 1/math.Sqrt(25)
	s2, s4 := 1/math.Sqrt(2), 1/math.Sqrt(4)
	wantW := []float64{
		1, 2,
		3 - (s10 + s20), 4 - 2*(s10+s20),
		5 - 1.5*(s125+s25), 6 - 2*(s125+s25),
		7 - (s2 + s4), 8,
		9, 10,
	}
	wantAcc := []float64{0, 20, 25, 4, 0}
	gotW, gotAcc := m.get(pt.W), m.get(pt.Acc)
	for i, w := range wantW {
		if !closeTo(float64(gotW[i]), w, 1e-6, 1) {
			t.Errorf("Adagrad update: W[%d] = %v; want %v", i, gotW[i], w)
		}
	}
	for i, a := range wantAcc {
		if !closeTo(float64(gotAcc[i]), a, 1e-6, 1) {
			t.Errorf("Adagrad update: Acc[%d] = %v; want %v", i, gotAcc[i], a)
		}
	}

	// One step with eps 1: w -= 0.5·g/(sqrt(acc)+1).
	pt = newTable()
	step.Eps = 1
	if err := b.EmbeddingBagUpdate(pt, bags, dOut, step); err != nil {
		t.Fatal(err)
	}
	e10, e125, e2 := 0.5/(math.Sqrt(10)+1), 0.5/(math.Sqrt(12.5)+1), 0.5/(math.Sqrt(2)+1)
	wantW = []float64{1, 2, 3 - 2*e10, 4 - 4*e10, 5 - 3*e125, 6 - 4*e125, 7 - 2*e2, 8, 9, 10}
	gotW = m.get(pt.W)
	for i, w := range wantW {
		if !closeTo(float64(gotW[i]), w, 1e-6, 1) {
			t.Errorf("Adagrad update with eps 1: W[%d] = %v; want %v", i, gotW[i], w)
		}
	}
}

// TestEmbeddingBagGrad checks that the gradient the update applies is the
// derivative of L = Σ wgt ⊙ pooled(W): an SGD step with lr 1 moves each row
// by minus its gradient, compared with central finite differences of a
// float64 forward pass.
func TestEmbeddingBagGrad(t *testing.T, b compute.Backend) {
	const dim, n, h = 3, 6, 1e-3
	m := newMem(t, b)
	r := newRand(5)
	rows := []int64{4, 3, 6}
	start := []int64{0, 4, 7}
	before := randSlice(r, 13*dim)
	pt := m.table(dim, rows, before, nil, nil)
	bags := randomBags(r, rows, n)
	nt := len(rows)
	wgt := randSlice(r, n*nt*dim)
	w64 := to64(before)
	loss := func() float64 {
		var l float64
		for i := range nt {
			for s := range n {
				lo, hi := s, s+1
				if off := bags.off[i]; off != nil {
					lo, hi = int(off[s]), int(off[s+1])
				}
				for _, id := range bags.ids[i][lo:hi] {
					for k := range dim {
						l += float64(wgt[(s*nt+i)*dim+k]) * w64[(start[i]+id)*dim+int64(k)]
					}
				}
			}
		}
		return l
	}
	if err := b.EmbeddingBagUpdate(pt, bags.devIDs(m, pt, idForms[0]), m.f32(wgt), compute.Step{Opt: compute.OptSGD, LR: 1}); err != nil {
		t.Fatal(err)
	}
	after := m.get(pt.W)
	for p := range w64 {
		fd := centralDiff(func(v float64) float64 { w64[p] = v; return loss() }, w64[p], h)
		if g := float64(before[p]) - float64(after[p]); !closeTo(g, fd, 1e-5, math.Abs(fd)) {
			t.Errorf("dL/dW[%d] = %v; finite difference %v", p, g, fd)
		}
	}
}

// TestEmbeddingBagErrors checks that bad IDs and offsets are reported as
// errors naming the table, and that a failed update changes nothing.
func TestEmbeddingBagErrors(t *testing.T, b compute.Backend) {
	m := newMem(t, b)
	r := newRand(9)
	rows := []int64{5, 3, 8}
	w0 := randSlice(r, 16*4)
	pt := m.table(4, rows, w0, nil, nil)
	for _, form := range idForms {
		for _, bad := range []int64{-1, 3, 1 << 40} {
			if form.int32 && bad == 1<<40 {
				continue
			}
			hb := randomBags(r, rows, 10)
			if len(hb.ids[1]) == 0 {
				t.Fatal("random batch has no IDs for table 1")
			}
			hb.ids[1][len(hb.ids[1])-1] = bad
			bags := hb.devIDs(m, pt, form)
			out := m.alloc(compute.Float32, 10*3*4)
			err := orSync(b, b.EmbeddingBagForward(pt, bags, out))
			what := fmt.Sprintf("id %d (%s)", bad, form.name)
			if !errors.Is(err, compute.ErrIDOutOfRange) || !strings.Contains(err.Error(), "table 1") {
				t.Errorf("EmbeddingBagForward(%s) error = %v; want ErrIDOutOfRange naming table 1", what, err)
			}
			err = orSync(b, b.EmbeddingBagUpdate(pt, bags, out, compute.Step{Opt: compute.OptAdagrad, LR: 1}))
			if !errors.Is(err, compute.ErrIDOutOfRange) {
				t.Errorf("EmbeddingBagUpdate(%s) error = %v; want ErrIDOutOfRange", what, err)
			}
			if got := m.get(pt.W); !slices.Equal(got, w0) {
				t.Errorf("EmbeddingBagUpdate(%s) failed but changed the table", what)
			}
		}
	}
	for name, off := range map[string][]int32{
		"short":      {0, 1},
		"decreasing": {0, 2, 1, 3},
		"span":       {0, 1, 2, 4},
		"start":      {1, 1, 2, 3},
	} {
		ids := m.i64([]int64{0, 1, 2})
		bags := &compute.Bags{N: 3, IDs: []compute.Buffer{ids, ids, ids}, Offsets: []compute.Buffer{{}, m.i32(off), {}}}
		out := m.alloc(compute.Float32, 3*3*4)
		if err := orSync(b, b.EmbeddingBagForward(pt, bags, out)); !errors.Is(err, compute.ErrBadOffsets) {
			t.Errorf("EmbeddingBagForward(offsets %s %v) error = %v; want ErrBadOffsets", name, off, err)
		}
		if err := orSync(b, b.EmbeddingBagUpdate(pt, bags, out, compute.Step{LR: 1})); !errors.Is(err, compute.ErrBadOffsets) {
			t.Errorf("EmbeddingBagUpdate(offsets %s %v) error = %v; want ErrBadOffsets", name, off, err)
		}
	}
	if got := m.get(pt.W); !slices.Equal(got, w0) {
		t.Errorf("updates with bad bounds changed the table")
	}
}

// orSync returns err, or, when the call reported nothing, what the next
// Sync reports: a backend whose memory the program cannot read may find
// bad data only when its queued work runs.
func orSync(b compute.Backend, err error) error {
	if err != nil {
		return err
	}
	return b.Sync()
}

// TableBags returns the bags of table i of b as a batch for a one-table
// view (compute.PackedTable.Table); it shares b's buffers.
func TableBags(b *compute.Bags, i int) *compute.Bags {
	tb := &compute.Bags{N: b.N, IDs: []compute.Buffer{b.IDs[i]}, Packed: b.Packed}
	if b.Offsets != nil && b.Offsets[i].Valid() {
		tb.Offsets = []compute.Buffer{b.Offsets[i]}
	}
	return tb
}

// TestEmbeddingBagPerTable checks that running the embedding kernels once
// per table, on the views of compute.PackedTable.Table, gives the results
// of one packed call bit for bit: pooled outputs, weights and Adagrad state
// (allocated by the first update, through the view), with table-local and
// packed IDs.
func TestEmbeddingBagPerTable(t *testing.T, b compute.Backend) {
	const dim, n = 5, 41
	m := newMem(t, b)
	r := newRand(77)
	rows := []int64{5, 40, 1, 17, 3, 1000}
	w0 := randSlice(r, 1066*dim)
	hb := randomBags(r, rows, n)
	nt := len(rows)
	dOut := randSlice(r, n*nt*dim)
	for name, plan := range embeddingPlans(nt) {
		for _, form := range []idForm{idForms[0], idForms[2]} {
			packed := m.table(dim, rows, w0, nil, plan)
			split := m.clone(packed, m)
			bags := hb.devIDs(m, packed, form)
			dwant := m.alloc(compute.Float32, n*nt*dim)
			if err := b.EmbeddingBagForward(packed, bags, dwant); err != nil {
				t.Fatalf("plan %s: packed forward: %v", name, err)
			}
			want := m.get(dwant)
			got := make([]float32, n*nt*dim)
			for i := range nt {
				g := m.guardedOut(n*dim, nil)
				if err := b.EmbeddingBagForward(split.Table(i), TableBags(bags, i), g.ddata); err != nil {
					t.Fatalf("plan %s (%s): forward of table %d: %v", name, form.name, i, err)
				}
				m.fetch(g)
				g.check(t, fmt.Sprintf("EmbeddingBagForward table %d", i))
				for s := range n {
					copy(got[(s*nt+i)*dim:(s*nt+i+1)*dim], g.data[s*dim:(s+1)*dim])
				}
			}
			if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("plan %s (%s): per-table forward [%d] = %v; packed %v", name, form.name, i, got[i], want[i])
			}

			dd := m.f32(dOut)
			cols := make([]compute.Buffer, nt)
			for i := range nt {
				col := make([]float32, n*dim)
				for s := range n {
					copy(col[s*dim:(s+1)*dim], dOut[(s*nt+i)*dim:(s*nt+i+1)*dim])
				}
				cols[i] = m.f32(col)
			}
			for _, step := range []compute.Step{
				{Opt: compute.OptSGD, LR: 0.1},
				{Opt: compute.OptAdagrad, LR: 0.1, Eps: 0.5},
			} {
				p, q := m.clone(packed, m), m.clone(packed, m)
				for iter := range 2 {
					if err := b.EmbeddingBagUpdate(p, bags, dd, step); err != nil {
						t.Fatalf("plan %s: packed update: %v", name, err)
					}
					for i := range nt {
						if err := b.EmbeddingBagUpdate(q.Table(i), TableBags(bags, i), cols[i], step); err != nil {
							t.Fatalf("plan %s: update of table %d: %v", name, i, err)
						}
					}
					what := fmt.Sprintf("plan %s (%s): EmbeddingBagUpdate(%v) iter %d", name, form.name, step.Opt, iter)
					if i := firstDiff(m.get(q.W), m.get(p.W)); i >= 0 {
						t.Fatalf("%s: per-table W[%d] differs from packed", what, i)
					}
					if step.Opt == compute.OptAdagrad {
						if q.Acc.Len() != p.Acc.Len() {
							t.Fatalf("%s: per-table Acc has %d values; packed %d", what, q.Acc.Len(), p.Acc.Len())
						}
						if i := firstDiff(m.get(q.Acc), m.get(p.Acc)); i >= 0 {
							t.Fatalf("%s: per-table Acc[%d] differs from packed", what, i)
						}
					}
				}
			}
		}
	}
}

// firstDiff returns the first index where a and b differ in bits, or -1.
func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
