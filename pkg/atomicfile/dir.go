package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// DirMode is the permission of a staged directory: os.MkdirTemp makes its
// directories private (0700), which would hide a run's outputs from other
// users.
const DirMode os.FileMode = 0o755

// Stage is a directory that is filled under a temporary name beside its
// final path and moved there only when complete, so that a crash or an
// error never leaves a directory at the final path that looks finished.
//
// The temporary directory is named "."+filepath.Base(final)+".tmp-" plus a
// random suffix, in final's parent: hidden, on the same file system as the
// final path, and recognisable by name if a crash leaves it behind.
//
// A Stage is used by one goroutine: StageDir, then files written under
// Dir, then Commit or Replace; Abort, deferred, removes what is left when
// an error came first.
type Stage struct {
	final string
	dir   string
	done  bool // committed or aborted
}

// StageDir creates final's parent if needed and an empty temporary
// directory (permission DirMode) beside final, to be filled and then moved
// to final. Nothing is created at final itself.
func StageDir(final string) (*Stage, error) {
	final = filepath.Clean(final)
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, DirMode); err != nil {
		return nil, fmt.Errorf("atomicfile: stage %s: %w", final, err)
	}
	dir, err := os.MkdirTemp(parent, "."+filepath.Base(final)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("atomicfile: stage %s: %w", final, err)
	}
	if err := os.Chmod(dir, DirMode); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("atomicfile: stage %s: %w", final, err)
	}
	return &Stage{final: final, dir: dir}, nil
}

// Dir returns the temporary directory to write into.
func (s *Stage) Dir() string { return s.dir }

// Path returns the final path.
func (s *Stage) Path() string { return s.final }

// Commit moves the staged directory to the final path: it syncs every file
// and directory under Dir, renames Dir to the final path and syncs the
// parent directory. When the final path already exists Commit fails with an
// error matching fs.ErrExist and leaves both in place (Abort removes the
// stage).
func (s *Stage) Commit() error {
	if err := s.check(); err != nil {
		return err
	}
	if _, err := os.Lstat(s.final); err == nil {
		return fmt.Errorf("atomicfile: commit %s: %w", s.final, fs.ErrExist)
	}
	if err := syncTree(s.dir); err != nil {
		return fmt.Errorf("atomicfile: commit %s: %w", s.final, err)
	}
	if err := os.Rename(s.dir, s.final); err != nil {
		return fmt.Errorf("atomicfile: commit %s: %w", s.final, err)
	}
	s.done = true
	if err := syncPath(filepath.Dir(s.final)); err != nil {
		return fmt.Errorf("atomicfile: commit %s: %w", s.final, err)
	}
	return nil
}

// Replace is Commit, except that whatever is at the final path is replaced:
// it is renamed aside (to Dir()+".old"), the stage renamed in its place and
// the parent synced, and only then is the old content removed. If the stage
// cannot be renamed, the old content is moved back.
func (s *Stage) Replace() error {
	if err := s.check(); err != nil {
		return err
	}
	if err := syncTree(s.dir); err != nil {
		return fmt.Errorf("atomicfile: replace %s: %w", s.final, err)
	}
	old := s.dir + ".old"
	err := os.Rename(s.final, old)
	if errors.Is(err, fs.ErrNotExist) {
		old = ""
	} else if err != nil {
		return fmt.Errorf("atomicfile: replace %s: %w", s.final, err)
	}
	if err := os.Rename(s.dir, s.final); err != nil {
		if old != "" {
			os.Rename(old, s.final)
		}
		return fmt.Errorf("atomicfile: replace %s: %w", s.final, err)
	}
	s.done = true
	if err := syncPath(filepath.Dir(s.final)); err != nil {
		return fmt.Errorf("atomicfile: replace %s: %w", s.final, err)
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("atomicfile: replace %s: the new directory is in place, but removing the old one: %w", s.final, err)
		}
	}
	return nil
}

// Abort removes the staged directory and everything in it. After Commit or
// Replace succeeded, or a first Abort, it does nothing, so it may be
// deferred right after StageDir.
func (s *Stage) Abort() error {
	if s.done {
		return nil
	}
	s.done = true
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("atomicfile: abort %s: %w", s.final, err)
	}
	return nil
}

func (s *Stage) check() error {
	if s.done {
		return fmt.Errorf("atomicfile: %s was already committed or aborted", s.final)
	}
	return nil
}

// syncTree syncs root and every regular file and directory under it.
func syncTree(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		return syncPath(path)
	})
}

// SyncDir makes the names in dir durable: the renames Commit made there
// reach the disk before anything they replaced is removed.
func SyncDir(dir string) error { return syncPath(dir) }

// syncPath syncs a file's content, or a directory's names.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
