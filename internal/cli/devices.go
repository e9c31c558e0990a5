package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/picasso-ctr/picasso/pkg/cuda"
)

// devicesReport is what 'picasso devices --json' prints.
type devicesReport struct {
	Driver   string            `json:"driver,omitempty"`
	Library  string            `json:"library,omitempty"`
	GPUs     []cuda.DeviceInfo `json:"gpus"`
	NoGPU    string            `json:"no_gpu,omitempty"` // why there is none
	NVRTC    string            `json:"nvrtc,omitempty"`  // version, when found
	NVRTCLib string            `json:"nvrtc_library,omitempty"`
	CUBLAS   string            `json:"cublas,omitempty"` // file, when found
	Missing  []string          `json:"missing,omitempty"`
	Kernels  string            `json:"kernels"` // NVRTC version that built the embedded kernels
}

func newDevicesCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "devices",
		Aliases: []string{"info"},
		Short:   "List the GPUs picasso can use and the CUDA libraries it finds",
		Long: `devices prints what --device auto would find: the CUDA driver's version and
each GPU with its memory and compute capability, and which of the libraries
picasso loads at run time are present: NVRTC (to compile kernels for a GPU
that is neither sm_80 nor sm_90) and cuBLAS (the GEMMs). picasso is one
static binary (no cgo): it binds libcuda.so.1, libnvrtc and libcublas when
it runs, and without them trains on the CPU. PICASSO_LIBCUDA,
PICASSO_LIBNVRTC and PICASSO_LIBCUBLAS name the files if they are not on
the loader's path.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := devicesReport{GPUs: []cuda.DeviceInfo{}}
			if info, _, err := cuda.Built("sm_90"); err == nil {
				r.Kernels = "NVRTC " + info.NVRTC + " (PTX compute_80, CUBIN sm_80 and sm_90)"
			}
			inv, err := cuda.Devices()
			switch {
			case errors.Is(err, cuda.ErrNoDevice):
				r.NoGPU = cuda.Reason(err)
			case err != nil:
				return err
			}
			if inv != nil {
				r.Driver, r.Library, r.GPUs = inv.Driver, inv.Library, append(r.GPUs, inv.Devices...)
			}
			if n, err := cuda.OpenNVRTC(); err == nil {
				r.NVRTC, r.NVRTCLib = n.Version(), n.Library()
			} else {
				r.Missing = append(r.Missing, "NVRTC")
			}
			if lib, err := cuda.CUBLASLibrary(); err == nil {
				r.CUBLAS = lib
			} else {
				r.Missing = append(r.Missing, "cuBLAS")
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			w := g.stdout
			if r.NoGPU != "" {
				fmt.Fprintf(w, "no CUDA device: %s; --device auto emulates one in host memory\n", r.NoGPU)
			} else {
				fmt.Fprintf(w, "CUDA driver %s (%s)\n", r.Driver, r.Library)
				for _, d := range r.GPUs {
					fmt.Fprintf(w, "  cuda:%d  %s, %.1f GiB, compute capability %s, %d multiprocessors\n",
						d.Index, d.Name, float64(d.Memory)/(1<<30), d.Capability, d.Multiprocessor)
				}
			}
			if r.NVRTC != "" {
				fmt.Fprintf(w, "NVRTC %s (%s)\n", r.NVRTC, r.NVRTCLib)
			}
			if r.CUBLAS != "" {
				fmt.Fprintf(w, "cuBLAS %s\n", r.CUBLAS)
			}
			for _, m := range r.Missing {
				fmt.Fprintf(w, "%s: not found\n", m)
			}
			fmt.Fprintf(w, "embedded kernels: built by %s\n", r.Kernels)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
