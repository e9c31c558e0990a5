package compute

import (
	"fmt"
	"math"
)

func checkStep(kernel string, step SparseStep) {
	if step.Opt != OptSGD && step.Opt != OptRowWiseAdagrad {
		shapePanic(kernel, "unknown optimizer %d", int(step.Opt))
	}
}

// applyRow applies one optimizer step with gradient g to packed row r.
func applyRow(t *PackedTable, r int64, g []float32, step SparseStep) {
	d := int64(t.Dim)
	w := t.W[r*d : r*d+d]
	w = w[:len(g)]
	switch step.Opt {
	case OptSGD:
		for k, gk := range g {
			w[k] -= step.LR * gk
		}
	case OptRowWiseAdagrad:
		var ss float64
		for _, gk := range g {
			ss += float64(gk) * float64(gk)
		}
		acc := t.Acc[r] + float32(ss/float64(len(g)))
		t.Acc[r] = acc
		den := float32(math.Sqrt(float64(acc))) + step.Eps
		for k, gk := range g {
			w[k] -= step.LR * gk / den
		}
	default:
		panic(fmt.Sprintf("compute: unknown optimizer %d", int(step.Opt)))
	}
}

func embForwardRef(t *PackedTable, b *Bags, out []float32) error {
	if err := checkBags("EmbeddingBagForward", t, b, out, "out"); err != nil {
		return err
	}
	nt, d := t.Tables(), t.Dim
	for i := range nt {
		rows := t.TableRows(i)
		for s := range b.N {
			o := out[(s*nt+i)*d : (s*nt+i)*d+d]
			clear(o)
			lo, hi := b.bag(i, s)
			for _, id := range b.IDs[i][lo:hi] {
				if uint64(id) >= uint64(rows) {
					return idError(t.first+i, s, id, rows)
				}
				for k, v := range t.Row(i, id) {
					o[k] += v
				}
			}
		}
	}
	return nil
}

func embUpdateRef(t *PackedTable, b *Bags, dOut []float32, step SparseStep, touched *RowSet) error {
	checkStep("EmbeddingBagUpdate", step)
	if err := checkBags("EmbeddingBagUpdate", t, b, dOut, "dOut"); err != nil {
		return err
	}
	nt, d := t.Tables(), t.Dim
	for i := range nt {
		if err := checkIDs(t, b, i, 0, b.N); err != nil {
			return err
		}
	}
	if touched != nil && touched.Cap() < t.touchCap() {
		shapePanic("EmbeddingBagUpdate", "touched covers %d rows; table has %d", touched.Cap(), t.touchCap())
	}
	if step.Opt == OptRowWiseAdagrad {
		t.ensureAcc()
	}
	for i := range nt {
		// Unique IDs in order of first occurrence, gradients summed in batch order.
		index := make(map[int64]int)
		var uniq []int64
		var grads []float32
		for s := range b.N {
			g := dOut[(s*nt+i)*d : (s*nt+i)*d+d]
			lo, hi := b.bag(i, s)
			for _, id := range b.IDs[i][lo:hi] {
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
			r := t.Start[i] + id
			applyRow(t, r, grads[u*d:u*d+d], step)
			if touched != nil {
				touched.Add(t.base + r)
			}
		}
	}
	return nil
}
