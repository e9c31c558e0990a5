package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// errLocked marks an output that another picasso process is writing.
var errLocked = errors.New("output in use")

// lockOutput takes an exclusive lock for writing out (a file or a
// directory), held until release is called or the process ends (a killed
// process drops it, so no stale lock survives). The lock file sits beside
// out, named "."+base(out)+".lock", because several commands build out under
// a temporary name and rename it into place. A second process that asks for
// the same out fails at once with errLocked. Leftovers of killed runs
// are removed: out's, and those of the named siblings (files written
// beside out, in its directory).
func lockOutput(cmdName, out string, siblings ...string) (release func(), err error) {
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmdName, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", cmdName, err)
	}
	name := filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+".lock")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: lock %s: %w", cmdName, out, err)
	}
	if err := flockExclusive(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %s is being written by another picasso process (lock %s held); wait for it or choose another --out: %w",
			cmdName, out, name, errLocked)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	// Holding the lock, no other picasso writes out: temporary copies of it
	// are leftovers of a killed run.
	base := "." + globEscape(filepath.Base(abs))
	temps := append([]string{filepath.Join(filepath.Dir(abs), base+".old-*")}, tempsIn(filepath.Dir(abs), append([]string{filepath.Base(abs)}, siblings...)...)...)
	if err := removeTemps(cmdName, temps...); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// tempsIn returns the glob patterns of the temporary files and directories
// that atomic writes of the named entries of dir leave when killed.
func tempsIn(dir string, names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, filepath.Join(dir, "."+globEscape(n)+".tmp-*"))
	}
	return out
}

// globEscape quotes the characters a glob pattern treats as wildcards, so
// that an output named out[1].json matches only its own leftovers (and
// a[b.json is not a malformed pattern).
func globEscape(name string) string {
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// removeTemps removes what the glob patterns match (leftovers of killed
// runs; call it only while holding the output's lock). Only the last
// element of a pattern may hold wildcards; each directory is read once,
// however many of the patterns name it (a profile asked three globs of
// its output's directory at every start).
func removeTemps(cmdName string, patterns ...string) error {
	byDir := map[string][]string{}
	var dirs []string
	for _, p := range patterns {
		dir, base := filepath.Split(p)
		if _, err := filepath.Match(base, ""); err != nil {
			return fmt.Errorf("%s: %w", cmdName, err)
		}
		dir = filepath.Clean(dir)
		if _, ok := byDir[dir]; !ok {
			dirs = append(dirs, dir)
		}
		byDir[dir] = append(byDir[dir], base)
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // as filepath.Glob: nothing to remove that can be found
		}
		for _, e := range entries {
			for _, pat := range byDir[dir] {
				if ok, _ := filepath.Match(pat, e.Name()); !ok {
					continue
				}
				n := filepath.Join(dir, e.Name())
				if err := os.RemoveAll(n); err != nil {
					return fmt.Errorf("%s: remove the leftover %s of a killed run: %w", cmdName, n, err)
				}
				break
			}
		}
	}
	return nil
}

// checkOutNotInput refuses an output path that equals one of the inputs or
// contains one: writing (or --force replacing) it would destroy the input.
// An output inside an input directory (DATA/fae) is fine.
func checkOutNotInput(cmdName, out string, inputs ...string) error {
	o := resolvePath(out)
	for _, in := range inputs {
		if in == "" {
			continue
		}
		i := resolvePath(in)
		if i == o {
			return usageErrorf("%s: --out %s is an input of this command; choose another directory", cmdName, out)
		}
		if strings.HasPrefix(i, o+string(filepath.Separator)) {
			return usageErrorf("%s: --out %s contains the input %s; choose a directory outside it", cmdName, out, in)
		}
	}
	return nil
}

// resolvePath is p made absolute and clean, with symbolic links resolved
// for the longest existing prefix.
func resolvePath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := a; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return a
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
