package cuda

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// emuGPU is a GPU stood in for by the CPU, for tests on machines without
// one: device memory is Go memory, copies are copies, and a launch runs the
// kernel's threads one after another in the kernels' own CUDA C, built as
// C++ with g++ and kernels/emu.h, loaded with purego. SGEMM is a
// column-major triple loop called through the same row-to-column mapping
// as cuBLAS.
type emuGPU struct {
	lib    uintptr
	fns    [numKernels]uintptr
	mu     sync.Mutex
	allocs map[uintptr][]byte
	addrs  []uintptr // sorted starts of allocs
	nextID int
}

var (
	emuOnce sync.Once
	emuLib  string
	emuErr  error
)

// buildEmu compiles the kernel sources into a shared library once per test
// binary, or says why it cannot.
func buildEmu() (string, error) {
	emuOnce.Do(func() {
		cxx, err := exec.LookPath("g++")
		if err != nil {
			emuErr = fmt.Errorf("no g++ to build the kernels for the CPU: %w", err)
			return
		}
		dir, err := os.MkdirTemp("", "picasso-cuda-emu-")
		if err != nil {
			emuErr = err
			return
		}
		src := filepath.Join(dir, "kernels.cpp")
		if err := os.WriteFile(src, []byte(Source()), 0o644); err != nil {
			emuErr = err
			return
		}
		emuLib = filepath.Join(dir, "kernels.so")
		hdr, _ := filepath.Abs("kernels/emu.h")
		cmd := exec.Command(cxx, "-O2", "-shared", "-fPIC", "-x", "c++", "-include", hdr, "-o", emuLib, src)
		if out, err := cmd.CombinedOutput(); err != nil {
			emuErr = fmt.Errorf("g++: %v\n%s", err, out)
		}
	})
	return emuLib, emuErr
}

// newEmuGPU returns a CPU stand-in, skipping t when g++ is missing.
func newEmuGPU(t testing.TB) *emuGPU {
	t.Helper()
	path, err := buildEmu()
	if err != nil {
		t.Skipf("kernels on the CPU: %v", err)
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	g := &emuGPU{lib: h, allocs: map[uintptr][]byte{}}
	for k, name := range kernelNames {
		if g.fns[k], err = purego.Dlsym(h, name); err != nil {
			t.Fatalf("kernel %s: %v", name, err)
		}
	}
	return g
}

func (g *emuGPU) name() string { return "emulated cuda (kernels on the CPU)" }
func (g *emuGPU) blocks() int  { return 3 }

func (g *emuGPU) alloc(bytes int64) (uintptr, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := make([]byte, bytes+8)
	p := uintptr(unsafe.Pointer(&b[0]))
	p = (p + 7) &^ 7
	g.allocs[p] = b
	i := sort.Search(len(g.addrs), func(i int) bool { return g.addrs[i] >= p })
	g.addrs = append(g.addrs[:i], append([]uintptr{p}, g.addrs[i:]...)...)
	for i := range b {
		b[i] = 0xA5 // Alloc must zero what it returns
	}
	return p, nil
}

func (g *emuGPU) free(p uintptr) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.allocs[p]; !ok {
		return errors.New("emu: free of an unknown address")
	}
	delete(g.allocs, p)
	i := sort.Search(len(g.addrs), func(i int) bool { return g.addrs[i] >= p })
	g.addrs = append(g.addrs[:i], g.addrs[i+1:]...)
	return nil
}

// mem returns n bytes of device memory from address p.
func (g *emuGPU) mem(p uintptr, n int64) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := sort.Search(len(g.addrs), func(i int) bool { return g.addrs[i] > p }) - 1
	if i < 0 {
		panic(fmt.Sprintf("emu: address %#x is not device memory", p))
	}
	start := g.addrs[i]
	b := g.allocs[start]
	base := uintptr(unsafe.Pointer(&b[0]))
	off := int64(p - base)
	if off+n > int64(len(b)) {
		panic(fmt.Sprintf("emu: %d bytes at %#x run past an allocation", n, p))
	}
	return b[off : off+n]
}

func (g *emuGPU) htod(dst uintptr, src unsafe.Pointer, bytes int64) error {
	copy(g.mem(dst, bytes), unsafe.Slice((*byte)(src), bytes))
	return nil
}

func (g *emuGPU) dtoh(dst unsafe.Pointer, src uintptr, bytes int64) error {
	copy(unsafe.Slice((*byte)(dst), bytes), g.mem(src, bytes))
	return nil
}

func (g *emuGPU) memset8(dst uintptr, v byte, n int64) error {
	for i, m := 0, g.mem(dst, n); i < len(m); i++ {
		m[i] = v
	}
	return nil
}

func (g *emuGPU) memset32(dst uintptr, v uint32, n int64) error {
	m := g.mem(dst, 4*n)
	for i := int64(0); i < n; i++ {
		m[4*i], m[4*i+1], m[4*i+2], m[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return nil
}

func (g *emuGPU) launch(k kernel, grid, block int, args unsafe.Pointer) error {
	purego.SyscallN(g.fns[k], uintptr(grid), uintptr(block), uintptr(args))
	return nil
}

// sgemm runs the column-major call colMajor makes of the row-major GEMM,
// as cuBLAS would receive it.
func (g *emuGPU) sgemm(transA, transB bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int) error {
	cg := colMajor(transA, transB, m, n, k, a, lda, b, ldb)
	f32 := func(p uintptr, count int) []float32 {
		raw := g.mem(p, 4*int64(count))
		return unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), count)
	}
	colLen := func(op, rows, cols, ld int) int { // stored columns × ld
		if op == 1 {
			rows, cols = cols, rows
		}
		return (cols-1)*ld + rows
	}
	A := f32(cg.a, colLen(cg.opA, cg.m, cg.k, cg.lda))
	B := f32(cg.b, colLen(cg.opB, cg.k, cg.n, cg.ldb))
	C := f32(c, (cg.n-1)*ldc+cg.m)
	at := func(M []float32, op, i, j, ld int) float32 { // element (i, j) of op(M), column-major
		if op == 1 {
			i, j = j, i
		}
		return M[i+j*ld]
	}
	for j := range cg.n {
		for i := range cg.m {
			var s float64
			for p := range cg.k {
				s += float64(at(A, cg.opA, i, p, cg.lda)) * float64(at(B, cg.opB, p, j, cg.ldb))
			}
			v := float32(float64(alpha) * s)
			if beta != 0 {
				v += beta * C[i+j*ldc]
			}
			if math.IsNaN(float64(v)) && beta == 0 && !math.IsNaN(s) {
				panic("emu: sgemm read C with beta 0")
			}
			C[i+j*ldc] = v
		}
	}
	return nil
}

func (g *emuGPU) sync() error  { return nil }
func (g *emuGPU) close() error { return nil }
