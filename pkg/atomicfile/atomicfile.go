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
func Write(path string, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Chmod(Mode); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// WriteBytes writes data to path as Write does.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(data))
		return err
	})
}
