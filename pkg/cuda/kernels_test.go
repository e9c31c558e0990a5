package cuda

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestKernelsUpToDate checks that the generated kernels were made from the
// sources as they are, and, where NVRTC is installed (`make deps` installs
// it), that every kernel compiles for each target, bit for bit as committed
// when NVRTC is the version that made them.
func TestKernelsUpToDate(t *testing.T) {
	info, _, err := Built("compute_80")
	if err != nil {
		t.Fatal(err)
	}
	if info.SourceSHA256 != SourceHash() {
		t.Fatalf("kernels/ changed since the kernels were generated (source %s, built from %s): run go generate ./pkg/cuda",
			SourceHash()[:12], info.SourceSHA256[:12])
	}
	if strings.Join(info.Options, " ") != strings.Join(CompileOptions, " ") {
		t.Fatalf("built with options %v, not %v: run go generate ./pkg/cuda", info.Options, CompileOptions)
	}
	n, err := OpenNVRTC()
	if errors.Is(err, ErrLibrary) {
		t.Skipf("NVRTC not installed, kernels not recompiled (make deps installs it): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NVRTC %s (%s); kernels built with NVRTC %s", n.Version(), n.Library(), info.NVRTC)
	for _, tg := range Targets {
		got, err := n.Compile(Source(), "picasso_kernels.cu", tg.Arch, CompileOptions...)
		if err != nil {
			t.Fatalf("%s: %v", tg.Arch, err)
		}
		if n.Version() != info.NVRTC {
			continue // another compiler: it compiles, which is what can be checked
		}
		_, want, err := Built(tg.Arch)
		if err != nil {
			t.Fatal(err)
		}
		if tg.Arch[:3] != "sm_" {
			want = want[bytes.IndexByte(want, '\n')+1:] // the generated-code header
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: kernels/%s differs from what NVRTC %s makes of the sources: run go generate ./pkg/cuda", tg.Arch, tg.File, n.Version())
		}
	}
}

// TestKernelNames checks that every kernel the backend launches is in the
// generated PTX.
func TestKernelNames(t *testing.T) {
	_, ptx, err := Built("compute_80")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range kernelNames {
		if !bytes.Contains(ptx, []byte(".entry "+name+"(")) {
			t.Errorf("kernel %s not in kernels.ptx", name)
		}
	}
}
