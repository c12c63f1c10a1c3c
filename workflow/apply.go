package workflow

import (
	"runtime"

	"github.com/custodian-run/custodian/store"
)

// manyTexts is how many texts make a step collect its garbage once they are
// written.
const manyTexts = 1000

// apply carries out a step's plan, in the order docs/crash-points.md gives:
//
//  1. block records and prompt files, at paths numbered from the old state,
//     made durable with one sync;
//  2. the hash cache, when the step hashed what it did not know;
//  3. the history of the step, history/<seq>.jsonl;
//  4. state.json, listing the moves the step owes: the commit point;
//  5. the moves, files set aside into jobs/<job>/kept/;
//  6. state.json again, with no moves owed.
//
// A process that ends before the commit point leaves the run as it was (the
// next step writes the same files again); one that ends after it leaves
// moves owed, which the next step finishes first.
func (o *Orchestrator) apply(p *plan) error {
	if len(p.texts) >= manyTexts {
		// Each text is dropped once written, so the heap holds less and
		// less: collecting sooner keeps a step that hands out ten thousand
		// jobs under some fifty megabytes of heap.
		defer collectSooner()()
	}
	for i := range p.texts {
		t := &p.texts[i]
		if err := o.run.WriteText(t.label, t.rel, t.data); err != nil {
			return err
		}
		// Ten thousand prompts are megabytes that the rest of the step
		// need not keep.
		t.data = nil
	}
	if len(p.texts) > 0 {
		// One sync of the file system for every text the step wrote, rather
		// than one per file: ten thousand prompt files cost one flush.
		if err := o.run.SyncTexts(); err != nil {
			return err
		}
	}
	if len(p.texts) >= manyTexts {
		// The texts are written and dropped; a collection now, rather than
		// at twice the heap that held them, keeps the history and the state
		// that follow within the memory the texts took: a step that hands
		// out ten thousand jobs peaks at some fifty megabytes, not seventy,
		// for some milliseconds.
		runtime.GC()
	}
	// The hash cache is derived data: a step that ends before it is
	// written leaves the old cache, which the racy rule keeps honest, and
	// one that ends after it is run again and finds what it hashed.
	if p.files != nil {
		if err := p.files.Save(); err != nil {
			return err
		}
	}
	// So are the verdicts: the old ones are as true as they were.
	if p.verdicts != nil {
		if err := p.verdicts.Save(); err != nil {
			return err
		}
	}
	if err := o.commit("state", p.state, p.events); err != nil {
		return err
	}
	if len(p.moves) > 0 {
		return o.finishMoves(p.state)
	}
	return nil
}

// finishMoves performs the moves the committed state owes, and saves the
// state without them. A move whose target exists is done already.
func (o *Orchestrator) finishMoves(st *store.State) error {
	if err := o.run.Perform(st.Moves); err != nil {
		return err
	}
	st.Moves = []store.Move{}
	return o.run.SaveState("state-moved", st)
}
