package store

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// EventFormat is the format of a line of a history file.
const EventFormat = 2

// Event is one line of the run's history: something a command did, with its
// time and step. Fields that do not apply to an event's type are empty.
type Event struct {
	Format  int       `json:"format"`
	Seq     int       `json:"seq"`  // the command that recorded it
	Step    int       `json:"step"` // the step it belongs to, or the steps before it
	At      string    `json:"at"`   // when it was recorded, UTC
	Type    EventType `json:"type"`
	Subject string    `json:"subject"` // a job, "workflow", or an effect's name
	Attempt int       `json:"attempt"` // a job's hand-out number; an effect's run number
	Kind    string    `json:"kind"`    // a block's or failure's kind; who settled an effect
	Text    string    `json:"text"`    // the outcome, reason or status, in words
	Path    string    `json:"path"`    // a prompt, record or kept file, run-relative
	// Messages are a refusal's messages, as the next prompt carries them.
	Messages []string `json:"messages"`
	// Outcome is the step's outcome as `step --json` prints it, with paths
	// relative to the run, on a step event; null otherwise.
	Outcome json.RawMessage `json:"outcome"`
}

// EventType says what an event records.
type EventType string

// The events of a run's history. Start and report events are not stored in
// the history files: Log makes them from run.json and reports.jsonl.
const (
	EventStart   EventType = "start"   // the run started
	EventStep    EventType = "step"    // a step gave an outcome
	EventHandout EventType = "handout" // a job was handed out
	EventAccept  EventType = "accept"  // a job's output was accepted
	EventRefuse  EventType = "refuse"  // an attempt failed
	EventSpare   EventType = "spare"   // a hand-out no worker attempted was not charged
	EventReopen  EventType = "reopen"  // an accepted job was handed out again
	EventCarry   EventType = "carry"   // an accepted job carried over to a new name
	EventKeep    EventType = "keep"    // a file was moved aside
	EventBlock   EventType = "block"   // a step gave a block
	EventEffect  EventType = "effect"  // an effect's journal changed
	EventRelease EventType = "release" // the operator released a subject
	EventResolve EventType = "resolve" // the operator resolved an effect
	EventDecide  EventType = "decide"  // the operator chose on a question the definition asked
	EventAbandon EventType = "abandon" // the operator ended the run for good
	EventLaunch  EventType = "launch"  // drive launched a worker, and how it ended
	EventReport  EventType = "report"  // the agent orchestrator reported
)

// WriteHistory writes the events of the command numbered seq. It is written
// before the state that counts it, so a command that ends in between leaves
// a file that the next command numbered seq replaces.
func (r *Run) WriteHistory(seq int, events []Event) error {
	var data []byte
	for _, e := range events {
		e.Format, e.Seq = EventFormat, seq
		if e.Messages == nil {
			e.Messages = []string{}
		}
		if e.Outcome == nil {
			e.Outcome = json.RawMessage("null")
		}
		line, err := encode(e)
		if err != nil {
			return fmt.Errorf("write history %d: %w", seq, err)
		}
		data = append(data, line...)
	}
	return r.write("history", r.historyPath(seq), data)
}

// History reads the committed history, commands 1 to upTo, oldest first.
func (r *Run) History(upTo int) ([]Event, error) {
	var events []Event
	for seq := 1; seq <= upTo; seq++ {
		more, err := r.HistoryOf(seq)
		if err != nil {
			return nil, err
		}
		events = append(events, more...)
	}
	return events, nil
}

// HistoryOf reads the events of the command numbered seq. A committed
// command's file must exist and be whole.
func (r *Run) HistoryOf(seq int) ([]Event, error) {
	rel := r.historyPath(seq)
	data, found, err := r.readLines(rel)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, untrusted(r.abs(rel), "the history of command %d is missing", seq)
	}
	events, err := decodeLines(r.abs(rel), data, EventFormat, func(e *Event) int { return e.Format })
	if err != nil {
		return nil, err
	}
	for i, e := range events {
		switch {
		case e.Seq != seq:
			return nil, untrusted(r.abs(rel), "line %d belongs to command %d", i+1, e.Seq)
		case e.Path != "" && !Clean(e.Path):
			return nil, untrusted(r.abs(rel), "line %d names path %q, which is not inside the run", i+1, e.Path)
		}
	}
	return events, nil
}

// CheckHistory checks that the history of every committed command up to seq
// is there: one directory read, not a read of every file.
func (r *Run) CheckHistory(seq int) error {
	dir := statePath("history")
	names, err := r.tree.names(dir)
	if err != nil {
		return &RecordError{Path: r.abs(dir), Err: err}
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	for s := 1; s <= seq; s++ {
		if !have[strconv.Itoa(s)+".jsonl"] {
			return untrusted(r.abs(r.historyPath(s)), "the history of command %d is missing; the state counts %d", s, seq)
		}
	}
	return nil
}

func (r *Run) historyPath(seq int) string {
	return statePath("history", strconv.Itoa(seq)+".jsonl")
}
