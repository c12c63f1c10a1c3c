package engine

import "github.com/custodian-run/custodian/store"

// apply carries out a step's plan, in the order docs/crash-points.md gives:
//
//  1. block records and prompt files, at paths numbered from the old state,
//     and the directories of the outputs handed out, made durable with one
//     sync;
//  2. the hash cache, when the step hashed what it did not know;
//  3. the history of the step, history/<seq>.jsonl;
//  4. state.json, listing the moves the step owes: the commit point;
//  5. the moves, files set aside into jobs/<job>/kept/;
//  6. state.json again, with no moves owed.
//
// A process that ends before the commit point leaves the run as it was (the
// next step writes the same files again); one that ends after it leaves
// moves owed, which the next step finishes first.
func (run *Run) apply(p *plan) error {
	// A finished run stays finished under new code: the next step must know
	// how the last step that carried out its replay ended, without reading
	// the history. A stop on a changed definition and an uncertain step
	// carry out nothing.
	if !p.holds {
		p.state.Last = string(p.outcome.Kind)
	}
	p.state.Build = run.build
	for i := range p.texts {
		t := &p.texts[i]
		if err := run.records.WriteText(t.label, t.rel, t.data); err != nil {
			return err
		}
		// Ten thousand prompts are megabytes the rest of the step need not
		// keep.
		t.data = nil
	}
	for _, rel := range p.parents {
		// The output's problem report lies beside it, in the same directory.
		if err := run.records.MakeParent(rel); err != nil {
			return err
		}
	}
	if len(p.texts) > 0 || len(p.parents) > 0 {
		// One sync of the file system for every text the step wrote, rather
		// than one per file: ten thousand prompt files cost one flush.
		if err := run.records.SyncTexts(); err != nil {
			return err
		}
	}
	// The hash cache is derived data: a step that ends before it is
	// written leaves the old cache, which the racy rule keeps honest, and
	// one that ends after it is run again and finds what it hashed.
	if p.files != nil {
		if err := p.files.Save(); err != nil {
			return err
		}
	}
	if err := run.commit("state", p.state, p.events); err != nil {
		return err
	}
	if len(p.moves) > 0 {
		return run.finishMoves(p.state)
	}
	return nil
}

// finishMoves performs the moves the committed state owes, and saves the
// state without them. A move whose target exists is done already.
func (run *Run) finishMoves(st *store.State) error {
	if err := run.records.Perform(st.Moves); err != nil {
		return err
	}
	st.Moves = []store.Move{}
	return run.records.SaveState("state-moved", st)
}
