// Package atomicfile writes files and directories so that a crash or an
// error never leaves an output at the target path that looks complete: the
// content goes to a temporary file in the same directory (Write), or a whole
// directory's files to a temporary directory beside it (StageDir), which is
// synced and renamed to the target only when everything was written.
package atomicfile

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
)

// Mode is the permission of the files written: os.CreateTemp makes its
// files private (0600), which would hide a run's outputs from other users.
const Mode os.FileMode = 0o644

// Write creates path's directory if needed, calls fill with a writer to a
// temporary file beside path, then syncs and renames it to path (with
// permission Mode). When fill or any step fails, the temporary file is
// removed and path is untouched.
func Write(path string, fill func(io.Writer) error) error {
	p, err := Prepare(path, fill)
	if err != nil {
		return err
	}
	return p.Commit()
}

// Pending is a file written and synced beside its target, not yet in
// place: Commit renames it to the target, Abort removes it.
type Pending struct {
	tmp, path string
}

// Prepare does what Write does up to the rename: the content is complete
// and synced in a temporary file beside path, and path is untouched until
// Commit. A caller that writes a file while it computes another that must
// agree with it commits the first only when the second succeeded.
func Prepare(path string, fill func(io.Writer) error) (p *Pending, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := fill(&writeback{f: f}); err != nil {
		return nil, err
	}
	if err := f.Chmod(Mode); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return &Pending{tmp: f.Name(), path: path}, nil
}

// Commit renames the file to its target and syncs the directory, so that
// the new name is on the disk when Commit returns.
func (p *Pending) Commit() error {
	if err := os.Rename(p.tmp, p.path); err != nil {
		os.Remove(p.tmp)
		return err
	}
	return syncPath(filepath.Dir(p.path))
}

// Abort removes the file; the target is untouched.
func (p *Pending) Abort() { os.Remove(p.tmp) }

// WriteBytes writes data to path as Write does.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(data))
		return err
	})
}

// writebackEvery is how many bytes written start their writeback to disk.
const writebackEvery = 1 << 20

// writeback writes to f and starts the writeback of every writebackEvery
// bytes as they are written, so that the disk writes a large file while
// the rest of it is produced, instead of all of it in the sync.
type writeback struct {
	f       *os.File
	n, done int64 // bytes written, and those whose writeback was started
}

func (w *writeback) Write(p []byte) (int, error) {
	k, err := w.f.Write(p)
	w.n += int64(k)
	if w.n-w.done >= writebackEvery {
		StartWriteback(w.f, w.done, w.n-w.done)
		w.done = w.n
	}
	return k, err
}
