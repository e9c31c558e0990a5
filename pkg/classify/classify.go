package classify

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/picasso-ctr/picasso/internal/prefetch"
	"github.com/picasso-ctr/picasso/pkg/atomicfile"
	"github.com/picasso-ctr/picasso/pkg/dataset"
	"github.com/picasso-ctr/picasso/pkg/layout"
)

// Options configures Run.
type Options struct {
	// BatchSize is the rows per mini-batch (default 1024).
	BatchSize int
	// Workers read and tag the input in parallel (default: one per core).
	Workers int
	// Seed orders each class's rows.
	Seed uint64
	// Force replaces an existing output directory.
	Force bool
	// EmbeddingDim is used to report the hot table's bytes.
	EmbeddingDim int
	// Threshold and ProfileFingerprint are recorded in the manifest.
	Threshold          float64
	ProfileFingerprint string
	// BucketBytes bounds the memory of one shuffle bucket (default 64 MiB).
	BucketBytes int64
	// ShuffleMemory is the most bytes of encoded rows the shuffle keeps in
	// memory (default 256 MiB): when the input's rows, at ShuffleRowBytes
	// each, fit, the buckets stay in memory; otherwise they are spilled to
	// files under the output and read back one at a time. Either way the
	// layout's bytes are the same.
	ShuffleMemory int64
	// FileBatches is the number of mini-batches per part file (default: as
	// many as hold 65,536 rows, so 64 at batch size 1024);
	// part files are written concurrently, so smaller files use more cores.
	FileBatches int
	// Version is picasso's version, recorded in the manifest.
	Version string
	// Progress, when set, is called with rows processed of the total
	// (each row counts twice: once read, once written).
	Progress func(done, total int64)
}

func (o *Options) defaults() {
	if o.BatchSize <= 0 {
		o.BatchSize = 1024
	}
	if o.Workers <= 0 {
		o.Workers = runtime.NumCPU()
	}
	if o.BucketBytes <= 0 {
		o.BucketBytes = 64 << 20
	}
	if o.ShuffleMemory <= 0 {
		o.ShuffleMemory = DefaultShuffleMemory
	}
	if o.FileBatches <= 0 {
		o.FileBatches = max(1, 65536/o.BatchSize)
	}
}

// DefaultShuffleMemory is Options.ShuffleMemory's default. It is small:
// on 5M kaggle rows the in-memory shuffle was only about 5% faster than
// the file shuffle (whose files stay in the page cache) and peaked at six
// times the memory (2.2 GB against 0.37 GB).
const DefaultShuffleMemory = 256 << 20

// ShuffleRowBytes is the most bytes the shuffle holds for one row of spec
// (a multi-hot feature counted at 8 IDs): Options.ShuffleMemory is
// compared with the input's rows times this.
func ShuffleRowBytes(spec *dataset.Spec) int64 {
	n := int64(8 + 4 + 4*len(spec.Dense))
	for _, f := range spec.Sparse {
		if f.MultiHot {
			n += 4 + 8*8
		} else {
			n += 8
		}
	}
	return n
}

