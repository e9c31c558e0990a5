package cli

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/picasso-ctr/picasso/pkg/classify"
	"github.com/picasso-ctr/picasso/pkg/config"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/train"
)

// memPart is one item of a memory estimate: what needs the memory, the
// setting that decides it, and a lower bound of its bytes.
type memPart struct {
	what, setting string
	bytes         float64
}

// physicalMemory returns the machine's memory in bytes (MemTotal of
// /proc/meminfo), or 0 where it cannot be read.
func physicalMemory() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kib, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				return 0
			}
			return kib * 1024
		}
	}
	return 0
}

// checkMemory refuses, before anything is allocated, a configuration whose
// estimate (a lower bound) exceeds the machine's memory, naming the largest
// part and the setting to change.
func checkMemory(cmdName string, parts []memPart, limit float64) error {
	if limit <= 0 {
		return nil
	}
	var total float64
	var top memPart
	for _, p := range parts {
		total += p.bytes
		if p.bytes > top.bytes {
			top = p
		}
	}
	if total <= limit {
		return nil
	}
	return usageErrorf("%s: needs at least %s of memory, more than this machine's %s; the largest part is %s (%s): lower %s",
		cmdName, humanBytes(total), humanBytes(limit), top.what, humanBytes(top.bytes), top.setting)
}

// humanBytes writes b with a binary unit, e.g. "12.3 GiB".
func humanBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}

// rowBytes is a lower bound of one decoded row's bytes: label, dense
// values and one 8-byte ID per sparse feature.
func rowBytes(spec *dataset.Spec) float64 {
	return float64(4 + 4*len(spec.Dense) + 8*len(spec.Sparse))
}

// trainMemory estimates train's host memory: the full embedding tables
// (every mode but hybridhash, which keeps a bounded store, and device, which
// keeps them in device memory; 4-byte weights only, optimizer state not
// counted) and the decoded mini-batches in flight (the one being
// trained, and train.prefetch read ahead).
func trainMemory(c *config.Config) []memPart {
	var parts []memPart
	if c.Train.Mode != train.ModeHybridHash && c.Train.Mode != train.ModeDevice {
		for _, t := range c.Data.Tables() {
			parts = append(parts, memPart{
				what:    fmt.Sprintf("embedding table %s (%d rows x dim %d)", t.Name, t.Rows, c.Model.EmbeddingDim),
				setting: "the table's rows in the data config (convert --rows) or model.embedding_dim",
				bytes:   float64(t.Rows) * float64(c.Model.EmbeddingDim) * 4,
			})
		}
	}
	batch := float64(c.Train.BatchSize) * rowBytes(&c.Data)
	// Forward activations: the pooled embeddings and one value per unit of
	// the network's MLPs for every row of the mini-batch.
	units := len(c.Data.Sparse) * c.Model.EmbeddingDim
	mlps := [][]int{c.Model.DeepMLP}
	if c.Model.Arch == train.ArchDLRM {
		mlps = [][]int{c.Model.BottomMLP, c.Model.TopMLP}
	}
	for _, m := range mlps {
		for _, w := range m {
			units += w
		}
	}
	parts = append(parts,
		memPart{what: fmt.Sprintf("the mini-batch (%d rows)", c.Train.BatchSize), setting: "train.batch_size (--batch-size)", bytes: batch},
		memPart{what: fmt.Sprintf("the activations of a %d-row mini-batch", c.Train.BatchSize), setting: "train.batch_size (--batch-size)",
			bytes: float64(c.Train.BatchSize) * float64(units) * 4},
		memPart{what: fmt.Sprintf("%d prefetched mini-batches", c.Train.Prefetch), setting: "train.prefetch", bytes: float64(c.Train.Prefetch) * batch})
	return parts
}

// classifyMemory estimates classify's mini-batch buffers (one hot and one
// cold mini-batch being filled) and, when the rows of the input fit
// shuffleMemory, the in-memory shuffle that holds them all.
func classifyMemory(spec *dataset.Spec, batchSize int, rows, shuffleMemory int64) []memPart {
	parts := []memPart{{what: fmt.Sprintf("two %d-row mini-batches", batchSize), setting: "--batch-size (train.batch_size)",
		bytes: 2 * float64(batchSize) * rowBytes(spec)}}
	if b := rows * classify.ShuffleRowBytes(spec); b <= shuffleMemory {
		// Twice the rows: the garbage collector lets the heap grow to
		// twice what is live (2.2 GB peak for 5M kaggle rows, 1.2 GB
		// estimated).
		parts = append(parts, memPart{what: fmt.Sprintf("the in-memory shuffle of %d rows", rows), setting: "--shuffle-memory", bytes: 2 * float64(b)})
	}
	return parts
}
