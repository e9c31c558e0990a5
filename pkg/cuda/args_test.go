package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestArgsLayout checks that every argument block has the size and field
// offsets of its C struct in kernels/common.h, as g++ lays it out (the
// same as NVRTC's for these fields).
func TestArgsLayout(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skipf("no g++: %v", err)
	}
	pairs := []struct {
		c   string
		val any
	}{
		{"BiasActArgs", biasActArgs{}}, {"ReLUBackwardArgs", reluBackwardArgs{}}, {"BiasGradArgs", biasGradArgs{}},
		{"ReLUBiasGradArgs", reluBiasGradArgs{}}, {"InteractArgs", interactArgs{}}, {"BCEArgs", bceArgs{}},
		{"DenseUpdateArgs", denseUpdateArgs{}}, {"AxpyArgs", axpyArgs{}}, {"Copy2DArgs", copy2DArgs{}},
		{"RowsArgs", rowsArgs{}}, {"EmbTable", embTable{}}, {"EmbArgs", embArgs{}},
		{"MulArgs", mulArgs{}}, {"FMArgs", fmArgs{}},
	}
	dir := t.TempDir()
	var prog strings.Builder
	prog.WriteString("#include <cstdio>\n#include <cstddef>\n")
	hdr, _ := filepath.Abs("kernels/emu.h")
	prog.WriteString("#include \"" + hdr + "\"\n")
	src, _ := os.ReadFile("kernels/common.h")
	prog.Write(src)
	prog.WriteString("\nint main() {\n")
	for _, p := range pairs {
		prog.WriteString(`printf("%zu\n", sizeof(` + p.c + "));\n")
	}
	prog.WriteString("}\n")
	if err := os.WriteFile(filepath.Join(dir, "sizes.cpp"), []byte(prog.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sizes")
	if out, err := exec.Command(cxx, "-o", bin, filepath.Join(dir, "sizes.cpp")).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(out))
	for i, p := range pairs {
		want, _ := strconv.Atoi(lines[i])
		if got := int(reflect.TypeOf(p.val).Size()); got != want {
			t.Errorf("%s: Go block is %d bytes, C struct %d", p.c, got, want)
		}
	}
}
