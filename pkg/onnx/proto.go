package onnx

import (
	"encoding/binary"
	"math"
)

// buf encodes protocol buffer fields (wire types 0 varint, 2 length-
// delimited, 5 fixed32) in field order as the caller appends them.
type buf struct {
	b []byte
}

func (p *buf) tag(field, wire int) { p.varint(uint64(field)<<3 | uint64(wire)) }

func (p *buf) varint(v uint64) { p.b = binary.AppendUvarint(p.b, v) }

// int64f writes an int64 (or int32, enum) field, skipping the default 0.
func (p *buf) int64f(field int, v int64) {
	if v == 0 {
		return
	}
	p.tag(field, 0)
	p.varint(uint64(v))
}

// bytesf writes a length-delimited field, skipping an empty one.
func (p *buf) bytesf(field int, b []byte) {
	if len(b) == 0 {
		return
	}
	p.tag(field, 2)
	p.varint(uint64(len(b)))
	p.b = append(p.b, b...)
}

func (p *buf) stringf(field int, s string) { p.bytesf(field, []byte(s)) }

// message writes an embedded message, even an empty one.
func (p *buf) message(field int, m *buf) {
	p.tag(field, 2)
	p.varint(uint64(len(m.b)))
	p.b = append(p.b, m.b...)
}

// packedInt64 writes a repeated int64 field, packed.
func (p *buf) packedInt64(field int, v []int64) {
	if len(v) == 0 {
		return
	}
	var q buf
	for _, x := range v {
		q.varint(uint64(x))
	}
	p.bytesf(field, q.b)
}

func (p *buf) float32f(field int, v float32) {
	p.tag(field, 5)
	p.b = binary.LittleEndian.AppendUint32(p.b, math.Float32bits(v))
}

// Field numbers of the ONNX messages (onnx.proto).
const (
	modelIRVersion   = 1
	modelProducer    = 2
	modelProducerVer = 3
	modelDocString   = 6
	modelGraph       = 7
	modelOpsetImport = 8
	modelMetadata    = 14

	opsetDomain  = 1
	opsetVersion = 2

	entryKey   = 1
	entryValue = 2

	graphNode        = 1
	graphName        = 2
	graphInitializer = 5
	graphDocString   = 10
	graphInput       = 11
	graphOutput      = 12

	nodeInput     = 1
	nodeOutput    = 2
	nodeName      = 3
	nodeOpType    = 4
	nodeAttribute = 5

	attrName = 1
	attrF    = 2
	attrI    = 3
	attrInts = 8
	attrType = 20

	tensorDims     = 1
	tensorDataType = 2
	tensorName     = 8
	tensorRawData  = 9

	valueName = 1
	valueType = 2

	typeTensor = 1

	tensorTypeElem  = 1
	tensorTypeShape = 2

	shapeDim = 1

	dimValue = 1
	dimParam = 2
)

// Attribute types (AttributeProto.AttributeType).
const (
	attrTypeFloat = 1
	attrTypeInt   = 2
	attrTypeInts  = 7
)

// Element types (TensorProto.DataType).
const (
	// Float is float32.
	Float = 1
	// Int64 is int64.
	Int64 = 7
)
