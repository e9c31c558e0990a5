package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
)

// IRVersion and Opset are the ONNX IR version and the default-domain
// operator set the exported models declare.
const (
	IRVersion = 8
	Opset     = 13
)

// Graph builds one ONNX graph: named inputs and outputs, initializers
// (constant tensors) and nodes in topological order.
type Graph struct {
	name     string
	nodes    []*buf
	inits    []*buf
	inputs   []*buf
	outputs  []*buf
	names    map[string]bool
	counter  int
	metadata [][2]string
	doc      string
}

// NewGraph returns an empty graph called name.
func NewGraph(name string) *Graph { return &Graph{name: name, names: map[string]bool{}} }

// Dim is one dimension of an input or output: a fixed size, or a named
// symbolic one (Param, e.g. "batch").
type Dim struct {
	Value int64
	Param string
}

// Input declares a graph input of element type elem (Float, Int64).
func (g *Graph) Input(name string, elem int, dims ...Dim) string {
	g.inputs = append(g.inputs, valueInfo(name, elem, dims))
	g.names[name] = true
	return name
}

// Output declares name, a value some node produces, as a graph output.
func (g *Graph) Output(name string, elem int, dims ...Dim) {
	g.outputs = append(g.outputs, valueInfo(name, elem, dims))
}

func valueInfo(name string, elem int, dims []Dim) *buf {
	var shape buf
	for _, d := range dims {
		var dm buf
		if d.Param != "" {
			dm.stringf(dimParam, d.Param)
		} else {
			dm.tag(dimValue, 0)
			dm.varint(uint64(d.Value))
		}
		shape.message(shapeDim, &dm)
	}
	var tt buf
	tt.int64f(tensorTypeElem, int64(elem))
	tt.message(tensorTypeShape, &shape)
	var typ buf
	typ.message(typeTensor, &tt)
	var v buf
	v.stringf(valueName, name)
	v.message(valueType, &typ)
	return &v
}

// fresh returns an unused value name starting with prefix.
func (g *Graph) fresh(prefix string) string {
	for {
		g.counter++
		n := fmt.Sprintf("%s_%d", prefix, g.counter)
		if !g.names[n] {
			g.names[n] = true
			return n
		}
	}
}

// Floats adds a float32 initializer of the given shape and returns its name.
func (g *Graph) Floats(name string, v []float32, dims ...int64) string {
	raw := make([]byte, 0, 4*len(v))
	for _, x := range v {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
	}
	return g.tensor(name, Float, raw, dims)
}

// Int64s adds an int64 initializer of the given shape and returns its name.
func (g *Graph) Int64s(name string, v []int64, dims ...int64) string {
	raw := make([]byte, 0, 8*len(v))
	for _, x := range v {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(x))
	}
	return g.tensor(name, Int64, raw, dims)
}

func (g *Graph) tensor(name string, elem int, raw []byte, dims []int64) string {
	if name == "" || g.names[name] {
		name = g.fresh("const")
	}
	g.names[name] = true
	var t buf
	t.packedInt64(tensorDims, dims)
	t.int64f(tensorDataType, int64(elem))
	t.stringf(tensorName, name)
	t.bytesf(tensorRawData, raw)
	g.inits = append(g.inits, &t)
	return name
}

// Attr is a node attribute: an int, a float or a list of ints.
type Attr struct {
	Name  string
	Int   *int64
	Float *float32
	Ints  []int64
}

// IntAttr, FloatAttr and IntsAttr make attributes.
func IntAttr(name string, v int64) Attr     { return Attr{Name: name, Int: &v} }
func FloatAttr(name string, v float32) Attr { return Attr{Name: name, Float: &v} }
func IntsAttr(name string, v ...int64) Attr { return Attr{Name: name, Ints: v} }

// Node adds a node of op with the given inputs and attributes and returns
// the name of its (one) output; out names it, or "" for a fresh name.
func (g *Graph) Node(op, out string, inputs []string, attrs ...Attr) string {
	if out == "" {
		out = g.fresh(op)
	}
	g.names[out] = true
	var n buf
	for _, in := range inputs {
		n.stringf(nodeInput, in)
	}
	n.stringf(nodeOutput, out)
	n.stringf(nodeName, out)
	n.stringf(nodeOpType, op)
	for _, a := range attrs {
		var ab buf
		ab.stringf(attrName, a.Name)
		switch {
		case a.Int != nil:
			ab.tag(attrI, 0)
			ab.varint(uint64(*a.Int))
			ab.int64f(attrType, attrTypeInt)
		case a.Float != nil:
			ab.float32f(attrF, *a.Float)
			ab.int64f(attrType, attrTypeFloat)
		default:
			ab.packedInt64(attrInts, a.Ints)
			ab.int64f(attrType, attrTypeInts)
		}
		n.message(nodeAttribute, &ab)
	}
	g.nodes = append(g.nodes, &n)
	return out
}

// Meta adds a key/value pair to the model's metadata.
func (g *Graph) Meta(key, value string) { g.metadata = append(g.metadata, [2]string{key, value}) }

// Doc sets the model's documentation string.
func (g *Graph) Doc(s string) { g.doc = s }

// Model encodes the graph as a complete ONNX model (ModelProto bytes).
func (g *Graph) Model(producerVersion string) []byte {
	var gr buf
	for _, n := range g.nodes {
		gr.message(graphNode, n)
	}
	gr.stringf(graphName, g.name)
	for _, t := range g.inits {
		gr.message(graphInitializer, t)
	}
	for _, v := range g.inputs {
		gr.message(graphInput, v)
	}
	for _, v := range g.outputs {
		gr.message(graphOutput, v)
	}
	var m buf
	m.int64f(modelIRVersion, IRVersion)
	m.stringf(modelProducer, "picasso")
	m.stringf(modelProducerVer, producerVersion)
	m.stringf(modelDocString, g.doc)
	m.message(modelGraph, &gr)
	var op buf
	op.stringf(opsetDomain, "")
	op.int64f(opsetVersion, Opset)
	m.message(modelOpsetImport, &op)
	for _, kv := range g.metadata {
		var e buf
		e.stringf(entryKey, kv[0])
		e.stringf(entryValue, kv[1])
		m.message(modelMetadata, &e)
	}
	return m.b
}
