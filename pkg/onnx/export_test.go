package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// field is one decoded protobuf field: a varint, or the bytes of a
// length-delimited value.
type field struct {
	num   int
	wire  int
	v     uint64
	bytes []byte
}

// decode splits a message into its fields; it fails on anything the
// encoder does not write or a truncated value.
func decode(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("bad key")
		}
		b = b[n:]
		f := field{num: int(key >> 3), wire: int(key & 7)}
		switch f.wire {
		case 0:
			f.v, n = binary.Uvarint(b)
			if n <= 0 {
				return nil, errors.New("bad varint")
			}
			b = b[n:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return nil, fmt.Errorf("field %d: bad length", f.num)
			}
			f.bytes = b[n : n+int(l)]
			b = b[n+int(l):]
		case 5:
			if len(b) < 4 {
				return nil, errors.New("short fixed32")
			}
			f.v = uint64(binary.LittleEndian.Uint32(b))
			b = b[4:]
		default:
			return nil, fmt.Errorf("wire type %d", f.wire)
		}
		out = append(out, f)
	}
	return out, nil
}

func testModel() (*train.Model, *dataset.Spec) {
	spec := &dataset.Spec{Label: "label", Dense: []string{"d0", "d1"}, Sparse: []dataset.SparseFeature{
		{Name: "a", Rows: 5}, {Name: "b", Rows: 7, MultiHot: true}, {Name: "c", Rows: 3}}}
	s := train.ShapeOf(train.ModelOptions{Dim: 4, Bottom: []int{6, 4}, Top: []int{5, 1}, Interaction: "dot"}, spec)
	m := &train.Model{Mode: train.ModeCPU, BatchSize: 8, Shape: s}
	n := 0
	in := s.Dense
	for _, w := range s.Bottom {
		n += in*w + w
		in = w
	}
	in = s.InteractWidth()
	for _, w := range s.Top {
		n += in*w + w
		in = w
	}
	m.Params = make([]float32, n)
	m.Emb = make([]float32, (5+7+3)*4)
	for i := range m.Params {
		m.Params[i] = float32(i%7) / 7
	}
	return m, spec
}

// TestExportStructure decodes an exported model and checks its graph: the
// ops per feature and layer, the inputs, and that the initializers hold
// every parameter (plus one zero row for the multi-hot table).
func TestExportStructure(t *testing.T) {
	m, spec := testModel()
	b, err := Export(m, spec, "test")
	if err != nil {
		t.Fatal(err)
	}
	top, err := decode(b)
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	var graph []byte
	for _, f := range top {
		if f.num == modelGraph {
			graph = f.bytes
		}
		if f.num == modelIRVersion && f.v != IRVersion {
			t.Errorf("IR version %d; want %d", f.v, IRVersion)
		}
	}
	gf, err := decode(graph)
	if err != nil {
		t.Fatalf("graph: %v", err)
	}
	ops := map[string]int{}
	var inputs []string
	var initFloats int
	for _, f := range gf {
		if f.num == graphName || f.num == graphDocString {
			continue
		}
		sub, err := decode(f.bytes)
		if err != nil {
			t.Fatalf("graph field %d: %v", f.num, err)
		}
		switch f.num {
		case graphNode:
			for _, x := range sub {
				if x.num == nodeOpType {
					ops[string(x.bytes)]++
				}
			}
		case graphInput:
			for _, x := range sub {
				if x.num == valueName {
					inputs = append(inputs, string(x.bytes))
				}
			}
		case graphInitializer:
			var typ uint64
			var raw []byte
			for _, x := range sub {
				switch x.num {
				case tensorDataType:
					typ = x.v
				case tensorRawData:
					raw = x.bytes
				}
			}
			if typ == Float {
				initFloats += len(raw) / 4
			}
		}
	}
	want := map[string]int{"Gather": 2*2 + 1 + 1, "ReduceSum": 3, "Gemm": 4, "Relu": 3, "Sigmoid": 1, "MatMul": 1, "Transpose": 1}
	for op, n := range want {
		if ops[op] != n {
			t.Errorf("%d %s nodes; want %d (all: %v)", ops[op], op, n, ops)
		}
	}
	if fmt.Sprint(inputs) != "[dense sparse b]" {
		t.Errorf("inputs %v; want [dense sparse b]", inputs)
	}
	if wantF := len(m.Params) + len(m.Emb) + 4; initFloats != wantF {
		t.Errorf("float initializers hold %d values; want %d (params, tables, one padding row)", initFloats, wantF)
	}
	m.Shape.Arch = "wide_deep"
	if _, err := Export(m, spec, "test"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Export(unknown arch) = %v; want ErrUnsupported", err)
	}
}
