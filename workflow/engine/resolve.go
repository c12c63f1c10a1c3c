package engine

import (
	"slices"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
)

// Resolve records what the operator established about an effect whose fate
// code cannot settle: one left started, one whose inputs changed after it
// completed, or one the definition no longer reaches. Completed lets it
// stand with its inputs as they are now; absent withdraws it, so that it
// runs again when the definition reaches it. Only the operator resolves.
// An effect resolved as completed is no longer owed: a definition that
// stops reaching it does not block on it.
func (run *Run) Resolve(name string, what workflow.Recognition) error {
	if what != workflow.Completed && what != workflow.Absent {
		return refused("resolve completed or absent", "an effect cannot be resolved as %s; establish whether it took place (completed) or not (absent)", what)
	}
	return run.locked(func(rec *loaded) error {
		st := rec.state
		e := rec.effects[name]
		switch {
		case e == nil:
			return refused("custodian status RUN lists the run's effects and their state", "no effect named %q is recorded in run %s", name, run.records.Dir)
		case e.Status == store.EffectAbsent:
			return refused("run step: the effect runs when the definition reaches it", "effect %s is resolved absent; there is nothing to resolve", name)
		}
		keys := make([]string, len(e.Inputs))
		for i, f := range e.Inputs {
			keys[i] = f.Path
		}
		current, err := filesState(run.records.Files(), keys)
		if err != nil {
			return err
		}
		unreached := slices.Contains(st.Unreached, name)
		if e.Status == store.EffectCompleted && e.State == digestFiles(current) && !unreached {
			return refused("run step: the effect stands", "effect %s is completed and matches its inputs; there is nothing to resolve", name)
		}
		settled := *e
		settled.At, settled.By = store.Now(), "operator"
		if what == workflow.Absent {
			settled.Status = store.EffectAbsent
		} else {
			settled.Status = store.EffectCompleted
			// It stands as the operator found it: with its inputs as they are
			// now, and no longer owed should the definition stop reaching it.
			settled.Inputs, settled.State = current, digestFiles(current)
			settled.Required = false
		}
		// The state commits the resolve and owes the journal its new record,
		// as a step owes its moves: a process that ends after the commit
		// leaves the journal to the next command, and the history says once
		// that the operator resolved it.
		rec.effects[name] = &settled
		st.Resolving = &settled
		st.Effects[name] = store.EffectSeen{Status: settled.Status, Runs: settled.Runs}
		st.Unreached = slices.DeleteFunc(st.Unreached, func(n string) bool { return n == name })
		events := sealHistory(st, rec.effects, []store.Event{{Type: store.EventResolve, Subject: name, Text: what.String()}})
		if err := run.commit("resolve-state", st, events); err != nil {
			return err
		}
		return run.finishResolving(st)
	})
}

// finishResolving writes the journal record a committed resolve owes, and
// then the state without the debt.
func (run *Run) finishResolving(st *store.State) error {
	if st.Resolving == nil {
		return nil
	}
	if err := run.records.SaveEffect("resolve", st.Resolving); err != nil {
		return err
	}
	st.Resolving = nil
	return run.records.SaveState("resolve-done", st)
}
