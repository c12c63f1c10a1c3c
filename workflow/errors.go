package workflow

import (
	"errors"
	"fmt"
)

var (
	// ErrDefinition means the definition broke a rule of the engine (two jobs
	// own one path, a job reads an unaccepted output, a bad name, ...). No
	// repair of the run can help: the definition's code must change.
	ErrDefinition = errors.New("the definition broke a rule")

	// ErrUnknownDefinition means no registered definition has the name given.
	ErrUnknownDefinition = errors.New("no such definition")

	// ErrStop is what a definition returns, wrapped, to stop its run when no
	// repair within scope can help. Make one with Stopf.
	ErrStop = errors.New("the definition stopped the run")
)

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

// stopError is a stop raised by the definition.
type stopError struct{ reason string }

func (e *stopError) Error() string { return e.reason }
func (e *stopError) Unwrap() error { return ErrStop }

// StopReason is the stop's reason, without what the definition wrapped it
// in: the engine reads it through an interface of its own.
func (e *stopError) StopReason() string { return e.reason }

// Stopf returns an error that, returned by a definition's Run or given to
// Context.Fail, stops the run: a block on workflow that permits only
// stopping, until the operator releases it.
func Stopf(format string, args ...any) error {
	return &stopError{reason: fmt.Sprintf(format, args...)}
}
