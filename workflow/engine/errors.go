package engine

import (
	"errors"
	"fmt"

	"github.com/custodian-run/custodian/store"
)

var (
	// ErrRefused means a request on a run was refused: it names something the
	// run does not have, or asks for what the run's state does not allow.
	ErrRefused = errors.New("refused")

	// ErrUsage means a command line was malformed. A UsageError wraps it.
	ErrUsage = errors.New("malformed arguments")

	// ErrBusy means another process holds the run's lock.
	ErrBusy = store.ErrBusy

	// ErrNotRun means a directory holds no run.
	ErrNotRun = store.ErrNotRun

	// ErrUntrusted means a record of the run exists but cannot be trusted.
	ErrUntrusted = store.ErrUntrusted

	// ErrExists means a run was already started in a directory.
	ErrExists = store.ErrExists

	// ErrLink means a path of the run passes through a symbolic link,
	// which custodian never follows.
	ErrLink = store.ErrLink

	// ErrIO means reading or writing a run's file failed for a cause
	// outside its records: a permission, a full disk, a file too large.
	ErrIO = store.ErrIO
)

// StateDir is the name of a run's state directory, where the engine keeps
// its records. No job may own a path in it.
const StateDir = store.StateDir

// RefusedError is a request the run refuses, with what to do instead.
type RefusedError struct {
	Reason string
	Hint   string // what the caller can do instead; may be empty
	Err    error  // the cause, when there is one
}

func (e *RefusedError) Error() string { return e.Reason }

// Unwrap returns ErrRefused and the cause.
func (e *RefusedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrRefused}
	}
	return []error{ErrRefused, e.Err}
}

func refused(hint, format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...), Hint: hint}
}

// UsageError is a malformed command line, with what would be right.
type UsageError struct {
	Message string
	Hint    string // the usage that is right, or what to do; may be empty
}

func (e *UsageError) Error() string { return e.Message }

// Unwrap returns ErrUsage.
func (e *UsageError) Unwrap() error { return ErrUsage }
