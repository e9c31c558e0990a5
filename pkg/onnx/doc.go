// Package onnx exports trained picasso models as ONNX models, so that ONNX
// Runtime (or any ONNX consumer) can serve them.
//
// It writes the protocol buffer itself (proto.go: the few ONNX messages
// and fields picasso needs, encoded by hand; no protobuf dependency),
// builds graphs with a small builder (graph.go), and has one function per
// model architecture that turns a train.Model into a graph (dlrm.go;
// another architecture is one more entry in Exporters).
//
// The exported DLRM follows the model train computes: per sparse feature a
// Gather from its embedding table and a ReduceSum over the feature's IDs
// (one for one-hot features), the bottom MLP as Gemm+Relu layers, the dot
// interaction (the bottom output, then the strictly lower triangle of
// T·Tᵀ for T = [bottom output; pooled embeddings], row by row) or the
// concatenation, the top MLP, and a Sigmoid.
package onnx
