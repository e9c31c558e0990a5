package train

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"reflect"
	"time"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/compute"
)

// A checkpoint file is
//
//	magic | section bytes ... | header JSON | header length (uint64) | magic
//
// with every number little-endian. The header (at the end, so the file is
// written in one pass) describes the run, its progress and each section:
// the MLP parameters and their optimizer state, the master embedding
// tables and their accumulators, the hot table and the rows changed on
// either side since the last synchronisation. It is written to a temporary
// file and renamed, so a crash leaves the previous checkpoint intact.
const (
	ckptMagic   = "PCSOCKP1"
	ckptVersion = 1
)

type ckptHeader struct {
	Version   int             `json:"version"`
	Mode      string          `json:"mode"`
	Shape     Shape           `json:"shape"`
	Optimizer string          `json:"optimizer"`
	Seed      uint64          `json:"seed"`
	BatchSize int             `json:"batch_size"`
	HotRows   int64           `json:"hot_rows"`
	State     runState        `json:"state"`
	Scheduler *SchedulerState `json:"scheduler,omitempty"`
	// MetricsOffset is the length of metrics.jsonl at the checkpoint.
	MetricsOffset int64         `json:"metrics_offset"`
	Sections      []ckptSection `json:"sections"`
}

type ckptSection struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // "f32" or "i64"
	Len  int64  `json:"len"`  // elements
	CRC  uint32 `json:"crc32"`
}

// ckptData lists the arrays a checkpoint holds, by section name.
func (t *Trainer) ckptData() (f32 map[string][]float32, i64 map[string]*[]int64, order []string) {
	f32 = map[string][]float32{"params": t.m.params, "emb": t.m.emb.W}
	order = []string{"params", "emb"}
	if t.m.acc != nil {
		f32["dense_acc"], f32["emb_acc"] = t.m.acc, t.m.emb.Acc
		order = append(order, "dense_acc", "emb_acc")
	}
	i64 = map[string]*[]int64{}
	if t.hot != nil {
		f32["hot"] = t.hot.t.W
		order = append(order, "hot")
		if t.hot.t.Acc != nil {
			f32["hot_acc"] = t.hot.t.Acc
			order = append(order, "hot_acc")
		}
		i64["host_dirty"], i64["dev_dirty"] = new([]int64), new([]int64)
		order = append(order, "host_dirty", "dev_dirty")
	}
	return f32, i64, order
}

// checkpoint writes the run's state to OutDir/checkpoint.bin.
func (t *Trainer) checkpoint() error {
	if t.opts.OutDir == "" {
		return nil
	}
	path := joinPath(t.opts.OutDir, CheckpointFile)
	h := ckptHeader{Version: ckptVersion, Mode: t.mode, Shape: t.shape, Optimizer: t.tc.Optimizer, Seed: t.tc.Seed,
		BatchSize: t.batchCap, State: t.st}
	h.State.Seconds = t.st.Seconds + time.Since(t.started).Seconds()
	if t.log != nil {
		h.MetricsOffset = t.log.off
	}
	if t.hot != nil {
		h.HotRows = t.hot.t.Rows()
	}
	if t.sched != nil {
		s := t.sched.State()
		h.Scheduler = &s
	}
	f32, i64, order := t.ckptData()
	if t.hot != nil {
		*i64["host_dirty"] = t.hot.hostDirty.AppendRows(nil)
		*i64["dev_dirty"] = t.hot.devDirty.AppendRows(nil)
	}
	err := atomicfile.Write(path, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<20)
		if _, err := w.WriteString(ckptMagic); err != nil {
			return err
		}
		buf := make([]byte, 1<<16)
		for _, name := range order {
			var sec ckptSection
			var err error
			if v, ok := f32[name]; ok {
				sec, err = writeSection(w, name, v, f32Codec, buf)
			} else {
				sec, err = writeSection(w, name, *i64[name], i64Codec, buf)
			}
			if err != nil {
				return err
			}
			h.Sections = append(h.Sections, sec)
		}
		hj, err := json.Marshal(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(hj); err != nil {
			return err
		}
		var tail [16]byte
		binary.LittleEndian.PutUint64(tail[:8], uint64(len(hj)))
		copy(tail[8:], ckptMagic)
		if _, err := w.Write(tail[:]); err != nil {
			return err
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("train: write checkpoint %s: %w", path, err)
	}
	t.logf("checkpoint at step %d: %s", t.st.Step, path)
	return nil
}

// codec is the little-endian encoding of one kind of checkpoint value.
type codec[T any] struct {
	kind string
	size int
	put  func([]byte, T)
	get  func([]byte) T
}

var (
	f32Codec = codec[float32]{"f32", 4,
		func(b []byte, x float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(x)) },
		func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }}
	i64Codec = codec[int64]{"i64", 8,
		func(b []byte, x int64) { binary.LittleEndian.PutUint64(b, uint64(x)) },
		func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }}
)

