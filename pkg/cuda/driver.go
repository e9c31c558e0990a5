//go:build linux

package cuda

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// driverAPI is the subset of the CUDA driver API (libcuda.so.1) picasso
// uses, bound at run time. The calls of the training step's hot path
// (launches, copies, memsets) go through purego.SyscallN on their symbol
// addresses; the others through typed functions.
type driverAPI struct {
	lib *library

	init                func(flags uint32) int32
	driverGetVersion    func(v *int32) int32
	deviceGetCount      func(n *int32) int32
	deviceGet           func(dev *int32, ordinal int32) int32
	deviceGetName       func(name *byte, n int32, dev int32) int32
	deviceGetAttribute  func(v *int32, attr int32, dev int32) int32
	deviceTotalMem      func(bytes *uint64, dev int32) int32
	primaryCtxRetain    func(ctx *uintptr, dev int32) int32
	primaryCtxRelease   func(dev int32) int32
	ctxSetCurrent       func(ctx uintptr) int32
	streamCreate        func(s *uintptr, flags uint32) int32
	streamDestroy       func(s uintptr) int32
	streamSynchronize   func(s uintptr) int32
	memAlloc            func(p *uint64, bytes uint64) int32
	memFree             func(p uint64) int32
	memGetInfo          func(free, total *uint64) int32
	moduleLoadData      func(mod *uintptr, image unsafe.Pointer) int32
	moduleGetFunction   func(fn *uintptr, mod uintptr, name string) int32
	moduleUnload        func(mod uintptr) int32
	getErrorName        func(res int32, s **byte) int32
	memcpyHtoDAsync     uintptr
	memcpyDtoHAsync     uintptr
	memsetD8Async       uintptr
	memsetD32Async      uintptr
	launchKernel        uintptr
	memcpyDtoDAsyncAddr uintptr
}

var (
	driverOnce sync.Once
	driverLib  *driverAPI
	driverErr  error
)

// loadDriver opens libcuda.so.1 (or PICASSO_LIBCUDA), binds the calls and
// initialises the driver, once per process.
func loadDriver() (*driverAPI, error) {
	driverOnce.Do(func() {
		lib, err := openLibrary("the CUDA driver", EnvLibCUDA, cudaNames)
		if err != nil {
			driverErr = &noDevice{reason: "the CUDA driver (libcuda.so.1) is not installed; " + EnvLibCUDA + " names it if it is elsewhere", err: err}
			return
		}
		d := &driverAPI{lib: lib}
		b := &binder{lib: lib}
		b.fn(&d.init, "cuInit")
		b.fn(&d.driverGetVersion, "cuDriverGetVersion")
		b.fn(&d.deviceGetCount, "cuDeviceGetCount")
		b.fn(&d.deviceGet, "cuDeviceGet")
		b.fn(&d.deviceGetName, "cuDeviceGetName")
		b.fn(&d.deviceGetAttribute, "cuDeviceGetAttribute")
		b.fn(&d.deviceTotalMem, "cuDeviceTotalMem_v2")
		b.fn(&d.primaryCtxRetain, "cuDevicePrimaryCtxRetain")
		b.fn(&d.primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
		b.fn(&d.ctxSetCurrent, "cuCtxSetCurrent")
		b.fn(&d.streamCreate, "cuStreamCreate")
		b.fn(&d.streamDestroy, "cuStreamDestroy_v2")
		b.fn(&d.streamSynchronize, "cuStreamSynchronize")
		b.fn(&d.memAlloc, "cuMemAlloc_v2")
		b.fn(&d.memFree, "cuMemFree_v2")
		b.fn(&d.memGetInfo, "cuMemGetInfo_v2")
		b.fn(&d.moduleLoadData, "cuModuleLoadData")
		b.fn(&d.moduleGetFunction, "cuModuleGetFunction")
		b.fn(&d.moduleUnload, "cuModuleUnload")
		b.fn(&d.getErrorName, "cuGetErrorName")
		d.memcpyHtoDAsync = b.sym("cuMemcpyHtoDAsync_v2")
		d.memcpyDtoHAsync = b.sym("cuMemcpyDtoHAsync_v2")
		d.memsetD8Async = b.sym("cuMemsetD8Async")
		d.memsetD32Async = b.sym("cuMemsetD32Async")
		d.launchKernel = b.sym("cuLaunchKernel")
		if b.err != nil {
			driverErr = &noDevice{reason: "the CUDA driver " + lib.name + " is too old", err: b.err}
			return
		}
		if r := d.init(0); r != 0 {
			err := d.error("cuInit", r)
			driverErr = &noDevice{reason: "the CUDA driver did not start (" + err.(*Error).Name + ")", err: err}
			return
		}
		driverLib = d
	})
	return driverLib, driverErr
}

// resultNames are the CUresult values picasso may meet, by number, for
// when cuGetErrorName itself is unavailable.
var resultNames = map[int32]string{
	1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY", 3: "CUDA_ERROR_NOT_INITIALIZED",
	4: "CUDA_ERROR_DEINITIALIZED", 100: "CUDA_ERROR_NO_DEVICE", 101: "CUDA_ERROR_INVALID_DEVICE",
	200: "CUDA_ERROR_INVALID_IMAGE", 201: "CUDA_ERROR_INVALID_CONTEXT", 209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	218: "CUDA_ERROR_INVALID_PTX", 222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", 400: "CUDA_ERROR_INVALID_HANDLE",
	500: "CUDA_ERROR_NOT_FOUND", 700: "CUDA_ERROR_ILLEGAL_ADDRESS", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT", 719: "CUDA_ERROR_LAUNCH_FAILED", 999: "CUDA_ERROR_UNKNOWN",
}

// error returns the error of result r of call, nil for success.
func (d *driverAPI) error(call string, r int32) error {
	if r == 0 {
		return nil
	}
	name := resultNames[r]
	var s *byte
	if d.getErrorName != nil && d.getErrorName(r, &s) == 0 && s != nil {
		name = cString(s)
	}
	if name == "" {
		name = "CUDA_ERROR_UNKNOWN"
	}
	return &Error{Call: call, Code: r, Name: name}
}

func cString(p *byte) string {
	var b strings.Builder
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b.WriteByte(*(*byte)(q))
	}
	return b.String()
}

