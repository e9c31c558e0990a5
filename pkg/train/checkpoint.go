package train

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
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
	// ckptVersionNorm marks a checkpoint whose model standardizes its
	// dense inputs (Shape.DenseShift): a picasso that reads only version 1
	// refuses it rather than score raw inputs with it.
	ckptVersionNorm = 2
)

type ckptHeader struct {
	Version   int       `json:"version"`
	Mode      Mode      `json:"mode"`
	Shape     Shape     `json:"shape"`
	Optimizer Optimizer `json:"optimizer"`
	// DenseOptimizer is the MLPs' optimizer (empty: Optimizer).
	DenseOptimizer Optimizer       `json:"dense_optimizer,omitempty"`
	Seed           uint64          `json:"seed"`
	BatchSize      int             `json:"batch_size"`
	HotRows        int64           `json:"hot_rows"`
	State          runState        `json:"state"`
	Scheduler      *SchedulerState `json:"scheduler,omitempty"`
	// MetricsOffset is the length of metrics.jsonl at the checkpoint.
	MetricsOffset int64 `json:"metrics_offset"`
	// Cache names the directory beside the checkpoint that holds
	// HybridHash's tiers (mode hybridhash).
	Cache    string        `json:"cache,omitempty"`
	Sections []ckptSection `json:"sections"`
}

type ckptSection struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // "f32" or "i64"
	Len  int64  `json:"len"`  // elements
	CRC  uint32 `json:"crc32"`
}

// ckptArray is one section of a checkpoint: a float32 buffer on some
// backend (be, host or device) or a list of int64 row indices (rows, of a
// set restored into set).
type ckptArray struct {
	name string
	be   compute.Backend
	buf  compute.Buffer
	set  *rowSet
}

// ckptData lists the arrays a checkpoint holds, in order: the MLPs and the
// master tables, their optimizer state, then the hot table, its state and
// the rows changed on either side since the last synchronisation.
func (t *Trainer) ckptData() []ckptArray {
	ps := t.place.state()
	m, master := t.m, ps.master
	out := []ckptArray{{name: "params", be: m.be, buf: m.params}}
	if master != nil { // hybridhash has no master table: its cache saves itself
		out = append(out, ckptArray{name: "emb", be: master.Backend(), buf: master.W})
	}
	if m.acc.Valid() {
		out = append(out, ckptArray{name: "dense_acc", be: m.be, buf: m.acc})
	}
	if master != nil && master.Acc.Valid() {
		out = append(out, ckptArray{name: "emb_acc", be: master.Backend(), buf: master.Acc})
	}
	if h := ps.hot; h != nil {
		out = append(out, ckptArray{name: "hot", be: h.t.Backend(), buf: h.t.W})
		if h.t.Acc.Valid() {
			out = append(out, ckptArray{name: "hot_acc", be: h.t.Backend(), buf: h.t.Acc})
		}
		out = append(out, ckptArray{name: "host_dirty", set: h.hostDirty}, ckptArray{name: "dev_dirty", set: h.devDirty})
	}
	return out
}

// hotRows returns the rows of the hot table, 0 without one.
func (t *Trainer) hotRows() int64 {
	if h := t.place.state().hot; h != nil {
		return h.t.Rows()
	}
	return 0
}

// checkpoint writes the run's state to OutDir/checkpoint.bin. The master
// tables must be up to date (syncMaster); arrays on the device are copied
// out in chunks, which is not counted as training traffic.
func (t *Trainer) checkpoint() error { return t.checkpointTo(CheckpointFile) }

