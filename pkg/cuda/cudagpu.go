//go:build linux

package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"unsafe"
)

// cudaGPU is a GPU through the CUDA driver: its primary context, one
// stream, the kernels' module and a cuBLAS handle.
type cudaGPU struct {
	c      *cuContext
	mod    uintptr
	fns    [numKernels]uintptr
	blas   *cublasHandle
	params [1]unsafe.Pointer // kernelParams of a launch: the argument block
	origin string            // where the module came from
}

// Options configures Open.
type Options struct {
	// TF32 lets cuBLAS run SGEMM on tensor cores at TF32 precision (10
	// mantissa bits); by default GEMMs are full float32.
	TF32 bool
	// CacheDir holds kernels compiled for the device's exact architecture
	// by NVRTC (when it is present and the device is neither sm_80 nor
	// sm_90); empty uses the user's cache directory.
	CacheDir string
	// PTX loads the compute_80 PTX even where a CUBIN fits (for tests).
	PTX bool
}

func openCUDA(index int, opts Options) (*cudaGPU, error) {
	c, err := openContext(index)
	if err != nil {
		return nil, err
	}
	g := &cudaGPU{c: c}
	ok := false
	defer func() {
		if !ok {
			g.close()
		}
	}()
	image, origin, err := kernelImage(c.info, opts)
	if err != nil {
		return nil, err
	}
	g.origin = origin
	c.enter()
	err = c.d.error("cuModuleLoadData ("+origin+")", c.d.moduleLoadData(&g.mod, unsafe.Pointer(&image[0])))
	runtime.UnlockOSThread()
	if err != nil {
		return nil, err
	}
	c.enter()
	for k, name := range kernelNames {
		if err = c.d.error("cuModuleGetFunction "+name, c.d.moduleGetFunction(&g.fns[k], g.mod, name)); err != nil {
			break
		}
	}
	runtime.UnlockOSThread()
	if err != nil {
		return nil, err
	}
	api, err := loadCUBLAS()
	if err != nil {
		return nil, err
	}
	c.enter()
	g.blas, err = api.newHandle(c.stream, opts.TF32)
	runtime.UnlockOSThread()
	if err != nil {
		return nil, err
	}
	ok = true
	return g, nil
}

// kernelImage chooses the kernels to load: the embedded CUBIN built for the
// device's architecture; else, with NVRTC present, a CUBIN compiled for it
// (cached by source, architecture and NVRTC version); else the compute_80
// PTX, which the driver compiles.
func kernelImage(info DeviceInfo, opts Options) ([]byte, string, error) {
	arch := info.Arch()
	if !opts.PTX {
		if _, cubin, err := Built(arch); err == nil {
			return cubin, "embedded " + arch + " CUBIN", nil
		}
		if n, err := OpenNVRTC(); err == nil {
			if img, origin, err := cachedCompile(n, arch, opts.CacheDir); err == nil {
				return img, origin, nil
			}
		}
	}
	_, ptx, err := Built("compute_80")
	if err != nil {
		return nil, "", err
	}
	return append(ptx, 0), "embedded compute_80 PTX", nil
}

func cachedCompile(n *NVRTC, arch, dir string) ([]byte, string, error) {
	if dir == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return nil, "", err
		}
		dir = filepath.Join(d, "picasso", "kernels")
	}
	h := sha256.Sum256([]byte(Source() + "\x00" + arch + "\x00" + n.Version()))
	path := filepath.Join(dir, hex.EncodeToString(h[:16])+"."+arch+".cubin")
	if img, err := os.ReadFile(path); err == nil && len(img) > 0 {
		return img, "cached " + arch + " CUBIN (" + path + ")", nil
	}
	img, err := n.Compile(Source(), "picasso_kernels.cu", arch, CompileOptions...)
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir, 0o755); err == nil {
		tmp := path + ".tmp"
		if os.WriteFile(tmp, img, 0o644) == nil {
			os.Rename(tmp, path)
		}
	}
	return img, arch + " CUBIN compiled by NVRTC " + n.Version(), nil
}

