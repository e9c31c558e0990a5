package cli

import (
	"errors"
	"fmt"

	"github.com/picasso-ctr/picasso/pkg/compute"
	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/cuda"
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
//   - auto: GPU 0 when the CUDA driver finds one, else the device emulated
//     in host memory (said once on stderr);
//   - cuda, cuda:N: that GPU, or an error;
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
	opts := cuda.Options{TF32: c.Train.TF32}
	switch dev {
	case config.DeviceCPU:
		b.close()
		return nil, usageErrorf("%s: mode %s places tables or MLPs on a device, and train.device is cpu (no device): train with --mode cpu, or --device auto", cmd, c.Train.Mode)
	case config.DeviceEmulated:
		b.dev = host.Emulate(false)
	case config.DeviceAuto:
		gpu, err := cuda.Open(0, opts)
		if err == nil {
			b.dev = gpu
			g.note("%s: device %s", cmd, gpu.Name())
			return b, nil
		}
		b.dev = host.Emulate(false)
		if errors.Is(err, cuda.ErrNoDevice) {
			g.note("%s: no CUDA device (%s); the device is emulated in host memory, every byte it would move counted", cmd, cuda.Reason(err))
		} else {
			g.note("%s: warning: the GPU cannot be used (%v); the device is emulated in host memory", cmd, err)
		}
	default:
		i, _ := dev.CUDAIndex()
		gpu, err := cuda.Open(i, opts)
		if errors.Is(err, cuda.ErrNoDevice) {
			b.close()
			return nil, fmt.Errorf("%s: train.device %s: %s (--device auto emulates a device when there is no GPU): %w", cmd, dev, cuda.Reason(err), cuda.ErrNoDevice)
		}
		if err != nil {
			b.close()
			return nil, fmt.Errorf("%s: train.device %s: %w", cmd, dev, err)
		}
		b.dev = gpu
		g.note("%s: device %s", cmd, gpu.Name())
	}
	return b, nil
}

// note prints one line on stderr unless --quiet.
func (g *globals) note(format string, a ...any) {
	if !g.quiet {
		fmt.Fprintf(g.stderr, format+"\n", a...)
	}
}

// newHostBackend opens the CPU backend c asks for, warning once on stderr
// when OpenBLAS is missing and the pure-Go GEMM stands in.
func (g *globals) newHostBackend(cmd string, c *config.Config) (*compute.CPU, error) {
	be, err := compute.New(compute.Options{BLAS: c.Train.BLAS, Threads: c.Train.Threads})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fb := be.Fallback(); fb != nil {
		g.note("%s: warning: %v; using gonum's pure-Go GEMM (slower; install libopenblas0-pthread)", cmd, fb)
	}
	return be, nil
}
