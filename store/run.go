package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/custodian-run/custodian/internal/names"
	"golang.org/x/sys/unix"
)

// StateDir is the name of a run's state directory. No job may own a path in it.
const StateDir = ".custodian"

// RunFormat is the format of run.json this version reads and writes.
// Format 3 adds the build that started the run (Build); a run.json of
// format 2 is read with none, an unknown build.
const RunFormat = 3

// olderRuns are the formats of run.json read besides RunFormat, with the
// fields each lacks.
var olderRuns = older{2: {reflect.TypeFor[RunRecord](): {"build"}}}

// Build names a build of custodian: the Go build ID of its binary, which
// changes with any change of its code or of the flags it was built with,
// and the VCS revision it was built from, with whether the tree had
// changes, when the go command recorded them. The zero Build is unknown.
type Build struct {
	ID       string `json:"id"`
	Revision string `json:"revision"`
	Modified bool   `json:"modified"`
}

// RunRecord is run.json: what a run is, written once by Create.
type RunRecord struct {
	Format int `json:"format"`
	// ID names the run in its other records, so that a record copied in
	// from another run is told apart.
	ID         string            `json:"id"`
	Definition string            `json:"definition"`
	Params     map[string]string `json:"params"`
	// Patches are the patches the definition declared when the run
	// started: the run takes the branches they guard.
	Patches   []string `json:"patches"`
	StartedAt string   `json:"started_at"`
	Version   string   `json:"version"`
	// Build is the build that started the run.
	Build Build `json:"build"`
}

// Run is an open run directory. It reads and writes the run's records; it
// decides nothing. Close it when done.
type Run struct {
	Dir    string    // the run directory, absolute and clean
	Record RunRecord // run.json as read when the run was opened

	tree *tree
	// held is the lock this Run holds, or nil.
	held *held
}

// held is a taken lock: the state directory's descriptor, locked, the lock
// file's, locked too, and the state directory's identity when it was
// locked.
type held struct {
	dirFD, fileFD int
	dev, ino      uint64
}

// Create starts a run in dir, which may not exist yet: it writes the run's
// first state, st, and then run.json, which makes the directory a run. A
// process that ends in between leaves no run, and Create can run again. It
// refuses a directory that already holds a run.
func Create(dir string, rec RunRecord, st *State) (*Run, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("start run %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, &IOError{Op: "make", Path: abs, Err: err}
	}
	t, err := openTree(abs)
	if err != nil {
		return nil, &IOError{Op: "open", Path: abs, Err: err}
	}
	r := &Run{Dir: abs, tree: t}
	if err := r.create(rec, st); err != nil {
		r.Close()
		return nil, fmt.Errorf("start run %s: %w", abs, err)
	}
	return r, nil
}

func (r *Run) create(rec RunRecord, st *State) error {
	rec.Format = RunFormat
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	rec.ID = hex.EncodeToString(id[:])
	if rec.Params == nil {
		rec.Params = map[string]string{}
	}
	if rec.Patches == nil {
		rec.Patches = []string{}
	}
	if rec.StartedAt == "" {
		rec.StartedAt = Now()
	}
	if err := r.noRunYet(); err != nil {
		return err
	}
	unlock, err := r.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	// Checked again under the lock: two starts of one directory cannot both win.
	if err := r.noRunYet(); err != nil {
		return err
	}
	st.Run = rec.ID
	if err := r.SaveState("state-new", st); err != nil {
		return err
	}
	if err := r.writeRecord("run", statePath("run.json"), rec); err != nil {
		return err
	}
	r.Record = rec
	return nil
}

func (r *Run) noRunYet() error {
	info, err := r.tree.lstat(statePath("run.json"))
	switch {
	case errors.Is(err, ErrLink):
		return &RecordError{Path: r.abs(StateDir), Err: err}
	case err != nil:
		return &IOError{Op: "read", Path: r.abs(statePath("run.json")), Err: err}
	case info.Kind != Missing:
		return ErrExists
	}
	return nil
}

