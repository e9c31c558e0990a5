package cuda

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

//go:generate go run ./internal/kernelgen

// The kernels in CUDA C, and what `go generate` made of them with NVRTC:
// PTX for compute_80 (any GPU from the A100 on, compiled by the driver
// when loaded) and CUBINs for sm_80 and sm_90 (A100, H100/H200: loaded as
// they are). kernels/build.json records the hash of the source they were
// made from and the NVRTC that made them.
//
//go:embed kernels/common.h kernels/dense.cu kernels/interact.cu kernels/embedding.cu
var sources embed.FS

//go:embed kernels/build.json kernels/kernels.ptx kernels/kernels.sm_80.cubin kernels/kernels.sm_90.cubin
var built embed.FS

// sourceFiles are the kernel sources in the order they are joined.
var sourceFiles = []string{"common.h", "dense.cu", "interact.cu", "embedding.cu"}

// Source returns the kernels' CUDA C as one translation unit: common.h,
// then every .cu file.
func Source() string {
	var b strings.Builder
	for _, f := range sourceFiles {
		data, err := sources.ReadFile("kernels/" + f)
		if err != nil {
			panic(err) // embedded: cannot fail
		}
		fmt.Fprintf(&b, "// ---- %s\n", f)
		b.Write(data)
		b.WriteString("\n")
	}
	return b.String()
}

// SourceHash returns the SHA-256 of Source, in hex.
func SourceHash() string {
	h := sha256.Sum256([]byte(Source()))
	return hex.EncodeToString(h[:])
}

// Targets are the architectures `go generate` compiles for, and the files
// it writes.
var Targets = []Target{
	{Arch: "compute_80", File: "kernels.ptx"},
	{Arch: "sm_80", File: "kernels.sm_80.cubin"},
	{Arch: "sm_90", File: "kernels.sm_90.cubin"},
}

// Target is one architecture of the generated kernels.
type Target struct {
	Arch string `json:"arch"`
	File string `json:"file"`
}

// BuildInfo is kernels/build.json: what the generated files were made from.
type BuildInfo struct {
	SourceSHA256 string   `json:"source_sha256"`
	NVRTC        string   `json:"nvrtc"`
	Options      []string `json:"options"`
	Targets      []Target `json:"targets"`
}

// CompileOptions are the NVRTC options of every build (with the
// architecture).
var CompileOptions = []string{"--fmad=true", "-default-device"}

// Built returns build.json and the generated file for arch (compute_80,
// sm_80 or sm_90).
func Built(arch string) (BuildInfo, []byte, error) {
	var info BuildInfo
	raw, err := built.ReadFile("kernels/build.json")
	if err != nil {
		return info, nil, err
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		return info, nil, fmt.Errorf("cuda: kernels/build.json: %w", err)
	}
	for _, t := range Targets {
		if t.Arch == arch {
			data, err := built.ReadFile("kernels/" + t.File)
			return info, data, err
		}
	}
	return info, nil, fmt.Errorf("cuda: no kernels built for %s", arch)
}
