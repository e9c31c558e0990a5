package compute_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/compute"
)

// The RMC2 DLRM shapes: bottom MLP 13-512-256-64-16, top MLP
// 16+27·26/2 = 367 -> 512-256-1.
var benchLayers = []struct {
	name    string
	in, out int
}{
	{"bot0_13x512", 13, 512},
	{"bot1_512x256", 512, 256},
	{"bot2_256x64", 256, 64},
	{"bot3_64x16", 64, 16},
	{"top0_367x512", 367, 512},
	{"top1_512x256", 512, 256},
	{"top2_256x1", 256, 1},
}

type benchBackend struct {
	name string
	make func(b *testing.B) compute.Backend
}

func benchBackends() []benchBackend {
	cpu := func(opts compute.Options, split bool, libThreads int, small bool) func(b *testing.B) compute.Backend {
		return func(b *testing.B) compute.Backend {
			c, err := compute.New(opts)
			if err != nil {
				b.Skipf("New(%+v): %v", opts, err)
			}
			b.Cleanup(func() { c.Close() })
			compute.SetGemmSplit(c, split)
			compute.SetLibraryThreads(c, libThreads)
			compute.SetSmallGemm(c, small)
			return c
		}
	}
	p := runtime.GOMAXPROCS(0)
	return []benchBackend{
		// Default: OpenBLAS single-threaded, large GEMMs split over the
		// pool, a short batch side on the small kernels.
		{"openblas", cpu(compute.Options{BLAS: compute.BLASOpenBLAS}, true, 1, true)},
		// Alternatives measured to choose the default: OpenBLAS's own
		// threads with no split, one thread in all, and one thread with
		// every shape left to OpenBLAS.
		{"openblas-libthreads", cpu(compute.Options{BLAS: compute.BLASOpenBLAS}, false, p, true)},
		{"openblas-1thread", cpu(compute.Options{BLAS: compute.BLASOpenBLAS, Threads: 1}, false, 1, true)},
		{"openblas-1thread-nosmall", cpu(compute.Options{BLAS: compute.BLASOpenBLAS, Threads: 1}, false, 1, false)},
		{"gonum", cpu(compute.Options{BLAS: compute.BLASGonum}, true, 1, true)},
		{"ref", func(*testing.B) compute.Backend { return compute.Reference() }},
	}
}

// BenchmarkGemm runs the three GEMMs of each linear layer: forward
// Y = X·Wᵀ, backward dX = dY·W and dW = dYᵀ·X, with W stored out×in.
func BenchmarkGemm(b *testing.B) {
	for _, be := range benchBackends() {
		b.Run(be.name, func(b *testing.B) {
			for _, batch := range []int{1024, 128} {
				for _, l := range benchLayers {
					r := rand.New(rand.NewPCG(1, 2))
					x, w := wrap(randF32(r, batch*l.in)), wrap(randF32(r, l.out*l.in))
					y, dy := wrap(randF32(r, batch*l.out)), wrap(randF32(r, batch*l.out))
					dx, dw := wrap(randF32(r, batch*l.in)), wrap(randF32(r, l.out*l.in))
					ops := []struct {
						name string
						run  func(compute.Backend)
					}{
						{"fwd", func(k compute.Backend) { k.Gemm(false, true, batch, l.out, l.in, 1, x, l.in, w, l.in, 0, y, l.out) }},
						{"bwd_data", func(k compute.Backend) { k.Gemm(false, false, batch, l.in, l.out, 1, dy, l.out, w, l.in, 0, dx, l.in) }},
						{"bwd_weight", func(k compute.Backend) { k.Gemm(true, false, l.out, l.in, batch, 1, dy, l.out, x, l.in, 0, dw, l.in) }},
					}
					for _, op := range ops {
						b.Run(fmt.Sprintf("b%d/%s/%s", batch, l.name, op.name), func(b *testing.B) {
							k := be.make(b)
							flops := 2 * float64(batch) * float64(l.in) * float64(l.out)
							for b.Loop() {
								op.run(k)
							}
							b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						})
					}
				}
			}
		})
	}
}

var wrap = compute.Wrap[float32]

func randF32(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = 2*r.Float32() - 1
	}
	return s
}

// RMC2 embedding shape: 26 tables of dim 16, batch 1024.
const (
	benchBatch  = 1024
	benchTables = 26
	benchDim    = 16
)

var kernelBackendNames = []string{"openblas", "openblas-1thread", "gonum", "gonum-1thread", "ref"}

