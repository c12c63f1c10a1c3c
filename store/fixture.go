package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Fixtures: a run copied into a repository, which CI replays against the
// definition (workflowtest.Replay). A fixture holds what a replay reads:
// run.json, state.json, the history, the reports, the effects' journals,
// the prompt files (a step compares a hand-out's prompt file with what it
// wrote), the block records and kept files, and the run's own files. It
// leaves out what only a live run uses: the lock, the hash cache (derived
// data a replay makes again), drive's round and the evidence of its
// launches, and the temporary files a crash left.

// notInFixture says whether rel, a path in the run, is left out of a
// fixture.
func notInFixture(rel string) bool {
	switch rel {
	case StateDir + "/lock", StateDir + "/hashes", StateDir + "/round.json":
		return true
	}
	parts := strings.Split(rel, "/")
	if parts[0] != StateDir {
		return false
	}
	last := parts[len(parts)-1]
	if strings.HasPrefix(last, ".") && strings.Contains(last, ".tmp-") {
		return true
	}
	// .custodian/jobs/<job>/launch-<n>/
	return len(parts) >= 4 && parts[1] == "jobs" && strings.HasPrefix(parts[3], "launch-")
}

// CopyTo copies the run into dir, which must not exist, as a fixture (see
// above). Files are read through the confined tree: a link, a pipe or any
// other file that is neither a regular file nor a directory is left out,
// and named in skipped. Take the run's lock first, so that the copy is of
// one committed state.
func (r *Run) CopyTo(dir string) (skipped []string, err error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("copy run %s: %w", r.Dir, err)
	}
	dst, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("copy run %s: %w", r.Dir, err)
	}
	defer dst.Close()
	c := copier{tree: r.tree, dst: dst}
	if err := c.dir("."); err != nil {
		return nil, fmt.Errorf("copy run %s to %s: %w", r.Dir, dir, err)
	}
	return c.skipped, nil
}

// copier copies a run's tree into dst.
type copier struct {
	tree    *tree
	dst     *os.Root
	skipped []string
}

func (c *copier) dir(rel string) error {
	names, err := c.tree.names(rel)
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		child := path.Join(rel, name)
		if notInFixture(child) {
			continue
		}
		info, err := c.tree.lstat(child)
		if err != nil {
			return err
		}
		switch info.Kind {
		case Directory:
			if err := c.dst.Mkdir(child, 0o755); err != nil {
				return err
			}
			if err := c.dir(child); err != nil {
				return err
			}
		case Regular:
			if err := c.file(child); err != nil {
				return err
			}
		case Missing:
			// Gone since the listing: a worker removed it.
		default:
			c.skipped = append(c.skipped, child+" ("+info.Kind.String()+")")
		}
	}
	return nil
}

func (c *copier) file(rel string) error {
	fd, info, err := c.tree.openRegular(rel)
	if err != nil {
		return err
	}
	if fd < 0 {
		// Replaced by something else since it was looked at.
		if info.Kind != Missing {
			c.skipped = append(c.skipped, rel+" ("+info.Kind.String()+")")
		}
		return nil
	}
	src := os.NewFile(uintptr(fd), rel)
	defer src.Close()
	out, err := c.dst.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, src)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "copy", Path: rel, Err: err}
	}
	return nil
}

// IsFixture says whether the run holds none of what a fixture leaves out
// that a command leaves in a live run: no lock file (every command that
// writes takes the lock, which makes it) and no evidence of drive's
// launches. Replacing such a run by a copy of itself loses nothing.
func (r *Run) IsFixture() (bool, error) {
	for _, rel := range []string{statePath("lock"), statePath("round.json")} {
		info, err := r.tree.lstat(rel)
		if err != nil {
			return false, err
		}
		if info.Kind != Missing {
			return false, nil
		}
	}
	jobs, err := r.tree.names(statePath("jobs"))
	if err != nil {
		return false, err
	}
	for _, job := range jobs {
		names, err := r.tree.names(statePath("jobs", job))
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "launch-") }) {
			return false, nil
		}
	}
	return true, nil
}

// TrimToFixture removes from the run what a fixture leaves out that a
// command made in it: the lock and the hash cache. It is for a copy made by
// CopyTo that was then stepped, which nothing else holds; never for a live
// run.
func (r *Run) TrimToFixture() error {
	dfd, err := r.tree.dirFD(StateDir, false)
	if err != nil {
		return r.stateDirError(err)
	}
	for _, name := range []string{"lock", "hashes"} {
		if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return &IOError{Op: "remove", Path: r.abs(statePath(name)), Err: err}
		}
	}
	return nil
}

// ErrNotFixture is what ReplaceFixture returns for a directory that holds
// something other than a run: it is never replaced.
var ErrNotFixture = errors.New("it holds files and no run")

// ReplaceFixture makes a fixture at dir: write writes it into a directory of
// its own beside dir, which then takes dir's place. dir may be missing (with
// its parents),
// empty, or hold a run (a fixture recorded before, or the run itself); a
// directory that holds anything else is refused with ErrNotFixture, never
// replaced. The old one is removed only once the new one is in place, and
// whatever write left is removed when it fails.
func ReplaceFixture(dir string, write func(tmp string) error) error {
	dir = filepath.Clean(dir)
	entries, err := os.ReadDir(dir)
	exists := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("record a fixture in %s: %w", dir, err)
	case len(entries) > 0:
		if _, err := os.Lstat(filepath.Join(dir, StateDir, "run.json")); err != nil {
			return fmt.Errorf("record a fixture in %s: %w", dir, ErrNotFixture)
		}
	}
	if !exists {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return fmt.Errorf("record a fixture in %s: %w", dir, err)
		}
	}
	tmp := dir + ".recording-" + randomSuffix()
	if err := write(tmp); err != nil {
		return errors.Join(err, os.RemoveAll(tmp))
	}
	if !exists {
		return os.Rename(tmp, dir)
	}
	old := dir + ".replaced-" + randomSuffix()
	if err := os.Rename(dir, old); err != nil {
		return errors.Join(fmt.Errorf("record a fixture in %s: %w", dir, err), os.RemoveAll(tmp))
	}
	if err := os.Rename(tmp, dir); err != nil {
		return errors.Join(fmt.Errorf("record a fixture in %s: %w", dir, err), os.Rename(old, dir))
	}
	return os.RemoveAll(old)
}
