package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fillStage writes a file and a file in a subdirectory into s, as the
// commands do.
func fillStage(t *testing.T, s *Stage, content string) {
	t.Helper()
	if err := WriteBytes(filepath.Join(s.Dir(), "part", "f.bin"), []byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), "manifest"), []byte(content), Mode); err != nil {
		t.Fatal(err)
	}
}

// names returns the entries of dir, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// checkMode fails unless dir is a directory with permission DirMode.
func checkMode(t *testing.T, dir string) {
	t.Helper()
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !st.IsDir() || st.Mode().Perm() != DirMode {
		t.Errorf("mode of %s = %v; want a directory with permission %v", dir, st.Mode(), DirMode)
	}
}

// checkDir fails unless final's file part/f.bin holds want.
func checkDir(t *testing.T, final, want string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(final, "part", "f.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s/part/f.bin holds %q; want %q", final, got, want)
	}
}

func TestStageDirNameAndMode(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "new", "parent")
	s, err := StageDir(filepath.Join(parent, "fae"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	if got := filepath.Dir(s.Dir()); got != parent {
		t.Errorf("stage directory in %s; want it beside the final path, in %s", got, parent)
	}
	if base := filepath.Base(s.Dir()); !strings.HasPrefix(base, ".fae.tmp-") {
		t.Errorf("stage directory named %q; want the prefix %q", base, ".fae.tmp-")
	}
	checkMode(t, s.Dir())
	if _, err := os.Lstat(s.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after StageDir, Lstat(%s) = %v; want nothing at the final path", s.Path(), err)
	}
}

func TestStageCommit(t *testing.T) {
	parent := t.TempDir()
	final := filepath.Join(parent, "train")
	s, err := StageDir(final)
	if err != nil {
		t.Fatal(err)
	}
	fillStage(t, s, "new")
	if err := s.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	checkMode(t, final)
	checkDir(t, final, "new")
	if err := s.Abort(); err != nil {
		t.Errorf("Abort after Commit = %v; want nil", err)
	}
	checkDir(t, final, "new")
	if got := names(t, parent); !slices.Equal(got, []string{"train"}) {
		t.Errorf("after Commit the parent holds %q; want only %q", got, "train")
	}
	if err := s.Commit(); err == nil {
		t.Error("second Commit = nil; want an error")
	}
}

// TestStageAbort checks that a stage given up, as on an error or a
// cancellation, leaves nothing behind.
func TestStageAbort(t *testing.T) {
	for _, existing := range []bool{false, true} {
		parent := t.TempDir()
		final := filepath.Join(parent, "out")
		if existing {
			if err := WriteBytes(filepath.Join(final, "part", "f.bin"), []byte("old")); err != nil {
				t.Fatal(err)
			}
		}
		s, err := StageDir(final)
		if err != nil {
			t.Fatal(err)
		}
		fillStage(t, s, "half")
		if err := s.Abort(); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		want := []string(nil)
		if existing {
			want = []string{"out"}
			checkDir(t, final, "old")
		}
		if got := names(t, parent); !slices.Equal(got, want) {
			t.Errorf("existing %v: after Abort the parent holds %q; want %q", existing, got, want)
		}
		if err := s.Commit(); err == nil {
			t.Errorf("existing %v: Commit after Abort = nil; want an error", existing)
		}
	}
}

func TestStageCommitRefusesExisting(t *testing.T) {
	parent := t.TempDir()
	final := filepath.Join(parent, "out")
	if err := WriteBytes(filepath.Join(final, "part", "f.bin"), []byte("old")); err != nil {
		t.Fatal(err)
	}
	s, err := StageDir(final)
	if err != nil {
		t.Fatal(err)
	}
	fillStage(t, s, "new")
	if err := s.Commit(); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Commit over an existing directory = %v; want fs.ErrExist", err)
	}
	if err := s.Abort(); err != nil {
		t.Fatal(err)
	}
	checkDir(t, final, "old")
	if got := names(t, parent); !slices.Equal(got, []string{"out"}) {
		t.Errorf("parent holds %q; want only %q", got, "out")
	}
}

func TestStageReplace(t *testing.T) {
	for _, existing := range []bool{false, true} {
		parent := t.TempDir()
		final := filepath.Join(parent, "out")
		if existing {
			if err := WriteBytes(filepath.Join(final, "stale"), []byte("old")); err != nil {
				t.Fatal(err)
			}
		}
		s, err := StageDir(final)
		if err != nil {
			t.Fatal(err)
		}
		fillStage(t, s, "new")
		if err := s.Replace(); err != nil {
			t.Fatalf("existing %v: Replace: %v", existing, err)
		}
		checkMode(t, final)
		checkDir(t, final, "new")
		if got := names(t, final); !slices.Equal(got, []string{"manifest", "part"}) {
			t.Errorf("existing %v: after Replace %s holds %q; want only the staged files", existing, final, got)
		}
		if got := names(t, parent); !slices.Equal(got, []string{"out"}) {
			t.Errorf("existing %v: after Replace the parent holds %q; want only %q", existing, got, "out")
		}
	}
}

// TestStageReplaceFailureKeepsOld makes Replace fail (its stage has gone)
// and checks that the old directory is untouched.
func TestStageReplaceFailureKeepsOld(t *testing.T) {
	parent := t.TempDir()
	final := filepath.Join(parent, "out")
	if err := WriteBytes(filepath.Join(final, "part", "f.bin"), []byte("old")); err != nil {
		t.Fatal(err)
	}
	s, err := StageDir(final)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(s.Dir()); err != nil {
		t.Fatal(err)
	}
	if err := s.Replace(); err == nil {
		t.Fatal("Replace of a vanished stage = nil; want an error")
	}
	if err := s.Abort(); err != nil {
		t.Fatal(err)
	}
	checkDir(t, final, "old")
	if got := names(t, parent); !slices.Equal(got, []string{"out"}) {
		t.Errorf("parent holds %q; want only %q", got, "out")
	}
}

// TestSyncDir syncs a directory's names, and reports a directory that is
// not there.
func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := WriteBytes(filepath.Join(dir, "a"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(dir); err != nil {
		t.Errorf("SyncDir(%s) = %v", dir, err)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("SyncDir of a missing directory = nil; want an error")
	}
}