// Run classifies every input of ds against hot and writes the FAE layout to
// out. The layout is built in a temporary directory beside out
// (atomicfile.StageDir) and renamed into place when complete; an existing out
// is an error (ErrExists) unless opts.Force replaces it.
func Run(ctx context.Context, ds *dataset.Dataset, hot *layout.HotSet, out string, opts Options) (*layout.Manifest, error) {
	opts.defaults()
	start := time.Now()
	spec := ds.Spec()
	tables := spec.Tables()
	if hot.Tables() != len(tables) {
		return nil, fmt.Errorf("classify: hot set has %d tables, the data %d", hot.Tables(), len(tables))
	}
	if _, err := os.Stat(out); err == nil && !opts.Force {
		return nil, fmt.Errorf("classify: %s already exists (use --force to replace it): %w", out, ErrExists)
	}
	stage, err := atomicfile.StageDir(out)
	if err != nil {
		return nil, fmt.Errorf("classify: %w", err)
	}
	defer stage.Abort() // does nothing once committed
	tmp := stage.Dir()
	r := &run{ds: ds, spec: spec, hot: hot, opts: opts, dir: tmp, ft: spec.FeatureTable(), total: 2 * ds.Rows()}
	rs := layout.RowSpec(spec)
	r.narrow = dataset.NarrowIDs(&rs) == dataset.SlotInt32
	if err := r.partition(ctx); err != nil {
		return nil, err
	}
	partitioned := time.Since(start).Seconds()
	m := &layout.Manifest{
		Version: layout.ManifestVersion, Picasso: opts.Version, Spec: layout.RowSpec(spec), BatchSize: opts.BatchSize,
		RowsIn: ds.Rows(), HotRows: r.count[layout.Hot], ColdRows: r.count[layout.Cold],
		HotTableRows: hot.Rows(), EmbeddingDim: opts.EmbeddingDim, Seed: opts.Seed,
		Threshold: opts.Threshold, ProfileFingerprint: opts.ProfileFingerprint, DataFingerprint: ds.Fingerprint(),
		Digest: r.digest.String(), PartitionSeconds: partitioned,
	}
	m.HotTableBytes = hot.Rows() * int64(opts.EmbeddingDim) * 4
	if m.RowsIn > 0 {
		m.HotInputShare = float64(m.HotRows) / float64(m.RowsIn)
	}
	for t, tb := range tables {
		m.Tables = append(m.Tables, layout.ManifestTable{Name: tb.Name, Rows: tb.Rows, HotRows: hot.TableRows(t), Offset: hot.Offset(t)})
	}
	// The two classes are sorted and written at once when there are
	// workers to spare: each has its own buckets and files.
	var classFiles [2][]layout.PartFile
	var classErr [2]error
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	bundle := func(c layout.Class) {
		if classFiles[c], classErr[c] = r.bundle(bctx, c); classErr[c] != nil {
			cancel()
		}
	}
	if opts.Workers > 1 {
		var wg sync.WaitGroup
		for c := range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); bundle(layout.Class(c)) }()
		}
		wg.Wait()
	} else {
		bundle(layout.Hot)
		if classErr[layout.Hot] == nil {
			bundle(layout.Cold)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range classErr {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	for c := range 2 {
		files := classFiles[c]
		nb := 0
		for _, f := range files {
			nb += f.Batches
		}
		if layout.Class(c) == layout.Hot {
			m.HotFiles, m.HotBatches = files, nb
		} else {
			m.ColdFiles, m.ColdBatches = files, nb
		}
	}
	os.RemoveAll(filepath.Join(tmp, "buckets"))
	rows := make([]int64, len(tables))
	names := make([]string, len(tables))
	for t, tb := range tables {
		rows[t], names[t] = tb.Rows, tb.Name
	}
	if err := layout.WriteHotmap(filepath.Join(tmp, layout.HotmapFile), hot, rows); err != nil {
		return nil, fmt.Errorf("classify: hotmap: %w", err)
	}
	// The same map as Parquet, for other tools (docs/layout.md).
	if err := layout.WriteHotmapParquet(filepath.Join(tmp, layout.HotmapParquetFile), hot, names); err != nil {
		return nil, fmt.Errorf("classify: hotmap: %w", err)
	}
	if spec.Test != "" {
		if err := copyTest(ctx, spec.Test, filepath.Join(tmp, "test")); err != nil {
			return nil, err
		}
		m.HasTest = true
		m.Spec.Test = "test"
		ts := *spec
		ts.Train, ts.Test = "test", ""
		m.TestSpec = &ts
	}
	m.Seconds = time.Since(start).Seconds()
	if err := layout.WriteManifest(tmp, m); err != nil {
		return nil, fmt.Errorf("classify: manifest: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	commit := stage.Commit
	if opts.Force {
		commit = stage.Replace
	}
	if err := commit(); errors.Is(err, fs.ErrExist) { // out appeared meanwhile
		return nil, fmt.Errorf("classify: %s already exists (use --force to replace it): %w", out, ErrExists)
	} else if err != nil {
		return nil, fmt.Errorf("classify: %w", err)
	}
	return m, nil
}

// run is the state of one classification.
type run struct {
	ds    *dataset.Dataset
	spec  *dataset.Spec
	hot   *layout.HotSet
	opts  Options
	dir   string
	ft    []int
	total int64
	done  atomic.Int64
	// narrow: every table fits 32 bits, so cold rows carry their IDs as 4
	// bytes in the buckets and as INT32 in their files (dataset.NarrowIDs).
	narrow bool

	nbits   uint // buckets = 1 << nbits
	inMem   bool // buckets stay in memory (bucket.chunks), not in files
	flushAt int  // bytes a worker gathers for a bucket before handing them on
	buckets [2][]*bucket
	count   [2]int64
	digest  Digest
}

// bucket is one shuffle bucket of a class: its encoded rows in memory
// (chunks, each of whole rows) or in a file.
type bucket struct {
	mu     sync.Mutex
	chunks [][]byte
	f      *os.File
	path   string
	n      int64
}

func (r *run) progress(n int64) {
	d := r.done.Add(n)
	if r.opts.Progress != nil {
		r.opts.Progress(d, r.total)
	}
}

// partition reads the input in parallel, tags each row and appends it to
// its class's bucket (in memory or in a file).
func (r *run) partition(ctx context.Context) error {
	total := r.ds.Rows() * ShuffleRowBytes(r.spec)
	r.inMem = total <= r.opts.ShuffleMemory
	r.flushAt = 256 << 10
	bucketBytes := r.opts.BucketBytes
	if r.inMem {
		// Buckets small enough to stay in cache while they are sorted
		// and read back in key order, filled in small chunks.
		bucketBytes, r.flushAt = min(bucketBytes, memBucketBytes), 64<<10
	}
	need := total / bucketBytes
	for r.nbits < 12 && int64(1)<<r.nbits <= need {
		r.nbits++
	}
	bdir := filepath.Join(r.dir, "buckets")
	if !r.inMem {
		if err := os.MkdirAll(bdir, 0o755); err != nil {
			return fmt.Errorf("classify: %w", err)
		}
	}
	for c := range 2 {
		for b := 0; b < 1<<r.nbits; b++ {
			bk := &bucket{}
			if !r.inMem {
				bk.path = filepath.Join(bdir, fmt.Sprintf("%s-%04d.bin", layout.Class(c), b))
				f, err := os.Create(bk.path)
				if err != nil {
					return fmt.Errorf("classify: %w", err)
				}
				bk.f = f
			}
			r.buckets[c] = append(r.buckets[c], bk)
		}
	}
	groups := r.ds.RowGroups()
	var next atomic.Int64
	var mu sync.Mutex
	errs := make([]error, r.opts.Workers)
	var wg sync.WaitGroup
	for w := 0; w < r.opts.Workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			p := &partitioner{r: r, local: make([][][]byte, 2)}
			for c := range 2 {
				p.local[c] = make([][]byte, 1<<r.nbits)
			}
			for {
				i := int(next.Add(1) - 1)
				if i >= len(groups) || ctx.Err() != nil {
					break
				}
				if err := p.group(ctx, groups[i]); err != nil {
					errs[w] = err
					break
				}
			}
			if err := p.flushAll(); err != nil && errs[w] == nil {
				errs[w] = err
			}
			mu.Lock()
			r.count[0] += p.count[0]
			r.count[1] += p.count[1]
			r.digest.Merge(p.digest)
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	for c := range 2 {
		for _, b := range r.buckets[c] {
			if b.f == nil {
				continue
			}
			if err := b.f.Close(); err != nil {
				errs = append(errs, fmt.Errorf("classify: %w", err))
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

type partitioner struct {
	r      *run
	local  [][][]byte // [class][bucket] pending bytes
	count  [2]int64
	digest Digest
	// Per batch: whether each row is hot, each feature's slots (those of
	// cold IDs undefined), and each row's digest hash.
	hot   []bool
	slots [][]int32
	hash  []uint64
}

// memBucketBytes bounds a bucket of the in-memory shuffle.
const memBucketBytes = 4 << 20

func (p *partitioner) group(ctx context.Context, g dataset.RowGroup) error {
	r := p.r
	rd, err := r.ds.NewReader(dataset.ReaderOptions{RowGroups: []dataset.RowGroup{g}, BatchRows: 8192})
	if err != nil {
		return err
	}
	defer rd.Close()
	for {
		b, err := rd.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p.tag(b)
		p.digests(b)
		for i := 0; i < b.N; i++ {
			row := g.First + b.Pos.Row + int64(i)
			c := layout.Cold
			if p.hot[i] {
				c = layout.Hot
			}
			p.count[c]++
			p.digest.Add(p.hash[i])
			bk := r.bucketOf(row)
			if c == layout.Hot {
				p.local[c][bk] = p.encodeHot(p.local[c][bk], b, i, row)
			} else {
				p.local[c][bk] = encodeRow(p.local[c][bk], b, i, row, r.narrow)
			}
			if len(p.local[c][bk]) >= r.flushAt {
				if err := p.flush(c, bk); err != nil {
					return err
				}
			}
		}
		r.progress(int64(b.N))
	}
}

func (p *partitioner) flush(c layout.Class, bk int) error {
	buf := p.local[c][bk]
	if len(buf) == 0 {
		return nil
	}
	f := p.r.buckets[c][bk]
	if p.r.inMem { // the buffer becomes the bucket's next chunk, uncopied
		f.mu.Lock()
		f.chunks = append(f.chunks, buf)
		f.n += int64(len(buf))
		f.mu.Unlock()
		p.local[c][bk] = make([]byte, 0, p.r.flushAt+p.r.flushAt/4)
		return nil
	}
	f.mu.Lock()
	_, err := f.f.Write(buf)
	f.n += int64(len(buf))
	f.mu.Unlock()
	p.local[c][bk] = buf[:0]
	if err != nil {
		return fmt.Errorf("classify: write %s: %w", f.path, err)
	}
	return nil
}

func (p *partitioner) flushAll() error {
	for c := range 2 {
		for bk := range p.local[c] {
			if err := p.flush(layout.Class(c), bk); err != nil {
				return err
			}
		}
	}
	return nil
}

// tag marks which rows of b are hot (every ID hot) in p.hot and keeps
// their slots in p.slots. It looks the IDs up a feature at a time, so one
// table's slots stay in cache for the whole batch.
func (p *partitioner) tag(b *dataset.Batch) {
	hs := p.r.hot
	p.hot = slices.Grow(p.hot[:0], b.N)[:b.N]
	hot := p.hot
	for i := range hot {
		hot[i] = true
	}
	if len(p.slots) < len(b.Sparse) {
		p.slots = make([][]int32, len(b.Sparse))
	}
	for f := range b.Sparse {
		t := p.r.ft[f]
		c := &b.Sparse[f]
		slots := slices.Grow(p.slots[f][:0], len(c.IDs))[:len(c.IDs)]
		p.slots[f] = slots
		if c.Offsets == nil {
			for i, id := range c.IDs[:b.N] {
				s, ok := hs.Slot(t, id)
				slots[i] = s
				if !ok {
					hot[i] = false
				}
			}
			continue
		}
		for i := 0; i < b.N; i++ {
			for k := c.Offsets[i]; k < c.Offsets[i+1]; k++ {
				s, ok := hs.Slot(t, c.IDs[k])
				slots[k] = s
				if !ok {
					hot[i] = false
				}
			}
		}
	}
}

// digests leaves rowDigest of every row of b in p.hash.
func (p *partitioner) digests(b *dataset.Batch) {
	p.hash = slices.Grow(p.hash[:0], b.N)[:b.N]
	i := 0
	for _, c := range b.Sparse {
		if c.Offsets != nil { // rows differ in length: one at a time
			for ; i < b.N; i++ {
				p.hash[i] = rowDigest(b, i)
			}
			return
		}
	}
	for ; i+4 <= b.N; i += 4 {
		p.hash[i], p.hash[i+1], p.hash[i+2], p.hash[i+3] = rowDigest4(b, i)
	}
	for ; i < b.N; i++ {
		p.hash[i] = rowDigest(b, i)
	}
}

// key orders rows within a class: a keyed hash of the global row index.
func (r *run) key(row int64) uint64 {
	return mix64(uint64(row) ^ mix64(r.opts.Seed^0x5bd1e9955bd1e995))
}

func (r *run) bucketOf(row int64) int {
	if r.nbits == 0 {
		return 0
	}
	return int(r.key(row) >> (64 - r.nbits))
}

func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// encodeHead appends the start of row i of b's encoding: its global row,
// label and dense values.
func encodeHead(dst []byte, b *dataset.Batch, i int, row int64) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint64(dst, uint64(row))
	dst = le.AppendUint32(dst, math.Float32bits(b.Label[i]))
	nd := len(b.Dense) / max(b.N, 1)
	for _, v := range b.Dense[i*nd : (i+1)*nd] {
		dst = le.AppendUint32(dst, math.Float32bits(v))
	}
	return dst
}

// encodeRow appends row i of b: global row, label, dense, then per sparse
// feature the IDs (multi-hot: a count first), as 4 bytes each when narrow
// (every ID then fits) and 8 otherwise.
func encodeRow(dst []byte, b *dataset.Batch, i int, row int64, narrow bool) []byte {
	le := binary.LittleEndian
	dst = encodeHead(dst, b, i, row)
	for f := range b.Sparse {
		c := &b.Sparse[f]
		var ids []int64
		if c.Offsets == nil {
			ids = c.IDs[i : i+1]
		} else {
			ids = c.Row(i)
			dst = le.AppendUint32(dst, uint32(len(ids)))
		}
		for _, id := range ids {
			if narrow {
				dst = le.AppendUint32(dst, uint32(id))
			} else {
				dst = le.AppendUint64(dst, uint64(id))
			}
		}
	}
	return dst
}

// encodeHot appends hot row i of b like encodeRow, but with the 32-bit
// slots of its IDs (from tag) in their place.
func (p *partitioner) encodeHot(dst []byte, b *dataset.Batch, i int, row int64) []byte {
	le := binary.LittleEndian
	dst = encodeHead(dst, b, i, row)
	for f := range b.Sparse {
		c := &b.Sparse[f]
		if c.Offsets == nil {
			dst = le.AppendUint32(dst, uint32(p.slots[f][i]))
			continue
		}
		lo, hi := c.Offsets[i], c.Offsets[i+1]
		dst = le.AppendUint32(dst, uint32(hi-lo))
		for _, s := range p.slots[f][lo:hi] {
			dst = le.AppendUint32(dst, uint32(s))
		}
	}
	return dst
}

// decoded is one row of a bucket: its sort key and where its encoding is.
type decoded struct {
	key   uint64
	chunk int32 // the bucket chunk holding the row
	off   int   // offset of the row's encoding in the chunk
}

// bundle sorts each bucket of class c and writes its mini-batches.
func (r *run) bundle(ctx context.Context, c layout.Class) ([]layout.PartFile, error) {
	spec := layout.RowSpec(r.spec)
	if c == layout.Hot {
		spec = layout.HotSpec(&spec, r.hot.Rows())
	}
	enc := r.encoding(c)
	ids := dataset.SlotInt64 // the files' IDs as wide as the buckets'
	if enc.idBytes == 4 {
		ids = dataset.SlotInt32
	}
	bw := &batchWriter{
		r: r, spec: &spec, class: c, ids: ids, rowEnc: enc, dir: filepath.Join(r.dir, c.String()),
		cur: newBatch(r.spec, r.opts.BatchSize),
	}
	var rows, sortTmp []decoded
	var sortCounts []int32
	// A row's lines to prefetch: its fixed size, or two for multi-hot rows,
	// plus one, as a row may start mid-line.
	lines := max((enc.fixed+63)/64+1, 2)
	for _, bf := range r.buckets[c] {
		if err := ctx.Err(); err != nil {
			bw.abort()
			return nil, err
		}
		chunks := bf.chunks
		bf.chunks = nil // freed as soon as the bucket is written
		if !r.inMem {
			raw, err := os.ReadFile(bf.path)
			if err != nil {
				bw.abort()
				return nil, fmt.Errorf("classify: %w", err)
			}
			os.Remove(bf.path)
			chunks = [][]byte{raw}
		}
		rows = rows[:0]
		for k, raw := range chunks {
			rows = r.index(rows, enc, raw, k)
		}
		// Keys are distinct (a bijection of the row index), so this order
		// is total: the same rows give the same order, however they were
		// spread over chunks.
		rows, sortTmp = sortByKey(rows, r.nbits, sortTmp, &sortCounts)
		// The rows lie at random in the bucket, which was written long
		// before: each would wait on memory for its cache lines. Asking
		// for those of the row prefetchAhead places on overlaps the waits.
		for i, d := range rows {
			if j := i + prefetchAhead; j < len(rows) {
				p := rows[j]
				prefetch.Lines(unsafe.Pointer(&chunks[p.chunk][p.off]), lines)
			}
			if err := bw.add(chunks[d.chunk][d.off:]); err != nil {
				bw.abort()
				return nil, err
			}
		}
		r.progress(int64(len(rows)))
	}
	return bw.close()
}

// maxPartWriters bounds the part files of one class written at once. Each
// holds up to a part of decoded mini-batches (FileBatches of them, about
// 65,536 rows: 17 MB of kaggle rows), and both classes are bundled at
// once, so the batches in flight stay under 2·maxPartWriters parts
// whatever the number of cores. Three keep up with a bundle loop: on
// kaggle rows a part's writer (Snappy and the write calls) takes about
// 2.8 times the loop's time for the same batches.
const maxPartWriters = 3

// prefetchAhead is how many rows ahead bundle asks for a row's cache lines.
const prefetchAhead = 16

// sortByKey sorts rows by key and returns them, with the other of the two
// buffers (rows and tmp) to pass again. The rows are one bucket's: their keys
// share the top skip bits and are uniform below them (mix64 of the row
// index), so a counting pass on the next bits spreads them over about
// len(rows)/4 runs in key order, and each run is sorted on its own. That is
// linear where a comparison sort of the bucket took 0.35 s of classify's
// single-threaded bundle loop on 4.5M rows. counts is scratch kept between
// calls. The order is the same as a comparison sort's: the keys are distinct.
func sortByKey(rows []decoded, skip uint, tmp []decoded, counts *[]int32) ([]decoded, []decoded) {
	n := len(rows)
	byKey := func(a, b decoded) int { return cmp.Compare(a.key, b.key) }
	if n < 256 || skip >= 48 {
		slices.SortFunc(rows, byKey)
		return rows, tmp
	}
	b := uint(min(bits.Len(uint(n))-2, 20)) // about 2 to 4 rows a run
	cnt := slices.Grow((*counts)[:0], 1<<b+1)[:1<<b+1]
	clear(cnt)
	*counts = cnt
	run := func(k uint64) uint64 { return k << skip >> (64 - b) }
	for i := range rows {
		cnt[run(rows[i].key)+1]++
	}
	for i := 1; i < len(cnt); i++ {
		cnt[i] += cnt[i-1]
	}
	tmp = slices.Grow(tmp[:0], n)[:n]
	next := cnt[:1<<b] // next[j]: where run j's next row goes; it ends as run j+1's start
	for _, d := range rows {
		j := run(d.key)
		tmp[next[j]] = d
		next[j]++
	}
	lo := 0
	for _, hi32 := range next {
		hi := int(hi32)
		switch s := tmp[lo:hi]; {
		case len(s) > 32: // skewed keys: sorted all the same
			slices.SortFunc(s, byKey)
		default:
			for i := 1; i < len(s); i++ {
				for j := i; j > 0 && s[j].key < s[j-1].key; j-- {
					s[j], s[j-1] = s[j-1], s[j]
				}
			}
		}
		lo = hi
	}
	return tmp, rows
}

// rowEncoding is how the rows of one class lie in its buckets (encodeRow,
// encodeHot): a head of the global row, label and dense values, then each
// feature's IDs, as 4-byte slots in hot rows and 8-byte IDs in cold ones,
// a multi-hot feature's preceded by their count.
type rowEncoding struct {
	spec          *dataset.Spec
	head, idBytes int
	fixed         int // bytes of every row when no feature is multi-hot, else 0
}

func (r *run) encoding(c layout.Class) rowEncoding {
	e := rowEncoding{spec: r.spec, head: 12 + 4*len(r.spec.Dense), idBytes: 8}
	if c == layout.Hot || r.narrow {
		e.idBytes = 4
	}
	e.fixed = e.head + len(r.spec.Sparse)*e.idBytes
	for _, f := range r.spec.Sparse {
		if f.MultiHot {
			e.fixed = 0
		}
	}
	return e
}

// size returns the bytes of the row raw starts with.
func (e rowEncoding) size(raw []byte) int {
	if e.fixed > 0 {
		return e.fixed
	}
	p := e.head
	for _, f := range e.spec.Sparse {
		if f.MultiHot {
			p += 4 + e.idBytes*int(binary.LittleEndian.Uint32(raw[p:]))
		} else {
			p += e.idBytes
		}
	}
	return p
}

// index appends the rows of chunk k of a bucket encoded as e to out.
func (r *run) index(out []decoded, e rowEncoding, raw []byte, k int) []decoded {
	for off := 0; off < len(raw); off += e.size(raw[off:]) {
		row := int64(binary.LittleEndian.Uint64(raw[off:]))
		out = append(out, decoded{key: r.key(row), chunk: int32(k), off: off})
	}
	return out
}

// batchWriter assembles mini-batches of one class and writes them, one row
// group each, in part files of FileBatches batches. With more than one
// worker, part files are encoded concurrently, each by its own goroutine
// (at most Workers, and maxPartWriters, at a time) fed in batch order, so
// the bytes of every file are the same whatever the number of workers.
type batchWriter struct {
	r      *run
	spec   *dataset.Spec
	class  layout.Class
	ids    dataset.SlotType
	dir    string
	cur    *dataset.Batch
	rowEnc rowEncoding   // how the class's rows lie in its buckets
	part   *partWriter   // the part being filled
	parts  []*partWriter // every part started, in order
	sem    chan struct{} // a slot per concurrent part writer
	free   sync.Pool     // written batches, emptied, to fill again
}

// batch returns an empty batch to fill, a written one when there is one.
func (bw *batchWriter) batch() *dataset.Batch {
	if b, ok := bw.free.Get().(*dataset.Batch); ok {
		return b
	}
	return newBatch(bw.r.spec, bw.r.opts.BatchSize)
}

// recycle empties a written batch and keeps it for batch.
func (bw *batchWriter) recycle(b *dataset.Batch) {
	b.N, b.Label, b.Dense = 0, b.Label[:0], b.Dense[:0]
	for i := range b.Sparse {
		c := &b.Sparse[i]
		c.IDs = c.IDs[:0]
		if c.Offsets != nil {
			c.Offsets = c.Offsets[:1]
		}
	}
	bw.free.Put(b)
}

// partWriter writes one part file from the batches sent on ch (or, with
// one worker, on the caller's goroutine).
type partWriter struct {
	bw      *batchWriter
	ch      chan *dataset.Batch
	done    chan struct{}
	w       *dataset.Writer
	file    layout.PartFile
	queued  int
	err     error
	aborted atomic.Bool
}

func newBatch(spec *dataset.Spec, n int) *dataset.Batch {
	b := &dataset.Batch{
		Label: make([]float32, 0, n), Dense: make([]float32, 0, n*len(spec.Dense)),
		Sparse: make([]dataset.SparseColumn, len(spec.Sparse)),
	}
	for i, f := range spec.Sparse {
		b.Sparse[i].IDs = make([]int64, 0, n)
		if f.MultiHot {
			b.Sparse[i].Offsets = []int32{0}
		}
	}
	return b
}

func (bw *batchWriter) add(enc []byte) error {
	r := bw.r
	le := binary.LittleEndian
	b := bw.cur
	if e := bw.rowEnc; e.fixed > 0 && e.idBytes == 4 {
		// Every feature one 4-byte ID: the row's values go straight to
		// their places (the batch's slices have room for a whole batch).
		i, nd := b.N, len(r.spec.Dense)
		enc = enc[8 : 12+4*nd+4*len(b.Sparse)]
		b.Label = append(b.Label, math.Float32frombits(le.Uint32(enc)))
		b.Dense = slices.Grow(b.Dense, nd)
		dense := b.Dense[len(b.Dense) : len(b.Dense)+nd]
		for d := range dense {
			dense[d] = math.Float32frombits(le.Uint32(enc[4+4*d:]))
		}
		b.Dense = b.Dense[:len(b.Dense)+nd]
		ids := enc[4+4*nd:]
		for f := range b.Sparse {
			c := &b.Sparse[f]
			c.IDs = append(c.IDs, int64(int32(le.Uint32(ids[4*f:]))))
		}
		b.N = i + 1
		if b.N == r.opts.BatchSize {
			return bw.emit()
		}
		return nil
	}
	p := 8
	b.Label = append(b.Label, math.Float32frombits(le.Uint32(enc[p:])))
	p += 4
	for range r.spec.Dense {
		b.Dense = append(b.Dense, math.Float32frombits(le.Uint32(enc[p:])))
		p += 4
	}
	for f, feat := range r.spec.Sparse {
		n := 1
		if feat.MultiHot {
			n = int(le.Uint32(enc[p:]))
			p += 4
		}
		if bw.rowEnc.idBytes == 4 { // slots, from partition, or narrow IDs
			for j := 0; j < n; j++ {
				b.Sparse[f].IDs = append(b.Sparse[f].IDs, int64(int32(le.Uint32(enc[p:]))))
				p += 4
			}
		} else {
			for j := 0; j < n; j++ {
				b.Sparse[f].IDs = append(b.Sparse[f].IDs, int64(le.Uint64(enc[p:])))
				p += 8
			}
		}
		if feat.MultiHot {
			b.Sparse[f].Offsets = append(b.Sparse[f].Offsets, int32(len(b.Sparse[f].IDs)))
		}
	}
	b.N++
	if b.N == r.opts.BatchSize {
		return bw.emit()
	}
	return nil
}

func (bw *batchWriter) concurrent() bool { return bw.r.opts.Workers > 1 }

func (bw *batchWriter) emit() error {
	b := bw.cur
	if b.N == 0 {
		return nil
	}
	if bw.part == nil {
		if err := bw.startPart(); err != nil {
			return err
		}
	}
	pw := bw.part
	pw.queued++
	if bw.concurrent() {
		pw.ch <- b
	} else if err := pw.write(b); err != nil {
		return err
	}
	bw.cur = bw.batch()
	if pw.queued == bw.r.opts.FileBatches {
		return bw.endPart()
	}
	return nil
}

// startPart begins the next part file, waiting for a free writer slot.
func (bw *batchWriter) startPart() error {
	for _, p := range bw.parts {
		if p.failed() {
			return p.err
		}
	}
	name := fmt.Sprintf("part-%05d.parquet", len(bw.parts))
	pw := &partWriter{bw: bw, file: layout.PartFile{Name: bw.class.String() + "/" + name}, done: make(chan struct{})}
	w, err := dataset.NewWriter(filepath.Join(bw.dir, name), bw.spec, dataset.WriterOptions{RowGroupRows: bw.r.opts.BatchSize, IDs: bw.ids})
	if err != nil {
		return err
	}
	pw.w = w
	bw.part, bw.parts = pw, append(bw.parts, pw)
	if !bw.concurrent() {
		close(pw.done)
		return nil
	}
	if bw.sem == nil {
		bw.sem = make(chan struct{}, min(bw.r.opts.Workers, maxPartWriters))
	}
	bw.sem <- struct{}{}
	// Room for the whole part: the bundle loop hands a part all its
	// batches and goes on to the next part while the writers encode.
	// With room for four, it waited on each part's writer until that part
	// was nearly written, so one writer ran at a time: the bundle phase of
	// an all-hot kaggle classify kept 1.24 of two cores busy.
	pw.ch = make(chan *dataset.Batch, bw.r.opts.FileBatches)
	go func() {
		defer func() { <-bw.sem; close(pw.done) }()
		for b := range pw.ch {
			if pw.err == nil && !pw.aborted.Load() {
				pw.err = pw.write(b)
			}
		}
		pw.finish()
	}()
	return nil
}

// endPart hands the current part its last batch; with one worker it closes
// the file at once.
func (bw *batchWriter) endPart() error {
	pw := bw.part
	if pw == nil {
		return nil
	}
	bw.part = nil
	if bw.concurrent() {
		close(pw.ch)
		return nil
	}
	if pw.finish(); pw.err != nil {
		return pw.err
	}
	return nil
}

func (pw *partWriter) write(b *dataset.Batch) error {
	if err := pw.w.WriteBatch(b); err != nil {
		return err
	}
	if err := pw.w.EndRowGroup(); err != nil {
		return err
	}
	pw.file.Batches++
	pw.file.Rows += int64(b.N)
	pw.bw.recycle(b)
	return nil
}

// finish closes the file, or removes it after an error or an abort.
func (pw *partWriter) finish() {
	if pw.w == nil {
		return
	}
	if pw.err != nil || pw.aborted.Load() {
		pw.w.Abort()
	} else {
		pw.err = pw.w.Close()
	}
	pw.w = nil
}

// failed reports, without waiting, whether a finished part failed.
func (pw *partWriter) failed() bool {
	select {
	case <-pw.done:
		return pw.err != nil
	default:
		return false
	}
}

// close writes the last, partial batch, waits for every part and returns
// the files in order.
func (bw *batchWriter) close() ([]layout.PartFile, error) {
	err := bw.emit()
	if err == nil {
		err = bw.endPart()
	}
	if err != nil {
		bw.abort()
		return nil, err
	}
	var files []layout.PartFile
	for _, p := range bw.parts {
		<-p.done
		if p.err != nil && err == nil {
			err = p.err
		}
		files = append(files, p.file)
	}
	if err != nil {
		return nil, err
	}
	return files, nil
}

// abort stops every part writer and removes their files.
func (bw *batchWriter) abort() {
	for _, p := range bw.parts {
		p.aborted.Store(true)
	}
	if p := bw.part; p != nil {
		bw.part = nil
		if bw.concurrent() {
			close(p.ch)
		}
	}
	for _, p := range bw.parts {
		<-p.done
		p.finish()
	}
}

// copyTest copies the test split's Parquet files unchanged.
func copyTest(ctx context.Context, src, dst string) error {
	files, err := dataset.ListParquet(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("classify: %w", err)
	}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := fmt.Sprintf("part-%05d.parquet", i)
		if err := os.Link(f, filepath.Join(dst, name)); err == nil {
			continue
		}
		if err := copyFile(f, filepath.Join(dst, name)); err != nil {
			return fmt.Errorf("classify: copy test split: %w", err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Digest is an order-independent digest of a multiset of rows: the count and
// the wrapping sum and xor of per-row 64-bit hashes.
type Digest struct {
	N        int64
	Sum, Xor uint64
}

// Add adds one row hash.
func (d *Digest) Add(h uint64) { d.N++; d.Sum += h; d.Xor ^= bits.RotateLeft64(h, 17) }

// Merge adds another digest.
func (d *Digest) Merge(o Digest) { d.N += o.N; d.Sum += o.Sum; d.Xor ^= o.Xor }

func (d Digest) String() string { return fmt.Sprintf("%d:%016x:%016x", d.N, d.Sum, d.Xor) }

// rowDigest4 is rowDigest of rows i..i+3 of a batch without multi-hot
// features: the four hash chains are independent, so they run side by
// side instead of one after another.
func rowDigest4(b *dataset.Batch, i int) (uint64, uint64, uint64, uint64) {
	h0, h1, h2, h3 := uint64(0xcbf29ce484222325), uint64(0xcbf29ce484222325), uint64(0xcbf29ce484222325), uint64(0xcbf29ce484222325)
	step := func(v0, v1, v2, v3 uint64) {
		h0, h1, h2, h3 = mix64(h0^v0), mix64(h1^v1), mix64(h2^v2), mix64(h3^v3)
	}
	l := b.Label[i : i+4]
	step(uint64(math.Float32bits(l[0])), uint64(math.Float32bits(l[1])), uint64(math.Float32bits(l[2])), uint64(math.Float32bits(l[3])))
	nd := len(b.Dense) / max(b.N, 1)
	d0, d1, d2, d3 := b.Dense[i*nd:(i+1)*nd], b.Dense[(i+1)*nd:(i+2)*nd], b.Dense[(i+2)*nd:(i+3)*nd], b.Dense[(i+3)*nd:(i+4)*nd]
	for k := range d0 {
		step(uint64(math.Float32bits(d0[k])), uint64(math.Float32bits(d1[k])), uint64(math.Float32bits(d2[k])), uint64(math.Float32bits(d3[k])))
	}
	for f := range b.Sparse {
		n := 1 | uint64(f)<<32
		step(n, n, n, n)
		ids := b.Sparse[f].IDs[i : i+4]
		step(uint64(ids[0]), uint64(ids[1]), uint64(ids[2]), uint64(ids[3]))
	}
	return h0, h1, h2, h3
}

// rowDigest hashes row i of b: label, dense values and each feature's IDs.
func rowDigest(b *dataset.Batch, i int) uint64 {
	h := uint64(0xcbf29ce484222325)
	step := func(v uint64) { h = mix64(h ^ v) }
	step(uint64(math.Float32bits(b.Label[i])))
	nd := len(b.Dense) / max(b.N, 1)
	for _, v := range b.Dense[i*nd : (i+1)*nd] {
		step(uint64(math.Float32bits(v)))
	}
	for f := range b.Sparse {
		ids := b.Sparse[f].Row(i)
		step(uint64(len(ids)) | uint64(f)<<32)
		for _, id := range ids {
			step(uint64(id))
		}
	}
	return h
}
