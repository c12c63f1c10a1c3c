package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// EventFormat is the format of a line of a history file.
const EventFormat = 1

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
	// Outcome is the step's outcome as `step --json` prints it, on a step
	// event; null otherwise.
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
	EventReopen  EventType = "reopen"  // an accepted job was handed out again
	EventKeep    EventType = "keep"    // a file was moved aside
	EventBlock   EventType = "block"   // a step gave a block
	EventEffect  EventType = "effect"  // an effect's journal changed
	EventRelease EventType = "release" // the operator released a subject
	EventResolve EventType = "resolve" // the operator resolved an effect
	EventReport  EventType = "report"  // the agent orchestrator reported
)

// WriteHistory writes the events of the command numbered seq. It is written
// before the state that counts it, so a command that ends in between leaves
// a file that the next command numbered seq replaces.
func (r *Run) WriteHistory(seq int, events []Event) error {
	var buf bytes.Buffer
	for _, e := range events {
		e.Format, e.Seq = EventFormat, seq
		if e.Outcome == nil {
			e.Outcome = json.RawMessage("null")
		}
		line, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("write history %d: %w", seq, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return writeFile("history", r.historyPath(seq), buf.Bytes())
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
	path := r.historyPath(seq)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, untrusted(path, "the history of command %d is missing", seq)
	}
	if err != nil {
		return nil, &RecordError{Path: path, Err: err}
	}
	events, err := decodeLines(path, data, EventFormat, func(e *Event) int { return e.Format })
	if err != nil {
		return nil, err
	}
	for i, e := range events {
		if e.Seq != seq {
			return nil, untrusted(path, "line %d belongs to command %d", i+1, e.Seq)
		}
	}
	return events, nil
}

func (r *Run) historyPath(seq int) string {
	return r.path("history", strconv.Itoa(seq)+".jsonl")
}