// checkpointTo writes the run's state to the file name in OutDir.
func (t *Trainer) checkpointTo(name string) error {
	if t.opts.OutDir == "" {
		return nil
	}
	path := joinPath(t.opts.OutDir, name)
	version := ckptVersion
	if t.shape.DenseShift != nil {
		version = ckptVersionNorm
	}
	h := ckptHeader{Version: version, Mode: t.opts.Mode, Shape: t.shape, Optimizer: t.opts.Optimizer, DenseOptimizer: t.denseOptimizer(), Seed: t.opts.Seed,
		BatchSize: t.batchCap, State: t.st, HotRows: t.hotRows()}
	h.State.Seconds = t.st.Seconds + time.Since(t.started).Seconds()
	if t.log != nil {
		// The log's lines up to the offset recorded reach the disk before
		// the checkpoint does: a resume after a crash then finds them all.
		if err := t.log.f.Sync(); err != nil {
			return fmt.Errorf("train: write checkpoint %s: sync %s: %w", path, MetricsFile, err)
		}
		h.MetricsOffset = t.log.off
	}
	if sched := t.ord.scheduler(); sched != nil {
		s := sched.State()
		h.Scheduler = &s
	}
	cache, done, err := t.place.saveCache(t.opts.OutDir, name, t.st.Step)
	if err != nil {
		return fmt.Errorf("train: write checkpoint %s: %w", path, err)
	}
	h.Cache = cache
	err = atomicfile.Write(path, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<20)
		if _, err := w.WriteString(ckptMagic); err != nil {
			return err
		}
		sw := &sectionIO{buf: make([]byte, 1<<16)}
		for _, a := range t.ckptData() {
			sec, err := sw.write(w, a)
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
	if done != nil {
		// The saves checkpoint.bin named before go only once the new
		// checkpoint.bin is on the disk: a crash could otherwise keep the
		// old file and lose the cache it names.
		done()
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

// deviceChunk is the number of values a checkpoint copies from or to a
// device at a time.
const deviceChunk = 1 << 20

// sectionIO encodes and decodes checkpoint sections through a byte buffer,
// with the CRC of the bytes, copying arrays on a device in chunks.
type sectionIO struct {
	buf   []byte
	chunk []float32 // host copy of a device chunk
	crc   hash.Hash32
}

// write writes array a as one section.
func (s *sectionIO) write(w io.Writer, a ckptArray) (ckptSection, error) {
	s.crc = crc32.NewIEEE()
	if a.set != nil {
		rows := a.set.appendRows(nil)
		err := putValues(s, w, rows, i64Codec)
		return ckptSection{Name: a.name, Kind: i64Codec.kind, Len: int64(len(rows)), CRC: s.crc.Sum32()}, err
	}
	sec := ckptSection{Name: a.name, Kind: f32Codec.kind, Len: int64(a.buf.Len())}
	if a.buf.Space().IsHost() {
		err := putValues(s, w, a.buf.Float32s(), f32Codec)
		sec.CRC = s.crc.Sum32()
		return sec, err
	}
	for lo := 0; lo < a.buf.Len(); lo += deviceChunk {
		hi := min(lo+deviceChunk, a.buf.Len())
		s.chunk = grow(s.chunk, hi-lo)
		if err := fetch(a.be, compute.Wrap(s.chunk), a.buf.Slice(lo, hi)); err != nil {
			return sec, err
		}
		if err := putValues(s, w, s.chunk, f32Codec); err != nil {
			return sec, err
		}
	}
	sec.CRC = s.crc.Sum32()
	return sec, nil
}

// putValues encodes v, adding its bytes to the CRC.
func putValues[T any](s *sectionIO, w io.Writer, v []T, c codec[T]) error {
	per := len(s.buf) / c.size
	for i := 0; i < len(v); i += per {
		chunk := v[i:min(i+per, len(v))]
		b := s.buf[:c.size*len(chunk)]
		for k, x := range chunk {
			c.put(b[c.size*k:], x)
		}
		s.crc.Write(b)
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// getValues decodes len(v) values into v, adding their bytes to the CRC.
func getValues[T any](s *sectionIO, r io.Reader, v []T, c codec[T]) error {
	per := len(s.buf) / c.size
	for i := 0; i < len(v); i += per {
		chunk := v[i:min(i+per, len(v))]
		b := s.buf[:c.size*len(chunk)]
		if _, err := io.ReadFull(r, b); err != nil {
			return fmt.Errorf("%w: %w", err, ErrCheckpoint)
		}
		s.crc.Write(b)
		for k := range chunk {
			chunk[k] = c.get(b[c.size*k:])
		}
	}
	return nil
}

// read reads section sec into array a.
func (s *sectionIO) read(r io.Reader, sec ckptSection, a ckptArray) error {
	s.crc = crc32.NewIEEE()
	if a.set != nil {
		if sec.Kind != i64Codec.kind || sec.Len < 0 || sec.Len > a.set.n {
			return fmt.Errorf("holds %d %s values; want at most %d i64: %w", sec.Len, sec.Kind, a.set.n, ErrCheckpoint)
		}
		rows := make([]int64, sec.Len)
		if err := getValues(s, r, rows, i64Codec); err != nil {
			return err
		}
		if err := s.check(sec); err != nil {
			return err
		}
		return restoreRows(a.set, rows)
	}
	if sec.Kind != f32Codec.kind || sec.Len != int64(a.buf.Len()) {
		return fmt.Errorf("holds %d %s values; want %d f32: %w", sec.Len, sec.Kind, a.buf.Len(), ErrCheckpoint)
	}
	if a.buf.Space().IsHost() {
		if err := getValues(s, r, a.buf.Float32s(), f32Codec); err != nil {
			return err
		}
		return s.check(sec)
	}
	for lo := 0; lo < a.buf.Len(); lo += deviceChunk {
		hi := min(lo+deviceChunk, a.buf.Len())
		s.chunk = grow(s.chunk, hi-lo)
		if err := getValues(s, r, s.chunk, f32Codec); err != nil {
			return err
		}
		place(a.be, a.buf.Slice(lo, hi), compute.Wrap(s.chunk))
	}
	return s.check(sec)
}

func (s *sectionIO) check(sec ckptSection) error {
	if got := s.crc.Sum32(); got != sec.CRC {
		return fmt.Errorf("checksum %08x; want %08x: %w", got, sec.CRC, ErrCheckpoint)
	}
	return nil
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
	if h.Version != ckptVersion && h.Version != ckptVersionNorm {
		return nil, fmt.Errorf("version %d (this picasso reads %d and %d): %w", h.Version, ckptVersion, ckptVersionNorm, ErrCheckpoint)
	}
	if (h.Version == ckptVersionNorm) != (h.Shape.DenseShift != nil) {
		return nil, fmt.Errorf("version %d with dense statistics present: %v: %w", h.Version, h.Shape.DenseShift != nil, ErrCheckpoint)
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
	case h.Mode != t.opts.Mode:
		return mismatch("mode", h.Mode, t.opts.Mode)
	case !reflect.DeepEqual(h.Shape, t.shape):
		return mismatch("model shape", fmt.Sprintf("%+v", h.Shape), fmt.Sprintf("%+v", t.shape))
	case h.Optimizer != t.opts.Optimizer:
		return mismatch("optimizer", h.Optimizer, t.opts.Optimizer)
	case cmp.Or(h.DenseOptimizer, h.Optimizer) != t.denseOptimizer():
		return mismatch("dense optimizer", cmp.Or(h.DenseOptimizer, h.Optimizer), t.denseOptimizer())
	case h.Seed != t.opts.Seed:
		return mismatch("seed", h.Seed, t.opts.Seed)
	case h.BatchSize != t.batchCap:
		return mismatch("batch size", h.BatchSize, t.batchCap)
	case h.HotRows != t.hotRows():
		return mismatch("hot row count", h.HotRows, t.hotRows())
	}
	arrays := t.ckptData()
	if len(arrays) != len(h.Sections) {
		return fail(fmt.Errorf("%d sections; want %d: %w", len(h.Sections), len(arrays), ErrCheckpoint))
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, int64(len(ckptMagic)), math.MaxInt64>>1), 1<<20)
	sio := &sectionIO{buf: make([]byte, 1<<16)}
	for k, sec := range h.Sections {
		if sec.Name != arrays[k].name {
			return fail(fmt.Errorf("section %d is %q; want %q: %w", k, sec.Name, arrays[k].name, ErrCheckpoint))
		}
		if err := sio.read(r, sec, arrays[k]); err != nil {
			return fail(fmt.Errorf("section %s: %w", sec.Name, err))
		}
	}
	if err := t.place.loadCache(t.opts.OutDir, h.Cache); err != nil {
		return fail(err)
	}
	sched := t.ord.scheduler()
	if (h.Scheduler != nil) != (sched != nil) {
		return fail(fmt.Errorf("scheduler state present: %v; want %v: %w", h.Scheduler != nil, sched != nil, ErrCheckpoint))
	}
	if sched != nil {
		sched.SetState(*h.Scheduler)
	}
	t.st = h.State
	if math.IsNaN(float64(t.st.BestValid)) {
		// No validation yet when the checkpoint was taken: the +Inf
		// start is written as null and read as NaN, which no loss is
		// below, so the resumed run kept no best model and stopped early
		// where the uninterrupted one did not.
		t.st.BestValid = Number(math.Inf(1))
	}
	t.l.h2d, t.l.d2h = h.State.BytesH2D, h.State.BytesD2H
	t.metricsKeep = h.MetricsOffset
	t.logf("resuming at step %d from %s", t.st.Step, path)
	return nil
}

func restoreRows(s *rowSet, rows []int64) error {
	s.clear()
	for _, r := range rows {
		if r < 0 || r >= s.n {
			return fmt.Errorf("changed row %d outside [0, %d): %w", r, s.n, ErrCheckpoint)
		}
		s.add(r)
	}
	return nil
}

// denseOptimizer returns the MLPs' optimizer.
func (t *Trainer) denseOptimizer() Optimizer {
	o, _ := t.opts.denseOpt()
	return o
}
