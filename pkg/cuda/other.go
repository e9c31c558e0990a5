//go:build !linux

package cuda

import (
	"fmt"
	"runtime"
)

// Options configures Open.
type Options struct {
	TF32     bool
	CacheDir string
	PTX      bool
}

// NVRTC is the CUDA runtime compiler; this platform has none.
type NVRTC struct{}

// OpenNVRTC reports that this build has no NVRTC.
func OpenNVRTC() (*NVRTC, error) {
	return nil, fmt.Errorf("cuda: NVRTC is loaded on linux only, not %s: %w", runtime.GOOS, ErrLibrary)
}

func (n *NVRTC) Version() string { return "" }
func (n *NVRTC) Library() string { return "" }
func (n *NVRTC) Compile(src, name, arch string, options ...string) ([]byte, error) {
	return nil, fmt.Errorf("cuda: no NVRTC: %w", ErrLibrary)
}

// DeviceInfo describes one GPU.
type DeviceInfo struct {
	Index          int    `json:"index"`
	Name           string `json:"name"`
	Memory         int64  `json:"memory_bytes"`
	Capability     string `json:"compute_capability"`
	Multiprocessor int    `json:"multiprocessors"`
}

// Inventory is what the driver says of the machine.
type Inventory struct {
	Driver  string       `json:"driver"`
	Library string       `json:"library"`
	Devices []DeviceInfo `json:"devices"`
}

// Devices reports that this build has no CUDA driver.
func Devices() (*Inventory, error) {
	return nil, &noDevice{reason: "the CUDA driver is loaded on linux only, not " + runtime.GOOS}
}

func openCUDA(int, Options) (gpu, error) {
	return nil, &noDevice{reason: "the CUDA driver is loaded on linux only, not " + runtime.GOOS}
}

// CUBLASLibrary reports that this build has no cuBLAS.
func CUBLASLibrary() (string, error) {
	return "", fmt.Errorf("cuda: cuBLAS is loaded on linux only: %w", ErrLibrary)
}
