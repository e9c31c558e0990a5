package cuda

import (
	"errors"
	"fmt"
)

var (
	// ErrNoDevice reports that no CUDA device can be used: no driver, or no
	// GPU, or the one asked for does not exist.
	ErrNoDevice = errors.New("no CUDA device")

	// ErrLibrary reports a CUDA library (the driver, NVRTC or cuBLAS) that
	// is missing or lacks a symbol picasso needs.
	ErrLibrary = errors.New("cuda: library unavailable")
)

// Error is a failed driver or cuBLAS call, with CUDA's name for the
// result (CUDA_ERROR_OUT_OF_MEMORY, CUBLAS_STATUS_EXECUTION_FAILED, ...).
type Error struct {
	Call string
	Code int32
	Name string
}

func (e *Error) Error() string { return fmt.Sprintf("cuda: %s: %s (%d)", e.Call, e.Name, e.Code) }

// noDevice is an error wrapping ErrNoDevice with a short reason, for the
// one line a command prints, and the detailed error behind it.
type noDevice struct {
	reason string
	err    error
}

func (e *noDevice) Error() string {
	if e.err == nil {
		return "no CUDA device: " + e.reason
	}
	return "no CUDA device: " + e.reason + ": " + e.err.Error()
}

func (e *noDevice) Unwrap() []error { return []error{ErrNoDevice, e.err} }

// Reason returns the short reason of an error wrapping ErrNoDevice ("the
// CUDA driver, libcuda.so.1, is not installed"), or err's message.
func Reason(err error) string {
	var nd *noDevice
	if errors.As(err, &nd) {
		return nd.reason
	}
	return err.Error()
}
