//go:build linux

package cuda

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// library is a shared library opened at run time, and the name it was
// found under.
type library struct {
	name   string
	handle uintptr
}

// Library names, most recent first: the driver's own, and the NVRTC and
// cuBLAS of CUDA 13, 12 and 11. An environment variable names a file to
// use instead.
var (
	cudaNames   = []string{"libcuda.so.1", "libcuda.so"}
	nvrtcNames  = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}
	cublasNames = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}
)

// Environment variables that name a library file.
const (
	EnvLibCUDA   = "PICASSO_LIBCUDA"
	EnvLibNVRTC  = "PICASSO_LIBNVRTC"
	EnvLibCUBLAS = "PICASSO_LIBCUBLAS"
)

var (
	libMu    sync.Mutex
	libCache = map[string]libResult{}
)

type libResult struct {
	lib *library
	err error
}

// openLibrary opens the first of names that loads (or the file env names),
// once per process, and reports every failure when none does.
func openLibrary(what, env string, names []string) (*library, error) {
	if p := os.Getenv(env); p != "" {
		names = []string{p}
	}
	key := strings.Join(names, ",")
	libMu.Lock()
	defer libMu.Unlock()
	if r, ok := libCache[key]; ok {
		return r.lib, r.err
	}
	var errs []string
	for _, n := range names {
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			l := &library{name: n, handle: h}
			libCache[key] = libResult{lib: l}
			return l, nil
		}
		errs = append(errs, err.Error())
	}
	err := fmt.Errorf("cuda: %s not found (tried %s; set %s to its path): %s: %w", what, strings.Join(names, ", "), env, strings.Join(errs, "; "), ErrLibrary)
	libCache[key] = libResult{err: err}
	return nil, err
}

// binder resolves a library's symbols, keeping the first that is missing.
type binder struct {
	lib *library
	err error
}

// sym returns the address of name, or 0 after recording that it is missing.
func (b *binder) sym(name string) uintptr {
	if b.err != nil {
		return 0
	}
	p, err := purego.Dlsym(b.lib.handle, name)
	if err != nil || p == 0 {
		b.err = fmt.Errorf("cuda: %s has no symbol %s (too old?): %w", b.lib.name, name, ErrLibrary)
		return 0
	}
	return p
}

// fn binds name to the Go function pointed to by fptr.
func (b *binder) fn(fptr any, name string) {
	if p := b.sym(name); p != 0 {
		purego.RegisterFunc(fptr, p)
	}
}