// Device attributes picasso reads.
const (
	attrMaxThreadsPerBlock = 1
	attrMultiprocessors    = 16
	attrCCMajor            = 75
	attrCCMinor            = 76
)

// DeviceInfo describes one GPU.
type DeviceInfo struct {
	Index          int    `json:"index"`
	Name           string `json:"name"`
	Memory         int64  `json:"memory_bytes"`
	Major, Minor   int    `json:"-"`
	Capability     string `json:"compute_capability"`
	Multiprocessor int    `json:"multiprocessors"`
}

// Arch is the device's real architecture, "sm_90" for example.
func (i DeviceInfo) Arch() string { return fmt.Sprintf("sm_%d%d", i.Major, i.Minor) }

// Inventory is what the driver says of the machine.
type Inventory struct {
	Driver  string       `json:"driver"` // "13.0" for example
	Library string       `json:"library"`
	Devices []DeviceInfo `json:"devices"`
}

// Devices returns the driver's version and the GPUs, or an error wrapping
// ErrNoDevice when there is no driver or no GPU.
func Devices() (*Inventory, error) {
	d, err := loadDriver()
	if err != nil {
		return nil, err
	}
	inv := &Inventory{Library: d.lib.name}
	var v int32
	if err := d.error("cuDriverGetVersion", d.driverGetVersion(&v)); err != nil {
		return nil, err
	}
	inv.Driver = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	var n int32
	if err := d.error("cuDeviceGetCount", d.deviceGetCount(&n)); err != nil {
		return nil, &noDevice{reason: "the driver lists no GPU", err: err}
	}
	for i := range n {
		info, err := d.deviceInfo(int(i))
		if err != nil {
			return nil, err
		}
		inv.Devices = append(inv.Devices, info)
	}
	if len(inv.Devices) == 0 {
		return inv, &noDevice{reason: "driver " + inv.Driver + " found no GPU"}
	}
	return inv, nil
}

func (d *driverAPI) deviceInfo(i int) (DeviceInfo, error) {
	info := DeviceInfo{Index: i}
	var dev int32
	if err := d.error("cuDeviceGet", d.deviceGet(&dev, int32(i))); err != nil {
		return info, &noDevice{reason: fmt.Sprintf("no GPU %d", i), err: err}
	}
	name := make([]byte, 256)
	if err := d.error("cuDeviceGetName", d.deviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		return info, err
	}
	info.Name = strings.TrimRight(string(name[:indexByte(name, 0)]), " ")
	var mem uint64
	if err := d.error("cuDeviceTotalMem", d.deviceTotalMem(&mem, dev)); err != nil {
		return info, err
	}
	info.Memory = int64(mem)
	attr := func(a int32) int {
		var v int32
		d.deviceGetAttribute(&v, a, dev)
		return int(v)
	}
	info.Major, info.Minor = attr(attrCCMajor), attr(attrCCMinor)
	info.Capability = fmt.Sprintf("%d.%d", info.Major, info.Minor)
	info.Multiprocessor = attr(attrMultiprocessors)
	return info, nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return len(b)
}

// cuContext is a device's primary context and the stream picasso queues its
// work on. Driver calls need the context current on the calling thread;
// goroutines move between threads, so every call locks its goroutine to
// its thread and makes the context current first.
type cuContext struct {
	d      *driverAPI
	dev    int32
	ctx    uintptr
	stream uintptr
	info   DeviceInfo
}

const streamNonBlocking = 1

func openContext(index int) (*cuContext, error) {
	d, err := loadDriver()
	if err != nil {
		return nil, err
	}
	info, err := d.deviceInfo(index)
	if err != nil {
		return nil, err
	}
	c := &cuContext{d: d, info: info}
	if err := d.error("cuDeviceGet", d.deviceGet(&c.dev, int32(index))); err != nil {
		return nil, err
	}
	if err := d.error("cuDevicePrimaryCtxRetain", d.primaryCtxRetain(&c.ctx, c.dev)); err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.error("cuCtxSetCurrent", d.ctxSetCurrent(c.ctx)); err != nil {
		d.primaryCtxRelease(c.dev)
		return nil, err
	}
	if err := d.error("cuStreamCreate", d.streamCreate(&c.stream, streamNonBlocking)); err != nil {
		d.primaryCtxRelease(c.dev)
		return nil, err
	}
	return c, nil
}

// enter locks the goroutine to its thread and makes the context current;
// the caller calls runtime.UnlockOSThread when done.
func (c *cuContext) enter() {
	runtime.LockOSThread()
	c.d.ctxSetCurrent(c.ctx)
}

func (c *cuContext) close() {
	c.enter()
	defer runtime.UnlockOSThread()
	c.d.streamSynchronize(c.stream)
	c.d.streamDestroy(c.stream)
	c.d.primaryCtxRelease(c.dev)
}

func (c *cuContext) call(name string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	return c.d.error(name, int32(r))
}
