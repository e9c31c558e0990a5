// Package onnxtest runs exported ONNX models in ONNX Runtime for tests:
// scripts/onnx-score.js under onnxruntime-node, which tests find through
// the ORTNodeEnv variable (scripts/onnx-check.sh sets it) and skip
// without.
package onnxtest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ORTNodeEnv names the node_modules directory holding onnxruntime-node
// (npm install --ignore-scripts onnxruntime-node@1.30.0).
const ORTNodeEnv = "ONNXRUNTIME_NODE_MODULES"

// Feed is one input of a model: Data for "int64", F32 for "float32",
// row-major, of shape Dims.
type Feed struct {
	Type string
	Dims []int
	Data []int64
	F32  []float32
}

// MarshalJSON writes the feed as scripts/onnx-score.js reads it.
func (f Feed) MarshalJSON() ([]byte, error) {
	var data any = f.Data
	if f.Type == "float32" {
		data = f.F32
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		Dims []int  `json:"dims"`
		Data any    `json:"data"`
	}{f.Type, f.Dims, data})
}

// Run runs model on feeds with node and the onnxruntime-node found in
// modules, through script (scripts/onnx-score.js), in scratch directory
// dir, and returns the model's "score" output.
func Run(modules, script, model, dir string, feeds map[string]Feed) ([]float64, error) {
	path := filepath.Join(dir, "feeds.json")
	raw, err := json.Marshal(feeds)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("node", script, model, path)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("onnxtest: onnxruntime-node: %w", err)
	}
	var got struct {
		Scores []float64 `json:"scores"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		return nil, fmt.Errorf("onnxtest: %w", err)
	}
	return got.Scores, nil
}
