//go:build linux

package cuda

import (
	"fmt"
	"strings"
	"unsafe"
)

// NVRTC is the CUDA runtime compiler, loaded at run time. It needs no GPU:
// it compiles CUDA C to PTX for a virtual architecture (compute_XX) or to a
// CUBIN for a real one (sm_XX).
type NVRTC struct {
	lib *library

	createProgram  func(prog *uintptr, src, name string, numHeaders int32, headers, includeNames unsafe.Pointer) int32
	compileProgram func(prog uintptr, numOptions int32, options unsafe.Pointer) int32
	destroyProgram func(prog *uintptr) int32
	logSize        func(prog uintptr, size *uintptr) int32
	log            func(prog uintptr, buf *byte) int32
	ptxSize        func(prog uintptr, size *uintptr) int32
	ptx            func(prog uintptr, buf *byte) int32
	cubinSize      func(prog uintptr, size *uintptr) int32
	cubin          func(prog uintptr, buf *byte) int32
	version        func(major, minor *int32) int32
	errorString    func(res int32) string
}

// OpenNVRTC loads NVRTC (libnvrtc.so.13, .12 or .11.2, or the file
// PICASSO_LIBNVRTC names).
func OpenNVRTC() (*NVRTC, error) {
	lib, err := openLibrary("NVRTC", EnvLibNVRTC, nvrtcNames)
	if err != nil {
		return nil, err
	}
	n := &NVRTC{lib: lib}
	b := &binder{lib: lib}
	b.fn(&n.createProgram, "nvrtcCreateProgram")
	b.fn(&n.compileProgram, "nvrtcCompileProgram")
	b.fn(&n.destroyProgram, "nvrtcDestroyProgram")
	b.fn(&n.logSize, "nvrtcGetProgramLogSize")
	b.fn(&n.log, "nvrtcGetProgramLog")
	b.fn(&n.ptxSize, "nvrtcGetPTXSize")
	b.fn(&n.ptx, "nvrtcGetPTX")
	b.fn(&n.cubinSize, "nvrtcGetCUBINSize")
	b.fn(&n.cubin, "nvrtcGetCUBIN")
	b.fn(&n.version, "nvrtcVersion")
	b.fn(&n.errorString, "nvrtcGetErrorString")
	if b.err != nil {
		return nil, b.err
	}
	return n, nil
}

// Library returns the file NVRTC was loaded from.
func (n *NVRTC) Library() string { return n.lib.name }

// Version returns NVRTC's version, "11.8" for example.
func (n *NVRTC) Version() string {
	var major, minor int32
	if n.version(&major, &minor) != 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", major, minor)
}

// Compile compiles src (named name in messages) for arch: "compute_80"
// gives PTX, "sm_90" a CUBIN. A compile error carries NVRTC's log.
func (n *NVRTC) Compile(src, name, arch string, options ...string) ([]byte, error) {
	var prog uintptr
	if r := n.createProgram(&prog, src+"\x00", name+"\x00", 0, nil, nil); r != 0 {
		return nil, n.err("nvrtcCreateProgram", r)
	}
	defer n.destroyProgram(&prog)
	opts := append([]string{"--gpu-architecture=" + arch, "--std=c++14"}, options...)
	cstr := make([][]byte, len(opts))
	ptrs := make([]*byte, len(opts))
	for i, o := range opts {
		cstr[i] = append([]byte(o), 0)
		ptrs[i] = &cstr[i][0]
	}
	r := n.compileProgram(prog, int32(len(ptrs)), unsafe.Pointer(&ptrs[0]))
	if r != 0 {
		return nil, fmt.Errorf("%w\n%s", n.err("compile "+name+" for "+arch, r), n.programLog(prog))
	}
	size, get := n.ptxSize, n.ptx
	if strings.HasPrefix(arch, "sm_") {
		size, get = n.cubinSize, n.cubin
	}
	var sz uintptr
	if r := size(prog, &sz); r != 0 {
		return nil, n.err("output size", r)
	}
	out := make([]byte, sz)
	if sz > 0 {
		if r := get(prog, &out[0]); r != 0 {
			return nil, n.err("output", r)
		}
	}
	if !strings.HasPrefix(arch, "sm_") {
		out = []byte(strings.TrimRight(string(out), "\x00"))
	}
	return out, nil
}

func (n *NVRTC) programLog(prog uintptr) string {
	var sz uintptr
	if n.logSize(prog, &sz) != 0 || sz <= 1 {
		return ""
	}
	buf := make([]byte, sz)
	n.log(prog, &buf[0])
	return strings.TrimRight(string(buf), "\x00\n")
}

func (n *NVRTC) err(what string, r int32) error {
	return fmt.Errorf("cuda: nvrtc: %s: %s", what, n.errorString(r))
}
