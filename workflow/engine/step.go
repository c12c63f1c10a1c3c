package engine

import (
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/custodian-run/custodian/store"
)

// Step replays the definition from the top, judges every job it names,
// commits the records atomically and returns the one outcome that applies.
// It takes the run's lock and fails at once with ErrBusy when another
// process holds it. A definition that breaks a rule fails the step with a
// DefinitionError and changes nothing.
//
// A step consumes a round: it assumes every worker launched after the last
// step has finished or failed to start, so a hand-out without an output is
// a failed attempt.
func (run *Run) Step() (Outcome, error) { return run.step(Holder{}, 0, nil) }

// step is Step, taken by the drive self, or by no drive (the zero
// Holder). running are the hand-outs the drive holds, job → attempt: a
// worker of each runs, or waits for a free place; the step leaves them
// alone. number, when not zero, is the run's step the caller means to
// take: once the run has taken it, its outcome is given as recorded, so
// that a step asked for again (a retried Temporal activity) is never
// taken twice.
func (run *Run) step(self Holder, number int, running map[string]int) (Outcome, error) {
	var out Outcome
	var wait time.Duration
	if len(running) > 0 {
		// Beside its workers, a drive's step waits a moment for another
		// command's lock (an operator's command that is refused), rather
		// than fail while the workers run.
		wait = bookkeeping
	}
	err := run.lockedWaiting(wait, func(rec *loaded) error {
		// A worker a drive launched that still runs may yet write its
		// output: judging its round now would count it failed.
		if len(running) > 0 {
			if err := run.keepRound(rec, self, running); err != nil {
				return err
			}
		} else if err := run.clearRound(rec, self); err != nil {
			return err
		}
		if number > 0 && rec.state.Steps >= number {
			if len(rec.state.Moves) > 0 {
				if err := run.finishMoves(rec.state); err != nil {
					return err
				}
			}
			taken, err := run.outcomeOf(rec.state, number)
			if err != nil {
				return err
			}
			out = taken
			return nil
		}
		if number > 0 && rec.state.Steps != number-1 {
			return refused("drive the run again: its loop lost count of its steps",
				"run %s has taken %d steps, so it cannot take step %d", run.records.Dir, rec.state.Steps, number)
		}
		if len(rec.state.Moves) > 0 {
			// The last step committed and ended before its moves were done,
			// so nobody saw its outcome: finish the moves and give that
			// outcome now, rather than judge a round whose workers never ran.
			if err := run.finishMoves(rec.state); err != nil {
				return err
			}
			last, err := run.lastOutcome(rec.state)
			if err != nil {
				return err
			}
			if last != nil {
				out = *last
				return nil
			}
		}
		p, err := run.decide(rec, run.records.SaveEffect, running)
		if err != nil {
			return err
		}
		if !self.none() {
			p.events[0].Kind = stepByDrive
		}
		if err := run.apply(p); err != nil {
			return err
		}
		out = p.outcome
		return nil
	})
	return out, err
}

// ErrEndedInEffect is what StepEndingIn returns when its step ended inside
// the effect, as it was asked to.
var ErrEndedInEffect = errors.New("the step ended inside the effect, as a crash would")

// StepEndingIn runs a step that ends inside the effect named, as a process
// that crashed there would: the effect's start is journaled, its do runs
// when ranDo, and the step ends there, recording neither the effect's
// completion nor anything else. It returns ErrEndedInEffect when the step
// ended so; a step that never reached the effect is taken as an ordinary
// one, and StepEndingIn says it did not end there.
// It exists so that a definition's tests can drive its recognizers
// without the definition carrying a hook of its own: the next Step asks
// the recognizer what took place.
func (run *Run) StepEndingIn(effect string, ranDo bool) error {
	return run.locked(func(rec *loaded) error {
		if len(rec.state.Moves) > 0 {
			if err := run.finishMoves(rec.state); err != nil {
				return err
			}
		}
		limits, err := limits(run.def, withDefaults(run.def, run.params))
		if err != nil {
			return err
		}
		r := newReplay(run, rec, limits)
		r.endIn, r.endAfterDo = effect, ranDo
		r.play()
		if r.ruleErr != nil {
			return r.ruleErr
		}
		if r.ioErr != nil {
			return r.ioErr
		}
		p, err := run.decideReplayed(r, rec.reports)
		if err != nil {
			return err
		}
		if err := run.apply(p); err != nil {
			return err
		}
		return fmt.Errorf("the step of run %s never reached effect %s: it was taken as an ordinary step, with outcome %s", run.records.Dir, effect, p.outcome.Kind)
	})
}

func (run *Run) abs(rel string) string { return path.Join(run.records.Dir, rel) }

// lastOutcome reads the outcome of the last step from the committed
// history, or nil when no step has given one.
func (run *Run) lastOutcome(st *store.State) (*Outcome, error) {
	e, err := run.lastStep(st)
	if err != nil || e == nil {
		return nil, err
	}
	out, err := run.eventOutcome(*e)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// LastOutcome returns the outcome of the run's last step, as its history
// recorded it, or nil before the first step. It takes no lock and writes
// nothing.
func (run *Run) LastOutcome() (*Outcome, error) {
	rec, err := run.read()
	if err != nil {
		return nil, err
	}
	return run.lastOutcome(rec.state)
}

// outcomeOf reads the outcome of step number from the committed history.
func (run *Run) outcomeOf(st *store.State, number int) (Outcome, error) {
	for seq := st.Seq; seq > 0; seq-- {
		events, err := run.records.HistoryOf(seq)
		if err != nil {
			return Outcome{}, err
		}
		if len(events) > 0 && events[0].Type == store.EventStep && events[0].Step == number {
			return run.eventOutcome(events[0])
		}
	}
	return Outcome{}, &store.RecordError{Path: run.records.StatePath("history"),
		Err: fmt.Errorf("the run has taken %d steps, and its history holds no step %d", st.Steps, number)}
}

// lastStep reads the event of the last step from the committed history,
// or nil when no step has given one.
func (run *Run) lastStep(st *store.State) (*store.Event, error) {
	for seq := st.Seq; seq > 0; seq-- {
		events, err := run.records.HistoryOf(seq)
		if err != nil {
			return nil, err
		}
		for _, e := range events {
			if e.Type == store.EventStep {
				return &e, nil
			}
		}
	}
	return nil, nil
}

// loop says how the loop that drives the run goes on, for a hint: drive
// again when a drive took the last step, step otherwise.
func (run *Run) loop(st *store.State) string {
	if e, err := run.lastStep(st); err == nil && e != nil && e.Kind == stepByDrive {
		return driveAgain(run.records.Dir)
	}
	return "custodian step " + shellQuote(run.records.Dir)
}