func (g *cudaGPU) name() string {
	i := g.c.info
	return fmt.Sprintf("cuda:%d (%s, sm_%d%d)", i.Index, i.Name, i.Major, i.Minor)
}

func (g *cudaGPU) blocks() int { return max(1, 8*g.c.info.Multiprocessor) }

func (g *cudaGPU) alloc(bytes int64) (uintptr, error) {
	g.c.enter()
	defer runtime.UnlockOSThread()
	var p uint64
	if err := g.c.d.error("cuMemAlloc", g.c.d.memAlloc(&p, uint64(bytes))); err != nil {
		return 0, err
	}
	return uintptr(p), nil
}

func (g *cudaGPU) free(p uintptr) error {
	g.c.enter()
	defer runtime.UnlockOSThread()
	return g.c.d.error("cuMemFree", g.c.d.memFree(uint64(p)))
}

func (g *cudaGPU) htod(dst uintptr, src unsafe.Pointer, bytes int64) error {
	g.c.enter()
	defer runtime.UnlockOSThread()
	err := g.c.call("cuMemcpyHtoDAsync", g.c.d.memcpyHtoDAsync, dst, uintptr(src), uintptr(bytes), g.c.stream)
	runtime.KeepAlive(src)
	return err
}

func (g *cudaGPU) dtoh(dst unsafe.Pointer, src uintptr, bytes int64) error {
	g.c.enter()
	defer runtime.UnlockOSThread()
	err := g.c.call("cuMemcpyDtoHAsync", g.c.d.memcpyDtoHAsync, uintptr(dst), src, uintptr(bytes), g.c.stream)
	if err == nil {
		// A copy to pageable memory has finished when the call returns;
		// waiting keeps that true whatever the memory.
		err = g.c.d.error("cuStreamSynchronize", g.c.d.streamSynchronize(g.c.stream))
	}
	runtime.KeepAlive(dst)
	return err
}

func (g *cudaGPU) memset8(dst uintptr, v byte, n int64) error {
	g.c.enter()
	defer runtime.UnlockOSThread()
	return g.c.call("cuMemsetD8Async", g.c.d.memsetD8Async, dst, uintptr(v), uintptr(n), g.c.stream)
}

func (g *cudaGPU) memset32(dst uintptr, v uint32, n int64) error {
	g.c.enter()
	defer runtime.UnlockOSThread()
	return g.c.call("cuMemsetD32Async", g.c.d.memsetD32Async, dst, uintptr(v), uintptr(n), g.c.stream)
}

func (g *cudaGPU) launch(k kernel, grid, block int, args unsafe.Pointer) error {
	g.c.enter()
	defer runtime.UnlockOSThread()
	g.params[0] = args
	err := g.c.call("cuLaunchKernel "+kernelNames[k], g.c.d.launchKernel, g.fns[k],
		uintptr(grid), 1, 1, uintptr(block), 1, 1, 0, g.c.stream, uintptr(unsafe.Pointer(&g.params[0])), 0)
	runtime.KeepAlive(args)
	return err
}

func (g *cudaGPU) sgemm(transA, transB bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int) error {
	g.c.enter()
	defer runtime.UnlockOSThread()
	return g.blas.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (g *cudaGPU) sync() error {
	g.c.enter()
	defer runtime.UnlockOSThread()
	return g.c.d.error("cuStreamSynchronize", g.c.d.streamSynchronize(g.c.stream))
}

func (g *cudaGPU) close() error {
	if g.blas != nil {
		g.c.enter()
		g.blas.close()
		runtime.UnlockOSThread()
	}
	if g.mod != 0 {
		g.c.enter()
		g.c.d.moduleUnload(g.mod)
		runtime.UnlockOSThread()
	}
	g.c.close()
	return nil
}

func uintptrOf[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }
