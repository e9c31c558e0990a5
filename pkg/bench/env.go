package bench

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Environment records where and how a bench ran.
type Environment struct {
	CPU string `json:"cpu"`
	// Cores is the number of logical CPUs; GOMAXPROCS the number Go used.
	Cores      int `json:"cores"`
	GOMAXPROCS int `json:"gomaxprocs"`
	// GPU names the accelerator, or says there is none and the device was
	// emulated in host memory.
	GPU     string `json:"gpu"`
	HasGPU  bool   `json:"has_gpu"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	Go      string `json:"go_version"`
	Picasso string `json:"picasso_version"`
	// Backend is the host's compute backend the runs used (e.g.
	// cpu/openblas), Device the device's (a GPU, or the emulated device).
	Backend string `json:"backend"`
	Device  string `json:"device,omitempty"`
	// Command is the command line that ran the bench.
	Command string `json:"command"`
}

// NoGPU is the GPU entry of a machine without one.
const NoGPU = "none (the device is emulated in host memory; host↔device bytes are counted, not timed on a real link)"

// DetectEnvironment describes this machine. version and command are
// picasso's version and the command line; backend is filled in by the
// caller once it is known.
func DetectEnvironment(version, command string) Environment {
	e := Environment{
		CPU: cpuModel(), Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS: runtime.GOOS, Arch: runtime.GOARCH, Go: runtime.Version(), Picasso: version, Command: command,
		GPU: NoGPU,
	}
	if g := gpuModel(); g != "" {
		e.GPU, e.HasGPU = g, true
	}
	return e
}

// cpuModel reads the CPU's model name (Linux), or returns the architecture.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// gpuModel lists the NVIDIA GPUs the kernel driver reports, "" when none.
func gpuModel() string {
	infos, _ := filepath.Glob("/proc/driver/nvidia/gpus/*/information")
	var names []string
	for _, p := range infos {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "Model" {
				names = append(names, strings.TrimSpace(v))
			}
		}
	}
	return strings.Join(names, ", ")
}