// kernelBackend returns the named backend for the fused-kernel benchmarks,
// skipping b when it is unavailable.
func kernelBackend(b *testing.B, name string) compute.Backend {
	opts := map[string]compute.Options{
		"openblas":         {BLAS: compute.BLASOpenBLAS},
		"openblas-1thread": {BLAS: compute.BLASOpenBLAS, Threads: 1},
		"gonum":            {BLAS: compute.BLASGonum},
		"gonum-1thread":    {BLAS: compute.BLASGonum, Threads: 1},
	}
	if name == "ref" {
		return compute.Reference()
	}
	c, err := compute.New(opts[name])
	if err != nil {
		b.Skipf("backend %s unavailable: %v", name, err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func BenchmarkInteract(b *testing.B) {
	const n, f, d = benchBatch, benchTables, benchDim
	w := compute.InteractWidth(f, d)
	r := rand.New(rand.NewPCG(1, 2))
	x, emb, out := wrap(randF32(r, n*d)), wrap(randF32(r, n*f*d)), wrap(make([]float32, n*w))
	dOut, dx, demb := wrap(randF32(r, n*w)), wrap(make([]float32, n*d)), wrap(make([]float32, n*f*d))
	for _, name := range kernelBackendNames {
		b.Run(name+"/fwd", func(b *testing.B) {
			k := kernelBackend(b, name)
			for b.Loop() {
				k.InteractForward(out, x, emb, n, f, d)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
		b.Run(name+"/bwd", func(b *testing.B) {
			k := kernelBackend(b, name)
			for b.Loop() {
				k.InteractBackward(dx, demb, dOut, x, emb, n, f, d)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// benchEmbedding builds 26 tables of dim 16 with Criteo-like skew: IDs drawn
// from a Zipf distribution over up to 1M rows, one ID per sample.
func benchEmbedding(b *testing.B) (*compute.PackedTable, *compute.Bags) {
	r := rand.New(rand.NewPCG(3, 4))
	rows := make([]int64, benchTables)
	for i := range rows {
		rows[i] = []int64{1_000_000, 100_000, 10_000, 1000, 100}[i%5]
	}
	pt, err := compute.NewPackedTable(compute.Reference(), benchDim, rows)
	if err != nil {
		b.Fatal(err)
	}
	w := pt.W.Float32s()
	for i := range w {
		w[i] = 0.01 * float32(i%7)
	}
	bags := &compute.Bags{N: benchBatch, IDs: make([]compute.Buffer, benchTables)}
	for i := range rows {
		z := rand.NewZipf(r, 1.1, 1, uint64(rows[i]-1))
		ids := make([]int64, benchBatch)
		for k := range ids {
			ids[k] = int64(z.Uint64())
		}
		bags.IDs[i] = compute.Wrap(ids)
	}
	return pt, bags
}

func BenchmarkEmbeddingBag(b *testing.B) {
	pt, bags := benchEmbedding(b)
	out := wrap(make([]float32, benchBatch*benchTables*benchDim))
	dOut := wrap(randF32(rand.New(rand.NewPCG(5, 6)), out.Len()))
	for _, name := range kernelBackendNames {
		b.Run(name+"/fwd", func(b *testing.B) {
			k := kernelBackend(b, name)
			for b.Loop() {
				if err := k.EmbeddingBagForward(pt, bags, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(benchBatch)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
		for _, step := range []compute.Step{
			{Opt: compute.OptSGD, LR: 1e-3},
			{Opt: compute.OptAdagrad, LR: 1e-3, Eps: 1e-8},
		} {
			b.Run(name+"/update_"+step.Opt.String(), func(b *testing.B) {
				k := kernelBackend(b, name)
				for b.Loop() {
					if err := k.EmbeddingBagUpdate(pt, bags, dOut, step); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(benchBatch)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
			})
		}
	}
}

// BenchmarkGemmConcurrent runs the forward GEMM of the widest RMC2 layer
// at 64 rows (one lane's share of batch 128) on one goroutine and on two
// at once, each with its own single-threaded backend, as the trainer's
// lanes do: OpenBLAS called from two threads of one process barely scales,
// the small kernels do (gemm_small.go).
func BenchmarkGemmConcurrent(b *testing.B) {
	const rows, in, out, calls = 64, 367, 512, 20
	for _, small := range []bool{false, true} {
		for _, par := range []int{1, 2} {
			b.Run(fmt.Sprintf("small=%v/goroutines=%d", small, par), func(b *testing.B) {
				type lane struct {
					be      *compute.CPU
					x, w, y compute.Buffer
				}
				var ls []lane
				for i := range par {
					be, err := compute.New(compute.Options{BLAS: compute.BLASOpenBLAS, Threads: 1})
					if err != nil {
						b.Skipf("OpenBLAS: %v", err)
					}
					b.Cleanup(func() { be.Close() })
					compute.SetSmallGemm(be, small)
					r := rand.New(rand.NewPCG(uint64(i), 2))
					ls = append(ls, lane{be, wrap(randF32(r, rows*in)), wrap(randF32(r, out*in)), wrap(randF32(r, rows*out))})
				}
				for b.Loop() {
					var wg sync.WaitGroup
					for _, l := range ls {
						wg.Go(func() {
							for range calls {
								l.be.Gemm(false, true, rows, out, in, 1, l.x, in, l.w, in, 0, l.y, out)
							}
						})
					}
					wg.Wait()
				}
				flops := 2 * float64(rows*in*out*calls*par)
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
