package store

import (
	"errors"
	"fmt"
)

var (
	// ErrBusy means another process holds the run's lock.
	ErrBusy = errors.New("the run is busy: another custodian process holds its lock")

	// ErrNotRun means a directory holds no run: it has no .custodian/run.json.
	ErrNotRun = errors.New("not a run")

	// ErrUntrusted means a record exists but cannot be trusted: it is
	// unreadable, malformed, of a format this version does not know, or at
	// odds with the run's other records.
	ErrUntrusted = errors.New("the run's records cannot be trusted")

	// ErrExists means a run was already started in a directory.
	ErrExists = errors.New("a run was already started here")

	// ErrIO means reading or writing a file failed for a cause outside the
	// run's records: a permission, a full disk, a file too large. An
	// IOError wraps it.
	ErrIO = errors.New("an I/O error")
)

// RecordError reports a record that cannot be trusted, and where it is.
type RecordError struct {
	Path string // the record's absolute path
	Err  error  // what is wrong with it
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("record %s cannot be trusted: %v", e.Path, e.Err)
}

// Unwrap returns both the cause and ErrUntrusted, so that callers can branch
// on either.
func (e *RecordError) Unwrap() []error { return []error{ErrUntrusted, e.Err} }

func untrusted(path string, format string, args ...any) error {
	return &RecordError{Path: path, Err: fmt.Errorf(format, args...)}
}

// IOError is a read or a write of a run's file that failed.
type IOError struct {
	Op   string // "read", "write", "move", ...
	Path string // absolute
	Err  error
}

func (e *IOError) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err) }

// Unwrap returns both ErrIO and the cause.
func (e *IOError) Unwrap() []error { return []error{ErrIO, e.Err} }
