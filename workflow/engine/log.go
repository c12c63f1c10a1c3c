package engine

import (
	"fmt"

	"github.com/custodian-run/custodian/store"
)

// Event is one line of a run's history: something a command did, with its
// time and step.
type Event = store.Event

// EventType says what an event records.
type EventType = store.EventType

// The events of a run's history.
const (
	EventStart   = store.EventStart   // the run started
	EventStep    = store.EventStep    // a step gave an outcome
	EventHandout = store.EventHandout // a job was handed out
	EventAccept  = store.EventAccept  // a job's output was accepted
	EventRefuse  = store.EventRefuse  // an attempt failed
	EventSpare   = store.EventSpare   // a hand-out no worker attempted was not charged
	EventReopen  = store.EventReopen  // an accepted job was handed out again
	EventCarry   = store.EventCarry   // an accepted job carried over to a new name
	EventAbandon = store.EventAbandon // the operator ended the run for good
	EventLaunch  = store.EventLaunch  // drive launched a worker, and how it ended
	EventKeep    = store.EventKeep    // a file was moved aside
	EventBlock   = store.EventBlock   // a step gave a block
	EventEffect  = store.EventEffect  // an effect's journal changed
	EventRelease = store.EventRelease // the operator released a subject
	EventResolve = store.EventResolve // the operator resolved an effect
	EventDecide  = store.EventDecide  // the operator chose on a question the definition asked
	EventReport  = store.EventReport  // the agent orchestrator reported
)

// Log returns the run's history, oldest first: its start, the events of
// every committed command, and the agent orchestrator's reports, each after
// the command that preceded it. It takes no lock and writes nothing.
func (run *Run) Log() ([]Event, error) {
	rec, err := run.read()
	if err != nil {
		return nil, err
	}
	seq, reports := rec.state.Seq, rec.reports
	history, err := run.records.History(seq)
	if err != nil {
		return nil, err
	}
	params := run.params.String()
	if len(run.params) > 0 {
		params = "parameters " + params
	}
	events := []store.Event{{Type: store.EventStart, At: run.records.Record.StartedAt, Subject: run.records.Record.Definition,
		Text: fmt.Sprintf("version %s, %s", run.records.Record.Version, params)}}
	r := 0
	addReports := func(upTo int) {
		for ; r < len(reports) && reports[r].Seq <= upTo; r++ {
			rep := reports[r]
			events = append(events, store.Event{Type: store.EventReport, Seq: rep.Seq, Step: rep.Step, At: rep.At,
				Subject: rep.Job, Attempt: rep.Number, Kind: rep.Event, Text: rep.Text})
		}
	}
	addReports(0)
	for _, e := range history {
		addReports(e.Seq - 1)
		events = append(events, e)
	}
	addReports(seq)
	return events, nil
}
