package convert

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/picasso-ctr/picasso/pkg/dataset"
)

// maxLine bounds one line of text input; a longer line is an error
// (it would otherwise make a block, and memory, grow without bound).
const maxLine = 64 << 20

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// openText opens a plain or gzip-compressed file, telling them apart by the
// gzip magic bytes (1f 8b). The counter sees the file's (compressed) bytes.
func openText(path string) (io.Reader, *countingReader, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("convert: %w", err)
	}
	cr := &countingReader{r: f}
	br := bufio.NewReaderSize(cr, 64<<10)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, nil, readError(path, err)
		}
		return zr, cr, f, nil
	}
	return br, cr, f, nil
}

// readError names the file of a read error. A gzip stream cut short or
// corrupt (bad header, bad deflate data, wrong checksum) is bad data.
func readError(path string, err error) error { return readErrorAfter(path, err, 0) }

// readErrorAfter is readError for a failure after lines whole lines were
// read (0: before any), which it says: how much of a cut-short file is
// good.
func readErrorAfter(path string, err error, lines int64) error {
	after := ""
	if lines > 0 {
		after = fmt.Sprintf(" after line %d", lines)
	}
	var corrupt flate.CorruptInputError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("convert: %s: truncated input (gzip stream ends early%s): %w: %w", path, after, err, dataset.ErrBadData)
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.As(err, &corrupt):
		return fmt.Errorf("convert: %s: corrupt gzip input%s: %w: %w", path, after, err, dataset.ErrBadData)
	}
	return fmt.Errorf("convert: %s: read%s: %w", path, after, err)
}

// read cuts files into blocks of whole lines and sends each to work (for a
// parser) and then to order (for the consumer, in input order). A failure
// is sent to order as a job carrying the error. It stops when ctx is done.
func (c *converter) read(ctx context.Context, files []string, free chan *job, work, order chan<- *job) {
	var before int64 // bytes of the files already read
	for _, path := range files {
		n, err := c.readFile(ctx, path, before, free, work, order)
		if err != nil {
			if ctx.Err() == nil {
				c.sendError(ctx, err, free, order)
			}
			return
		}
		before += n
	}
}

func (c *converter) sendError(ctx context.Context, err error, free chan *job, order chan<- *job) {
	select {
	case j := <-free:
		j.err = err
		j.data = j.data[:0]
		j.done <- struct{}{}
		select {
		case order <- j:
		case <-ctx.Done():
		}
	case <-ctx.Done():
	}
}

// readFile sends the blocks of one file and returns its size in bytes.
func (c *converter) readFile(ctx context.Context, path string, before int64, free chan *job, work, order chan<- *job) (int64, error) {
	r, cr, closer, err := openText(path)
	if err != nil {
		return 0, err
	}
	defer closer.Close()

	var lay *layout
	line := int64(1)
	var carry []byte // start of an unfinished line, moved to the next block
	for {
		var j *job
		select {
		case j = <-free:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		buf := append(j.data[:0], carry...)
		if cap(buf) < c.opts.blockBytes {
			buf = append(make([]byte, 0, c.opts.blockBytes), buf...)
		}
		// Fill the buffer; grow it while it holds no line end.
		eof := false
		for {
			for len(buf) < cap(buf) && !eof {
				n, err := r.Read(buf[len(buf):cap(buf)])
				buf = buf[:len(buf)+n]
				if err == io.EOF {
					eof = true
				} else if err != nil {
					j.data = buf
					free <- j
					return 0, readErrorAfter(path, err, line-1+int64(bytes.Count(buf, []byte{'\n'})))
				}
			}
			if eof || bytes.IndexByte(buf[len(carry):], '\n') >= 0 {
				break
			}
			if cap(buf) >= maxLine {
				j.data = buf[:0]
				free <- j
				return 0, &LineError{File: path, Line: line, Msg: fmt.Sprintf("line longer than %d bytes", maxLine)}
			}
			buf = append(make([]byte, 0, 2*cap(buf)), buf...)
		}
		cut := len(buf)
		if !eof {
			cut = bytes.LastIndexByte(buf, '\n') + 1
		}
		carry = append(carry[:0], buf[cut:]...)
		j.data = buf[:cut]
		j.file = path
		j.firstLine = line
		j.offset = before + cr.n
		j.err, j.skipped, j.firstSkip = nil, 0, nil

		if lay == nil && len(j.data) > 0 {
			j.data = bytes.TrimPrefix(j.data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
			first := j.data[:indexByte(j.data, '\n')]
			first = bytes.TrimSuffix(first, []byte{'\r'})
			lay, err = c.f.detect(first)
			if err != nil {
				free <- j
				fe := err.(*fieldError)
				return 0, &LineError{File: path, Line: 1, Field: fe.Field, Name: fe.Name, Msg: fe.Msg}
			}
			if lay.header {
				j.data = j.data[min(indexByte(j.data, '\n')+1, len(j.data)):]
				j.firstLine = 2
			}
		}
		j.lay = lay
		lines := int64(bytes.Count(j.data, []byte{'\n'}))
		if n := len(j.data); n > 0 && j.data[n-1] != '\n' {
			lines++ // last line without a line end
		}
		line = j.firstLine + lines

		if len(j.data) == 0 {
			free <- j // nothing to parse (empty file, or a header alone)
		} else {
			select {
			case work <- j:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
			select {
			case order <- j:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		if eof {
			return cr.n, nil
		}
	}
}
