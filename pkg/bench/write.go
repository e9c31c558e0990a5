package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
)

// Report files.
const (
	ReportJSON     = "report.json"
	ReportMarkdown = "report.md"
)

// WriteFiles writes report.json, the PNG charts and report.md (last, so a
// report.md is the sign of a complete report) into dir and returns the
// paths written.
func (r *Report) WriteFiles(dir string) ([]string, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", ReportJSON, err)
	}
	jp := filepath.Join(dir, ReportJSON)
	if err := atomicfile.WriteBytes(jp, append(b, '\n')); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	paths := []string{jp}
	charts, err := r.WriteCharts(dir)
	for _, c := range charts {
		paths = append(paths, filepath.Join(dir, c))
	}
	if err != nil {
		return paths, err
	}
	var md bytes.Buffer
	if err := r.WriteMarkdown(&md, charts); err != nil {
		return paths, err
	}
	mp := filepath.Join(dir, ReportMarkdown)
	if err := atomicfile.WriteBytes(mp, md.Bytes()); err != nil {
		return paths, fmt.Errorf("bench: %w", err)
	}
	return append(paths, mp), nil
}