// writeSection writes v through buf and returns its section entry with
// the CRC of the bytes written.
func writeSection[T any](w io.Writer, name string, v []T, c codec[T], buf []byte) (ckptSection, error) {
	sec := ckptSection{Name: name, Kind: c.kind, Len: int64(len(v))}
	crc := crc32.NewIEEE()
	per := len(buf) / c.size
	for i := 0; i < len(v); i += per {
		chunk := v[i:min(i+per, len(v))]
		b := buf[:c.size*len(chunk)]
		for k, x := range chunk {
			c.put(b[c.size*k:], x)
		}
		crc.Write(b)
		if _, err := w.Write(b); err != nil {
			return sec, err
		}
	}
	sec.CRC = crc.Sum32()
	return sec, nil
}

// readCheckpointHeader reads the header of a checkpoint file.
func readCheckpointHeader(f *os.File) (*ckptHeader, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size < 24 {
		return nil, fmt.Errorf("%d bytes is too short: %w", size, ErrCheckpoint)
	}
	var head [8]byte
	var tail [16]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return nil, err
	}
	if _, err := f.ReadAt(tail[:], size-16); err != nil {
		return nil, err
	}
	if string(head[:]) != ckptMagic || string(tail[8:]) != ckptMagic {
		return nil, fmt.Errorf("not a picasso checkpoint (or truncated): %w", ErrCheckpoint)
	}
	hl := int64(binary.LittleEndian.Uint64(tail[:8]))
	if hl <= 0 || hl > size-24 {
		return nil, fmt.Errorf("header length %d: %w", hl, ErrCheckpoint)
	}
	hj := make([]byte, hl)
	if _, err := f.ReadAt(hj, size-16-hl); err != nil {
		return nil, err
	}
	var h ckptHeader
	if err := json.Unmarshal(hj, &h); err != nil {
		return nil, fmt.Errorf("header: %v: %w", err, ErrCheckpoint)
	}
	if h.Version != ckptVersion {
		return nil, fmt.Errorf("version %d (this picasso reads %d): %w", h.Version, ckptVersion, ErrCheckpoint)
	}
	return &h, nil
}

