package cli

import (
	"fmt"
	"strings"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/config"
)

// backends are the two backends a run trains with: the host's, which
// computes in host memory, and the device's (nil when the mode places
// nothing on a device).
type backends struct {
	host *compute.CPU
	dev  compute.Backend
}

func (b *backends) close() {
	if b.dev != nil {
		b.dev.Close()
	}
	b.host.Close()
}

// newBackends opens the host backend and, when needDevice, the device
// train.device names:
//
//   - auto: a GPU when one is found, else the device emulated in host
//     memory (said once on stderr);
//   - emulated: the CPU emulating a device, whose memory is its own so that
//     every byte a GPU would need crosses and is counted;
//   - cpu: no device at all, for mode cpu.
func (g *globals) newBackends(cmd string, c *config.Config, needDevice bool) (*backends, error) {
	host, err := g.newHostBackend(cmd, c)
	if err != nil {
		return nil, err
	}
	b := &backends{host: host}
	if !needDevice {
		return b, nil
	}
	dev := c.Train.Device
	switch {
	case dev == config.DeviceCPU:
		b.close()
		return nil, usageErrorf("%s: mode %s places tables or MLPs on a device, and train.device is cpu (no device): train with --mode cpu, or --device auto", cmd, c.Train.Mode)
	case dev == config.DeviceEmulated:
		b.dev = host.Emulate(false)
	case dev == config.DeviceAuto:
		b.dev = host.Emulate(false)
		if !g.quiet {
			fmt.Fprintf(g.stderr, "%s: no CUDA device; the device is emulated in host memory (every byte it would move is counted)\n", cmd)
		}
	case strings.HasPrefix(string(dev), "cuda"):
		b.close()
		return nil, usageErrorf("%s: train.device %s: this build has no CUDA backend yet; use --device auto or emulated", cmd, dev)
	}
	return b, nil
}

// newHostBackend opens the CPU backend c asks for, warning once on stderr
// when OpenBLAS is missing and the pure-Go GEMM stands in.
func (g *globals) newHostBackend(cmd string, c *config.Config) (*compute.CPU, error) {
	be, err := compute.New(compute.Options{BLAS: c.Train.BLAS, Threads: c.Train.Threads})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fb := be.Fallback(); fb != nil && !g.quiet {
		fmt.Fprintf(g.stderr, "%s: warning: %v; using gonum's pure-Go GEMM (slower; install libopenblas0-pthread)\n", cmd, fb)
	}
	return be, nil
}
