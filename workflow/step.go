package workflow

import (
	"path"

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
func (o *Orchestrator) Step() (Outcome, error) {
	var out Outcome
	err := o.locked(func(rec *loaded) error {
		if len(rec.state.Moves) > 0 {
			// The last step committed and ended before its moves were done,
			// so nobody saw its outcome: finish the moves and give that
			// outcome now, rather than judge a round whose workers never ran.
			if err := o.finishMoves(rec.state); err != nil {
				return err
			}
			last, err := o.lastOutcome(rec.state)
			if err != nil {
				return err
			}
			if last != nil {
				out = *last
				return nil
			}
		}
		p, err := o.decide(rec, o.run.SaveEffect)
		if err != nil {
			return err
		}
		if err := o.apply(p); err != nil {
			return err
		}
		out = p.outcome
		return nil
	})
	return out, err
}

func (o *Orchestrator) abs(rel string) string { return path.Join(o.run.Dir, rel) }

// lastOutcome reads the outcome of the last step from the committed
// history, or nil when no step has given one.
func (o *Orchestrator) lastOutcome(st *store.State) (*Outcome, error) {
	for seq := st.Seq; seq > 0; seq-- {
		events, err := o.run.HistoryOf(seq)
		if err != nil {
			return nil, err
		}
		for _, e := range events {
			if e.Type != store.EventStep {
				continue
			}
			out, err := o.eventOutcome(e)
			if err != nil {
				return nil, err
			}
			return &out, nil
		}
	}
	return nil, nil
}