// restore loads OutDir/checkpoint.bin into the trainer.
func (t *Trainer) restore() error {
	path := joinPath(t.opts.OutDir, CheckpointFile)
	fail := func(err error) error { return fmt.Errorf("train: resume from %s: %w", path, err) }
	f, err := os.Open(path)
	if err != nil {
		return fail(fmt.Errorf("%w: %w", err, ErrCheckpoint))
	}
	defer f.Close()
	h, err := readCheckpointHeader(f)
	if err != nil {
		return fail(err)
	}
	mismatch := func(what string, got, want any) error {
		return fail(fmt.Errorf("the checkpoint's %s is %v; this run's is %v: %w", what, got, want, ErrCheckpoint))
	}
	switch {
	case h.Mode != t.mode:
		return mismatch("mode", h.Mode, t.mode)
	case !reflect.DeepEqual(h.Shape, t.shape):
		return mismatch("model shape", fmt.Sprintf("%+v", h.Shape), fmt.Sprintf("%+v", t.shape))
	case h.Optimizer != t.tc.Optimizer:
		return mismatch("optimizer", h.Optimizer, t.tc.Optimizer)
	case h.Seed != t.tc.Seed:
		return mismatch("seed", h.Seed, t.tc.Seed)
	case h.BatchSize != t.batchCap:
		return mismatch("batch size", h.BatchSize, t.batchCap)
	}
	var hotRows int64
	if t.hot != nil {
		hotRows = t.hot.t.Rows()
	}
	if h.HotRows != hotRows {
		return mismatch("hot row count", h.HotRows, hotRows)
	}
	f32, i64, order := t.ckptData()
	if len(order) != len(h.Sections) {
		return fail(fmt.Errorf("%d sections; want %d: %w", len(h.Sections), len(order), ErrCheckpoint))
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, int64(len(ckptMagic)), math.MaxInt64>>1), 1<<20)
	buf := make([]byte, 1<<16)
	for k, sec := range h.Sections {
		if sec.Name != order[k] {
			return fail(fmt.Errorf("section %d is %q; want %q: %w", k, sec.Name, order[k], ErrCheckpoint))
		}
		if v, ok := f32[sec.Name]; ok {
			if sec.Kind != f32Codec.kind || sec.Len != int64(len(v)) {
				return fail(fmt.Errorf("section %s holds %d %s values; want %d f32: %w", sec.Name, sec.Len, sec.Kind, len(v), ErrCheckpoint))
			}
			err = readSection(r, v, f32Codec, buf, sec.CRC)
		} else {
			if sec.Kind != i64Codec.kind {
				return fail(fmt.Errorf("section %s has kind %s: %w", sec.Name, sec.Kind, ErrCheckpoint))
			}
			*i64[sec.Name] = make([]int64, sec.Len)
			err = readSection(r, *i64[sec.Name], i64Codec, buf, sec.CRC)
		}
		if err != nil {
			return fail(fmt.Errorf("section %s: %w", sec.Name, err))
		}
	}
	if t.hot != nil {
		if err := restoreRows(t.hot.hostDirty, *i64["host_dirty"]); err != nil {
			return fail(err)
		}
		if err := restoreRows(t.hot.devDirty, *i64["dev_dirty"]); err != nil {
			return fail(err)
		}
	}
	if (h.Scheduler != nil) != (t.sched != nil) {
		return fail(fmt.Errorf("scheduler state present: %v; want %v: %w", h.Scheduler != nil, t.sched != nil, ErrCheckpoint))
	}
	if t.sched != nil {
		t.sched.SetState(*h.Scheduler)
	}
	t.st = h.State
	t.link = link{h2d: h.State.BytesH2D, d2h: h.State.BytesD2H}
	t.metricsKeep = h.MetricsOffset
	t.logf("resuming at step %d from %s", t.st.Step, path)
	return nil
}

func restoreRows(s *compute.RowSet, rows []int64) error {
	s.Clear()
	for _, r := range rows {
		if r < 0 || r >= s.Cap() {
			return fmt.Errorf("changed row %d outside [0, %d): %w", r, s.Cap(), ErrCheckpoint)
		}
		s.Add(r)
	}
	return nil
}

// readSection fills v from r through buf and checks the CRC of the bytes
// read against want.
func readSection[T any](r io.Reader, v []T, c codec[T], buf []byte, want uint32) error {
	crc := crc32.NewIEEE()
	per := len(buf) / c.size
	for i := 0; i < len(v); i += per {
		chunk := v[i:min(i+per, len(v))]
		b := buf[:c.size*len(chunk)]
		if _, err := io.ReadFull(r, b); err != nil {
			return fmt.Errorf("%w: %w", err, ErrCheckpoint)
		}
		crc.Write(b)
		for k := range chunk {
			chunk[k] = c.get(b[c.size*k:])
		}
	}
	if got := crc.Sum32(); got != want {
		return fmt.Errorf("checksum %08x; want %08x: %w", got, want, ErrCheckpoint)
	}
	return nil
}
