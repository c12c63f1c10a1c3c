package workflow

import (
	"errors"
	"fmt"

	"github.com/custodian-run/custodian/store"
)

var (
	// ErrDefinition means the definition broke a rule of the engine (two jobs
	// own one path, a job reads an unaccepted output, a bad name, ...). No
	// repair of the run can help: the definition's code must change.
	ErrDefinition = errors.New("the definition broke a rule")

	// ErrRefused means a request on a run was refused: it names something the
	// run does not have, or asks for what the run's state does not allow.
	ErrRefused = errors.New("refused")

	// ErrUnknownDefinition means no registered definition has the name given.
	ErrUnknownDefinition = errors.New("no such definition")

	// ErrStop is what a definition returns, wrapped, to stop its run when no
	// repair within scope can help. Make one with Stopf.
	ErrStop = errors.New("the definition stopped the run")

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

// DefinitionError is a rule the definition broke, found while replaying it.
type DefinitionError struct {
	Definition string // the definition's registered name
	Rule       string // what is wrong, in words
}

func (e *DefinitionError) Error() string {
	return fmt.Sprintf("definition %s: %s", e.Definition, e.Rule)
}

// Unwrap returns ErrDefinition.
func (e *DefinitionError) Unwrap() error { return ErrDefinition }

// RefusedError is a request the run refuses, with what to do instead.
type RefusedError struct {
	Reason string
	Hint   string // what the caller can do instead; may be empty
	Err    error  // the cause, when there is one
}

func (e *RefusedError) Error() string { return e.Reason }

// Unwrap returns ErrRefused and the cause.
func (e *RefusedError) Unwrap() []error { return []error{ErrRefused, e.Err} }

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

// stopError is a stop raised by the definition.
type stopError struct{ reason string }

func (e *stopError) Error() string { return e.reason }
func (e *stopError) Unwrap() error { return ErrStop }

// Stopf returns an error that, returned by a definition's Run or given to
// Context.Fail, stops the run: a block on workflow that permits only
// stopping, until the operator releases it.
func Stopf(format string, args ...any) error {
	return &stopError{reason: fmt.Sprintf(format, args...)}
}
