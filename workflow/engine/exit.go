package engine

import (
	"errors"

	"github.com/custodian-run/custodian/workflow"
)

// The exit codes of every custodian command. ExitStatuses gives each its
// meaning and what to do; the README gives the same table, and a test holds
// it to it.
const (
	// ExitOK: the command did its work; for step, any outcome.
	ExitOK = 0
	// ExitFailed: the request was refused or failed.
	ExitFailed = 1
	// ExitUsage: the arguments are malformed.
	ExitUsage = 2
	// ExitBusy: another process holds the run's lock.
	ExitBusy = 3
	// ExitUntrusted: the directory is not a run, or its records cannot be trusted.
	ExitUntrusted = 4
	// ExitDefinition: the definition broke a rule of the engine; its code must change.
	ExitDefinition = 5
)

// ExitStatus is one row of the table of exit codes.
type ExitStatus struct {
	Code    int
	Meaning string // what the status says happened
	Action  string // what the agent orchestrator does about it
}

// ExitStatuses is the table of exit codes, in order. Any other status comes
// from a process that ended inside an effect.
var ExitStatuses = []ExitStatus{
	{ExitOK, "the command did its work; for `step`, any outcome (blocked and uncertain included)", "act on the outcome"},
	{ExitFailed, "the request was refused or failed (release a job that is not stopped, an unlisted report event, an I/O error)", "read the message and its hint"},
	{ExitUsage, "malformed arguments, or a parameter the definition does not take", "fix the command line"},
	{ExitBusy, "the run is busy: another process holds its lock, or a `custodian drive` or its workers still run", "do not start a second loop; tell the operator"},
	{ExitUntrusted, "not a run, or its records cannot be trusted", "tell the operator; never edit `.custodian/`"},
	{ExitDefinition, "the definition broke a rule (two jobs own a path, a job reads an unaccepted output, ...)", "the definition's code must change"},
}

// Named says whether code is one of the exit codes of ExitStatuses. A
// command that ends with another status ended inside an effect.
func Named(code int) bool { return code >= ExitOK && code <= ExitDefinition }

// errorClasses maps the errors callers branch on to their exit code and the
// hint a command prints with them, in the order they are tried.
var errorClasses = []struct {
	err  error
	code int
	hint string
}{
	{ErrUsage, ExitUsage, ""},
	{ErrBusy, ExitBusy, "another custodian process is working on this run; do not start a second loop and do not retry on your own: tell the operator"},
	{ErrUntrusted, ExitUntrusted, "do not edit anything under " + StateDir + "/; give this message to the operator"},
	{ErrNotRun, ExitUntrusted, "check the path; start a run with custodian start"},
	{workflow.ErrDefinition, ExitDefinition, "the definition's code must change; give this message to the operator"},
	{workflow.ErrUnknownDefinition, ExitFailed, "custodian definitions lists the definitions this binary carries"},
	{ErrExists, ExitFailed, "give a new directory with --run, or leave --run out for a fresh one under runs/"},
	{ErrLink, ExitFailed, "custodian follows no symbolic link in a run: put a directory where the link is, then run the command again; it wrote nothing"},
	{ErrIO, ExitFailed, "fix the cause (a permission, a full disk, a file too large), then run the command again: a command that failed this way committed nothing, so a rerun is safe"},
}

// ExitCode returns the exit status a command ends with after err: ExitOK
// for nil, the status of the first error class err belongs to, and
// ExitFailed for any other error.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	for _, c := range errorClasses {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return ExitFailed
}

// Hint returns the advice for the person or program that made a request
// that failed with err, or "": the hint the error carries, or else its
// class's.
func Hint(err error) string {
	var (
		refusal *RefusedError
		usage   *UsageError
		hinted  interface{ Hint() string }
	)
	switch {
	case errors.As(err, &refusal) && refusal.Hint != "":
		return refusal.Hint
	case errors.As(err, &usage) && usage.Hint != "":
		return usage.Hint
	case errors.As(err, &hinted):
		return hinted.Hint()
	}
	for _, c := range errorClasses {
		if errors.Is(err, c.err) {
			return c.hint
		}
	}
	return ""
}
