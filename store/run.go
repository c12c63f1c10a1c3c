package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// StateDir is the name of a run's state directory. No job may own a path in it.
const StateDir = ".custodian"

// RunFormat is the format of run.json this version reads and writes.
const RunFormat = 1

// RunRecord is run.json: what a run is, written once by Create.
type RunRecord struct {
	Format     int               `json:"format"`
	Definition string            `json:"definition"`
	Params     map[string]string `json:"params"`
	StartedAt  string            `json:"started_at"`
	Version    string            `json:"version"`
}

// Run is an open run directory. It reads and writes the run's records; it
// decides nothing.
type Run struct {
	Dir    string    // the run directory, absolute and clean
	Record RunRecord // run.json as read when the run was opened
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
	rec.Format = RunFormat
	if rec.Params == nil {
		rec.Params = map[string]string{}
	}
	if rec.StartedAt == "" {
		rec.StartedAt = Now()
	}
	r := &Run{Dir: abs, Record: rec}
	if _, err := os.Lstat(r.path("run.json")); err == nil {
		return nil, fmt.Errorf("start run %s: %w", abs, ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("start run %s: %w", abs, err)
	}
	unlock, err := lock(r.path("lock"))
	if err != nil {
		return nil, fmt.Errorf("start run %s: %w", abs, err)
	}
	defer unlock()
	data, err := encode(rec)
	if err != nil {
		return nil, fmt.Errorf("start run %s: %w", abs, err)
	}
	// Checked again under the lock: two starts of one directory cannot both win.
	if _, err := os.Lstat(r.path("run.json")); err == nil {
		return nil, fmt.Errorf("start run %s: %w", abs, ErrExists)
	}
	if err := r.SaveState("state-new", st); err != nil {
		return nil, fmt.Errorf("start run %s: %w", abs, err)
	}
	if err := writeFile("run", r.path("run.json"), data); err != nil {
		return nil, fmt.Errorf("start run %s: %w", abs, err)
	}
	return r, nil
}

// Open opens the run in dir. It fails with ErrNotRun when dir holds no
// run.json, and with an error wrapping ErrUntrusted when run.json cannot be
// read or is of another format. It writes nothing.
func Open(dir string) (*Run, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", dir, err)
	}
	r := &Run{Dir: abs}
	data, err := os.ReadFile(r.path("run.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s/run.json: %w", abs, StateDir, ErrNotRun)
	}
	if err != nil {
		return nil, &RecordError{Path: r.path("run.json"), Err: err}
	}
	if err := decodeRecord(r.path("run.json"), data, &r.Record, RunFormat, func() int { return r.Record.Format }); err != nil {
		return nil, err
	}
	if r.Record.Definition == "" {
		return nil, untrusted(r.path("run.json"), "it names no definition")
	}
	return r, nil
}

// decodeRecord decodes a record strictly and checks its format version.
// The format is read first, on its own, so that a record of another format
// says so rather than fail on the first field that format does not share.
func decodeRecord(path string, data []byte, v any, want int, format func() int) error {
	var head struct {
		Format *int `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err == nil && head.Format != nil && *head.Format != want {
		return untrusted(path, "it has format %d; this custodian reads format %d", *head.Format, want)
	}
	if err := decodeStrict(data, v); err != nil {
		return &RecordError{Path: path, Err: err}
	}
	if got := format(); got != want {
		return untrusted(path, "it has format %d; this custodian reads format %d", got, want)
	}
	return nil
}

// Lock takes the run's lock without waiting. It fails with ErrBusy when
// another process holds it. The returned function releases it.
func (r *Run) Lock() (unlock func(), err error) {
	return lock(r.path("lock"))
}

// StatePath returns the absolute path of rel inside the state directory.
func (r *Run) StatePath(rel ...string) string { return r.path(rel...) }

func (r *Run) path(rel ...string) string {
	return filepath.Join(append([]string{r.Dir, StateDir}, rel...)...)
}

// Rel returns a path inside the state directory relative to the run
// directory, the form records store so that a moved run still resolves.
func (r *Run) Rel(abs string) string {
	rel, err := filepath.Rel(r.Dir, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(rel)
}

// Now is the time records carry: UTC, to the second, RFC 3339.
func Now() string { return time.Now().UTC().Format(time.RFC3339) }
