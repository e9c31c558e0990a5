package compute

import (
	"fmt"
	"math"
)

func checkStep(kernel string, step Step) {
	if step.Opt != OptSGD && step.Opt != OptAdagrad {
		shapePanic(kernel, "optimizer %s: embedding rows take SGD or Adagrad", step.Opt)
	}
}

// applyRow applies one optimizer step with gradient g to packed row r of
// the weights w (dimension d) and, for Adagrad, its accumulator acc[r]
// (with split, acc[2r] for the first d-1 values and acc[2r+1] for the
// last). Weight decay is added into g.
func applyRow(w, acc []float32, r int64, d int, g []float32, step Step, split bool) {
	row := w[r*int64(d) : r*int64(d)+int64(d)]
	row = row[:len(g)]
	if step.WD != 0 {
		for k, x := range row {
			g[k] += step.WD * x
		}
	}
	switch step.Opt {
	case OptSGD:
		for k, gk := range g {
			row[k] -= step.LR * gk
		}
	case OptAdagrad:
		if split && len(g) > 1 {
			last := len(g) - 1
			adagradRow(row[:last], g[:last], &acc[2*r], step)
			adagradRow(row[last:], g[last:], &acc[2*r+1], step)
			return
		}
		adagradRow(row, g, &acc[r], step)
	default:
		panic(fmt.Sprintf("compute: unknown optimizer %d", int(step.Opt)))
	}
}

// adagradRow is row-wise Adagrad on the values row with gradient g and one
// accumulator: acc += mean(g²), row -= lr·g/(sqrt(acc)+eps).
func adagradRow(row, g []float32, acc *float32, step Step) {
	var ss float64
	for _, gk := range g {
		ss += float64(gk) * float64(gk)
	}
	a := *acc + float32(ss/float64(len(g)))
	*acc = a
	den := float32(math.Sqrt(float64(a))) + step.Eps
	row = row[:len(g)]
	for k, gk := range g {
		row[k] -= step.LR * gk / den
	}
}

// refIDs returns table i's IDs as int64 values (the reference copies them).
func refIDs(b *Bags, i int) []int64 {
	ids := b.IDs[i]
	if ids.kind == Int64 {
		return i64s(ids)
	}
	out := make([]int64, ids.n)
	for k, v := range i32s(ids) {
		out[k] = int64(v)
	}
	return out
}

func embForwardRef(m *hostMem, t *PackedTable, b *Bags, ob Buffer) error {
	out := m.f32("EmbeddingBagForward", "out", ob)
	if err := checkBags(m, "EmbeddingBagForward", t, b, out, "out"); err != nil {
		return err
	}
	nt, d := t.Tables(), t.Dim
	w := f32s(t.W)
	for i := range nt {
		lo, rows, toRow := idRange(t, b, i)
		off := b.offsets(i)
		ids := refIDs(b, i)
		for s := range b.N {
			o := out[(s*nt+i)*d : (s*nt+i)*d+d]
			clear(o)
			p0, p1 := bounds(off, s)
			for _, id := range ids[p0:p1] {
				if id < lo || id >= lo+rows {
					return idError(t.first+i, s, id, lo, rows)
				}
				r := (id + toRow) * int64(d)
				for k, v := range w[r : r+int64(d)] {
					o[k] += v
				}
			}
		}
	}
	return nil
}

func embUpdateRef(m *hostMem, t *PackedTable, b *Bags, gb Buffer, step Step) error {
	checkStep("EmbeddingBagUpdate", step)
	dOut := m.f32("EmbeddingBagUpdate", "dOut", gb)
	if err := checkBags(m, "EmbeddingBagUpdate", t, b, dOut, "dOut"); err != nil {
		return err
	}
	nt, d := t.Tables(), t.Dim
	for i := range nt {
		if err := checkIDs(t, b, i, 0, b.N); err != nil {
			return err
		}
	}
	w, acc, err := t.stepState(step)
	if err != nil {
		return err
	}
	for i := range nt {
		// Unique IDs in order of first occurrence, gradients summed in batch order.
		_, _, toRow := idRange(t, b, i)
		off := b.offsets(i)
		ids := refIDs(b, i)
		index := make(map[int64]int)
		var uniq []int64
		var grads []float32
		for s := range b.N {
			g := dOut[(s*nt+i)*d : (s*nt+i)*d+d]
			p0, p1 := bounds(off, s)
			for _, id := range ids[p0:p1] {
				u, ok := index[id]
				if !ok {
					u = len(uniq)
					index[id] = u
					uniq = append(uniq, id)
					grads = append(grads, make([]float32, d)...)
				}
				for k, v := range g {
					grads[u*d+k] += v
				}
			}
		}
		for u, id := range uniq {
			applyRow(w, acc, id+toRow, d, grads[u*d:u*d+d], step, t.SplitLast)
		}
	}
	return nil
}
