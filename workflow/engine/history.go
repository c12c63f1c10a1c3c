package engine

import (
	"encoding/json"
	"fmt"

	"github.com/custodian-run/custodian/store"
)

// sealHistory completes a command's history: it adds what the effect
// journals show that the history has not recorded yet, counts the command
// in st, and dates and numbers every event.
func sealHistory(st *store.State, effects map[string]*store.Effect, events []store.Event) []store.Event {
	events = append(events, effectEvents(st, effects)...)
	st.Seq++
	now := store.Now()
	for i := range events {
		events[i].Step = st.Steps
		if events[i].At == "" {
			events[i].At = now
		}
	}
	return events
}

// commit commits a command whose history is sealed: it writes the history
// and then state.json, whose rename counts that history as committed. A
// process that ends in between leaves a history file numbered past the
// state's count, which is not history and which the next command replaces.
func (run *Run) commit(label string, st *store.State, events []store.Event) error {
	if err := run.records.WriteHistory(st.Seq, events); err != nil {
		return err
	}
	return run.records.SaveState(label, st)
}

// effectEvents records every change of an effect's journal since the
// history last saw it, and notes it as seen. A journal that a process changed
// before it ended without a commit is so recorded by the next command that
// commits: no event is lost, and none is recorded twice.
//
// The journal keeps only its last run. A run it has moved past without a
// commit was started and then found absent by the recognizer (the operator's
// absent commits its own history), so the history gets both events for it.
// Their times are lost with the journal's; they carry the last time it gives.
func effectEvents(st *store.State, effects map[string]*store.Effect) []store.Event {
	var events []store.Event
	for _, name := range store.EffectNames(effects) {
		e := effects[name]
		seen, ok := st.Effects[name]
		now := store.EffectSeen{Status: e.Status, Runs: e.Runs}
		if ok && seen == now {
			continue
		}
		for run := max(seen.Runs, 1); run < e.Runs; run++ {
			if run > seen.Runs {
				events = append(events, store.Event{Type: store.EventEffect, Subject: name, Attempt: run, Text: store.EffectStarted, Kind: "step", At: e.At})
			}
			if run > seen.Runs || seen.Status == store.EffectStarted {
				events = append(events, store.Event{Type: store.EventEffect, Subject: name, Attempt: run, Text: store.EffectAbsent, Kind: "recognizer", At: e.At})
			}
		}
		if e.Runs > seen.Runs {
			events = append(events, store.Event{Type: store.EventEffect, Subject: name, Attempt: e.Runs, Text: store.EffectStarted, Kind: "step", At: e.At})
		}
		if e.Runs == seen.Runs || e.Status != store.EffectStarted {
			events = append(events, store.Event{Type: store.EventEffect, Subject: name, Attempt: e.Runs, Text: e.Status, Kind: e.By, At: e.At})
		}
		st.Effects[name] = now
	}
	return events
}

// stepByDrive is the kind of a step event of a step custodian drive took:
// the loop that goes on is drive.
const stepByDrive = "drive"

// stepEvents puts the step's own event, with its outcome, before the events
// it recorded, and a block event for each block of the outcome.
func (run *Run) stepEvents(out Outcome, events []store.Event) []store.Event {
	// Paths are kept relative to the run, so that a run copied or moved
	// elsewhere keeps its history.
	data, err := json.Marshal(out.paths(run.records.Rel))
	if err != nil {
		// An Outcome holds strings, numbers and canonical JSON only.
		panic(fmt.Sprintf("encode outcome: %v", err))
	}
	all := []store.Event{{Type: store.EventStep, Text: string(out.Kind), Outcome: data}}
	all = append(all, events...)
	for _, b := range out.Blocks {
		all = append(all, store.Event{Type: store.EventBlock, Subject: string(b.Subject), Kind: string(b.Kind), Text: b.Reason + " (permits " + string(b.Permitted) + ")", Path: run.records.Rel(b.Record)})
	}
	return all
}

func keepEvent(job string, m store.Move) store.Event {
	return store.Event{Type: store.EventKeep, Subject: job, Text: m.Source, Path: m.Target}
}

// eventOutcome reads the outcome a step event records. One that cannot be
// read makes the history untrusted.
func (run *Run) eventOutcome(e store.Event) (Outcome, error) {
	var out Outcome
	if err := json.Unmarshal(e.Outcome, &out); err != nil {
		return Outcome{}, &store.RecordError{Path: run.records.StatePath("history", fmt.Sprintf("%d.jsonl", e.Seq)), Err: err}
	}
	for _, p := range out.paths(func(p string) string { return p }).pathList() {
		if !store.Clean(p) {
			return Outcome{}, &store.RecordError{Path: run.records.StatePath("history", fmt.Sprintf("%d.jsonl", e.Seq)),
				Err: fmt.Errorf("the outcome of step %d names %q, which is not a path inside the run", e.Step, p)}
		}
	}
	return out.paths(run.abs), nil
}
