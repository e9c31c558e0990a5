package layout

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// ManifestVersion is the layout version this package writes and reads.
const ManifestVersion = 1

// File names inside a layout directory.
const (
	// ManifestFile is the manifest, written last: a directory without one
	// is not a complete layout.
	ManifestFile = "manifest.json"
	// HotmapFile holds each table's hot IDs in slot order.
	HotmapFile = "hotmap.bin"
)

// Manifest describes a classified layout; it is written last, so a layout
// without one is incomplete.
type Manifest struct {
	Version int    `json:"version"`
	Picasso string `json:"picasso_version"`
	// Spec is the data spec of the input; sparse IDs in cold batches are row
	// indices of its tables (already mapped when the input used hashed IDs).
	Spec          dataset.Spec `json:"spec"`
	BatchSize     int          `json:"batch_size"`
	RowsIn        int64        `json:"rows_in"`
	HotRows       int64        `json:"hot_rows"`
	ColdRows      int64        `json:"cold_rows"`
	HotBatches    int          `json:"hot_batches"`
	ColdBatches   int          `json:"cold_batches"`
	HotInputShare float64      `json:"hot_input_share"`
	HotTableRows  int64        `json:"hot_table_rows"`
	// HotTableBytes is the packed hot table's size at the profile's dim (rows only).
	HotTableBytes int64   `json:"hot_table_bytes"`
	EmbeddingDim  int     `json:"embedding_dim"`
	Seed          uint64  `json:"seed"`
	Threshold     float64 `json:"threshold"`
	// ProfileFingerprint and DataFingerprint tie the layout to its inputs.
	ProfileFingerprint string `json:"profile_fingerprint"`
	DataFingerprint    string `json:"data_fingerprint"`
	// Tables lists, per embedding table, its rows, hot rows and first slot.
	Tables []ManifestTable `json:"tables"`
	// HotFiles and ColdFiles list the part files in order with their batch counts.
	HotFiles  []PartFile `json:"hot_files"`
	ColdFiles []PartFile `json:"cold_files"`
	// Digest is an order-independent digest of the input rows (label, dense
	// values and IDs); verify recomputes it from the output.
	Digest  string `json:"digest"`
	HasTest bool   `json:"has_test"`
	// TestSpec is the spec of the test copy, which keeps the input's columns
	// and ID mapping (hashed IDs stay hashed, p_true stays); nil in layouts
	// written before it existed, whose test copy is read with Spec.
	TestSpec *dataset.Spec `json:"test_spec,omitempty"`
	// Seconds is the whole run; PartitionSeconds the parallel pass that
	// reads, tags and buckets the input, the rest sorting and writing.
	Seconds          float64 `json:"seconds"`
	PartitionSeconds float64 `json:"partition_seconds"`
}

// ManifestTable is one embedding table's entry in the manifest.
type ManifestTable struct {
	Name    string `json:"name"`
	Rows    int64  `json:"rows"`
	HotRows int64  `json:"hot_rows"`
	Offset  int64  `json:"offset"`
}

// PartFile is one Parquet part of a class.
type PartFile struct {
	Name    string `json:"name"`
	Batches int    `json:"batches"`
	Rows    int64  `json:"rows"`
}

// WriteManifest writes m to dir/manifest.json (through a temporary file).
func WriteManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(dir, ManifestFile), append(b, '\n'))
}

// ReadManifest reads dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("layout: %s has no %s (not a layout, or an incomplete one): %w", dir, ManifestFile, ErrInvalid)
		}
		return nil, fmt.Errorf("layout: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("layout: %s/%s: %v: %w", dir, ManifestFile, err, ErrInvalid)
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("layout: %s: layout version %d, this picasso reads %d: %w", dir, m.Version, ManifestVersion, ErrInvalid)
	}
	return &m, nil
}
