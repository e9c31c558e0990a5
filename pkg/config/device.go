package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Device names where a run's device part goes (train.device).
type Device string

// Devices.
const (
	// DeviceAuto is a GPU when one is found, else DeviceEmulated.
	DeviceAuto Device = "auto"
	// DeviceEmulated is a device emulated in host memory: the CPU computes,
	// but the device's memory is its own and every byte that would cross
	// to a GPU crosses and is counted.
	DeviceEmulated Device = "emulated"
	// DeviceCPU is no device: only mode cpu trains.
	DeviceCPU Device = "cpu"
	// DeviceCUDA is the first CUDA GPU; "cuda:N" names GPU N.
	DeviceCUDA Device = "cuda"
)

// DeviceChoices lists the device values, for help texts and completion.
var DeviceChoices = []Device{DeviceAuto, DeviceEmulated, DeviceCPU, DeviceCUDA, "cuda:N"}

// CUDAIndex returns the GPU a "cuda" or "cuda:N" device names and true, or
// false for the other devices.
func (d Device) CUDAIndex() (int, bool) {
	s := string(d)
	if s == string(DeviceCUDA) {
		return 0, true
	}
	n, ok := strings.CutPrefix(s, string(DeviceCUDA)+":")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 {
		return 0, false
	}
	return i, true
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Device) UnmarshalText(t []byte) error {
	v := Device(t)
	switch v {
	case DeviceAuto, DeviceEmulated, DeviceCPU:
		*d = v
		return nil
	}
	if _, ok := v.CUDAIndex(); ok {
		*d = v
		return nil
	}
	return fmt.Errorf("%q is not auto, emulated, cpu, cuda or cuda:N", t)
}
