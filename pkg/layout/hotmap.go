package layout

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"

	"github.com/picasso-ctr/picasso/pkg/atomicfile"
)

const hotmapMagic = "PCSOHOT1"

// WriteHotmap stores each table's hot IDs in slot order: magic, table count,
// per table (rows, hot count, IDs), then a CRC-32 of everything before it.
// rows holds each table's row count. The file is written through a
// temporary name.
func WriteHotmap(path string, h *HotSet, rows []int64) error {
	if len(rows) != h.Tables() {
		return fmt.Errorf("layout: hotmap %s: %d row counts for %d tables", path, len(rows), h.Tables())
	}
	var buf bytes.Buffer
	buf.WriteString(hotmapMagic)
	le := binary.LittleEndian
	buf.Write(le.AppendUint32(nil, uint32(h.Tables())))
	for t := 0; t < h.Tables(); t++ {
		buf.Write(le.AppendUint64(nil, uint64(rows[t])))
		ids := h.IDs(t)
		buf.Write(le.AppendUint64(nil, uint64(len(ids))))
		b := make([]byte, 8*len(ids))
		for i, id := range ids {
			le.PutUint64(b[8*i:], uint64(id))
		}
		buf.Write(b)
	}
	buf.Write(le.AppendUint32(nil, crc32.ChecksumIEEE(buf.Bytes())))
	return atomicfile.WriteBytes(path, buf.Bytes())
}

// ReadHotmap reads a hotmap file into a HotSet.
func ReadHotmap(path string) (*HotSet, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("layout: %v (an incomplete layout): %w", err, ErrInvalid)
	}
	if err != nil {
		return nil, fmt.Errorf("layout: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("layout: %s: %w", path, err)
	}
	bad := func(msg string) error { return fmt.Errorf("layout: %s: %s: %w", path, msg, ErrInvalid) }
	if len(raw) < len(hotmapMagic)+8 || string(raw[:len(hotmapMagic)]) != hotmapMagic {
		return nil, bad("not a hotmap file")
	}
	le := binary.LittleEndian
	body, sum := raw[:len(raw)-4], le.Uint32(raw[len(raw)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, bad("checksum mismatch (corrupted or truncated)")
	}
	p := body[len(hotmapMagic):]
	nt := int(le.Uint32(p))
	p = p[4:]
	hot := make([][]int64, nt)
	rows := make([]int64, nt)
	for t := 0; t < nt; t++ {
		if len(p) < 16 {
			return nil, bad("truncated")
		}
		rows[t] = int64(le.Uint64(p))
		n := int(le.Uint64(p[8:]))
		p = p[16:]
		if n < 0 || len(p) < 8*n {
			return nil, bad("truncated")
		}
		hot[t] = make([]int64, n)
		for i := range hot[t] {
			hot[t][i] = int64(le.Uint64(p[8*i:]))
		}
		p = p[8*n:]
	}
	return NewHotSet(hot, rows)
}