// Open opens the run in dir. It fails with ErrNotRun when dir is not a
// directory holding .custodian/run.json, and with an error wrapping
// ErrUntrusted when run.json cannot be trusted. It writes nothing.
func Open(dir string) (*Run, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", dir, err)
	}
	info, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s has no %s/run.json: %w", abs, StateDir, ErrNotRun)
	case err != nil:
		return nil, &IOError{Op: "open", Path: abs, Err: err}
	case !info.IsDir():
		return nil, fmt.Errorf("%s is a file, not a run directory: %w", abs, ErrNotRun)
	}
	t, err := openTree(abs)
	if err != nil {
		return nil, &IOError{Op: "open", Path: abs, Err: err}
	}
	r := &Run{Dir: abs, tree: t}
	found, err := r.readRecordOf(statePath("run.json"), &r.Record, RunFormat, func() int { return r.Record.Format }, olderRuns)
	r.Record.Format = RunFormat
	if err == nil && !found {
		err = fmt.Errorf("%s has no %s/run.json: %w", abs, StateDir, ErrNotRun)
	}
	if err == nil {
		err = r.Record.check(r.abs(statePath("run.json")))
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// check holds run.json's fields to their rules: it is untrusted input.
func (rec *RunRecord) check(abs string) error {
	switch {
	case !isHex(rec.ID, 32):
		return untrusted(abs, "its id %q is not 32 hex digits", rec.ID)
	case !names.Valid(rec.Definition):
		return untrusted(abs, "its definition %q is not a name", rec.Definition)
	case !validTime(rec.StartedAt):
		return untrusted(abs, "its started_at %q is not a time", rec.StartedAt)
	}
	if err := rec.Build.check(); err != nil {
		return untrusted(abs, "build: %v", err)
	}
	for _, key := range slices.Sorted(maps.Keys(rec.Params)) {
		if !names.Valid(key) {
			return untrusted(abs, "its parameter %q is not a name", key)
		}
	}
	for _, p := range rec.Patches {
		if !names.Valid(p) {
			return untrusted(abs, "its patch %q is not a name", p)
		}
	}
	return nil
}

// Close releases what the run holds open, its lock included.
func (r *Run) Close() {
	r.unlock()
	r.tree.close()
}

// Lock takes the run's lock without waiting. It fails with ErrBusy when
// another process holds it. The returned function releases it.
//
// The lock that counts is on the state directory itself: a worker that
// deletes or replaces the lock file cannot let a second writer in, since a
// directory in use cannot be deleted and the one locked is the one written
// (every record is reached through its descriptor). The lock file
// .custodian/lock is locked too, for a tool that waits on it.
func (r *Run) Lock() (unlock func(), err error) {
	if r.held != nil {
		return nil, ErrBusy
	}
	shared, err := r.tree.dirFD(StateDir, true)
	if err != nil {
		return nil, r.stateDirError(err)
	}
	// A descriptor of the lock's own, which the tree's cache of directories
	// cannot close.
	dfd, err := unix.Openat(shared, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &IOError{Op: "lock", Path: r.abs(StateDir), Err: err}
	}
	if err := flock(dfd); err != nil {
		unix.Close(dfd)
		if errors.Is(err, ErrBusy) {
			return nil, err
		}
		return nil, &IOError{Op: "lock", Path: r.abs(StateDir), Err: err}
	}
	h := &held{dirFD: dfd, fileFD: -1}
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		unix.Close(dfd)
		return nil, &IOError{Op: "lock", Path: r.abs(StateDir), Err: err}
	}
	h.dev, h.ino = uint64(st.Dev), uint64(st.Ino)
	ffd, err := unix.Openat(dfd, "lock", unix.O_RDONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o644)
	if err == nil {
		err = flock(ffd)
		if err != nil {
			unix.Close(ffd)
		}
	}
	if err != nil {
		unix.Close(dfd)
		if errors.Is(err, unix.ELOOP) {
			return nil, untrusted(r.abs(statePath("lock")), "it is a symbolic link")
		}
		if errors.Is(err, ErrBusy) {
			return nil, err
		}
		return nil, &IOError{Op: "lock", Path: r.abs(statePath("lock")), Err: err}
	}
	h.fileFD = ffd
	r.held = h
	return r.unlock, nil
}

func (r *Run) unlock() {
	if h := r.held; h != nil {
		// Closing a locked descriptor releases its lock.
		unix.Close(h.fileFD)
		unix.Close(h.dirFD)
		r.held = nil
	}
}

func flock(fd int) error {
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return ErrBusy
		}
		return err
	}
}

// stillLocked refuses a write unless this Run holds the lock and the state
// directory at the run's path is still the one it locked: a worker that
// moved the state directory aside and put another in its place has made
// another run of it, which this command must not write to.
func (r *Run) stillLocked() error {
	h := r.held
	if h == nil {
		return fmt.Errorf("write to run %s without its lock: a defect in custodian", r.Dir)
	}
	var st unix.Stat_t
	err := unix.Fstatat(r.tree.fd, StateDir, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil || uint64(st.Dev) != h.dev || uint64(st.Ino) != h.ino {
		return fmt.Errorf("run %s: its state directory was replaced while this command held its lock; nothing more was written: %w", r.Dir, ErrBusy)
	}
	return nil
}

// stateDirError says what is wrong with a state directory that cannot be
// opened.
func (r *Run) stateDirError(err error) error {
	if errors.Is(err, ErrLink) {
		return &RecordError{Path: r.abs(StateDir), Err: err}
	}
	return &IOError{Op: "open", Path: r.abs(StateDir), Err: err}
}

// Rel returns a path inside the run relative to the run directory, the form
// records store so that a moved run still resolves.
func (r *Run) Rel(abs string) string {
	rel, err := filepath.Rel(r.Dir, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(rel)
}

// StatePath returns the absolute path of rel inside the state directory.
func (r *Run) StatePath(rel ...string) string {
	return filepath.Join(append([]string{r.Dir, StateDir}, rel...)...)
}

// Now is the time records carry: UTC, to the second, RFC 3339.
func Now() string { return time.Now().UTC().Format(time.RFC3339) }

func validTime(s string) bool {
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// check holds a build's fields to what the go command writes.
func (b Build) check() error {
	if strings.ContainsFunc(b.ID+b.Revision, func(r rune) bool { return isControl(r) || r == ' ' }) || len(b.ID) > 256 || len(b.Revision) > 64 {
		return fmt.Errorf("%q, %q is not a build's id and revision", b.ID, b.Revision)
	}
	return nil
}
