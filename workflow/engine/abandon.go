package engine

import (
	"fmt"
	"unicode/utf8"

	"github.com/custodian-run/custodian/store"
)

// ErrAbandoned means the operator ended a run for good: every command that
// would change it refuses. An AbandonedError wraps it.
var ErrAbandoned = fmt.Errorf("the run was abandoned: %w", ErrRefused)

// AbandonedError is a command refused because its run was abandoned.
type AbandonedError struct {
	Run  string // the run directory
	At   string // when the operator abandoned it
	Text string // why
}

func (e *AbandonedError) Error() string {
	return fmt.Sprintf("run %s was abandoned by the operator at %s: %s", e.Run, e.At, OneLine(e.Text))
}

// Unwrap returns ErrAbandoned.
func (e *AbandonedError) Unwrap() error { return ErrAbandoned }

// Hint says what is left to do with an abandoned run.
func (e *AbandonedError) Hint() string {
	return "the run is ended for good: custodian status, log and check still read it; start a new run to go on"
}

// Abandon ends the run for good, for the reason given: the history records
// it, and every later command but status, log and check refuses the run.
// Only the operator abandons.
func (run *Run) Abandon(text string) error {
	if !utf8.ValidString(text) {
		return &UsageError{Message: "abandon: the reason is not UTF-8 text", Hint: "give the reason as UTF-8 text"}
	}
	return run.locked(func(rec *loaded) error {
		st := rec.state
		st.Abandoned = &store.Abandon{At: store.Now(), Text: text}
		events := sealHistory(st, rec.effects, []store.Event{{Type: store.EventAbandon, Text: text}})
		return run.commit("abandon", st, events)
	})
}
