package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"time"

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
func (run *Run) Log() ([]Event, error) { return run.LogOf(LogFilter{}) }

// LogFilter picks the events of a run's history that a log shows. Its
// zero value keeps every event.
type LogFilter struct {
	// Job keeps only the events about the job of this name: its hand-outs,
	// verdicts, spares, reopenings, carry-overs (under its new name or its
	// former one), kept files, blocks, drive's launches, releases and the
	// reports that name it. "" keeps the events of every subject.
	Job string
	// Since keeps only the events of step Since and later: a step's own
	// event and what follows it until the next step. The start and the
	// reports made before the first step belong to step 0, so that 0 (or
	// less) keeps them and 1 does not.
	Since int
}

// Keeps says whether the filter keeps the event e.
func (f LogFilter) Keeps(e Event) bool {
	if e.Step < f.Since {
		return false
	}
	return f.Job == "" || slices.Contains(eventJobs(e), f.Job)
}

// eventJobs names the jobs an event is about: none for an event about the
// run, the workflow, an effect or a question. An effect's event names the
// effect alone, which may be a job's name too, so the event's type says
// what its subject is.
func eventJobs(e Event) []string {
	switch e.Type {
	case store.EventHandout, store.EventAccept, store.EventRefuse, store.EventSpare, store.EventReopen,
		store.EventKeep, store.EventBlock, store.EventLaunch, store.EventRelease, store.EventReport:
		if name, ok := Subject(e.Subject).Job(); ok {
			return []string{name}
		}
	case store.EventCarry:
		// A carry-over ends the story of its former name and begins its new
		// one's.
		return []string{e.Subject, e.Text}
	}
	return nil
}

// LogOf returns the events of the run's history that f keeps, oldest first,
// as Log orders them. A job that neither the state nor the history knows
// is refused: a name mistyped would otherwise read as a job that did
// nothing. It takes no lock and writes nothing.
func (run *Run) LogOf(f LogFilter) ([]Event, error) {
	events, _, err := run.logFrom(f)
	return events, err
}

// logFrom reads what LogOf returns, and the point the history it read
// ends at.
func (run *Run) logFrom(f LogFilter) ([]Event, logPoint, error) {
	rec, err := run.read()
	if err != nil {
		return nil, logPoint{}, err
	}
	history, err := run.records.History(rec.state.Seq)
	if err != nil {
		return nil, logPoint{}, err
	}
	if err := run.knowsJob(rec.state, history, f.Job); err != nil {
		return nil, logPoint{}, err
	}
	events := append([]Event{run.startEvent()}, mergeReports(history, rec.reports, rec.state.Seq)...)
	return slices.DeleteFunc(events, func(e Event) bool { return !f.Keeps(e) }), logPoint{rec.state.Seq, len(rec.reports)}, nil
}

// logPoint is how far a log has read: the committed commands and reports
// it has shown.
type logPoint struct{ seq, reports int }

// FollowInterval is how often Follow looks whether a command has
// committed. A person watching sees an event about a third of a second
// after its command commits, at most; a run that nothing changes costs one
// lstat of state.json each time, and each commit one reading of the
// records, as any command's, and of the new history files alone.
const FollowInterval = 300 * time.Millisecond

// Follow calls emit with the events of the run's history that f keeps, as
// LogOf returns them, and then with those of every command that commits
// after, as it commits, until ctx is done, when it returns nil. It calls
// emit only with events to show, and never while ctx is done.
//
// It takes no lock and writes nothing. It looks at state.json's identity
// every FollowInterval; when the state was replaced, it reads every record
// as any command does, and the history files the state counts that it has
// not read. A history file numbered past the count is a command not yet
// committed, and is left for the state that counts it. A record that cannot
// be trusted, or a state that counts fewer commands or reports than it did,
// ends it with that error.
func (run *Run) Follow(ctx context.Context, f LogFilter, emit func([]Event) error) error {
	stateRel := path.Join(store.StateDir, "state.json")
	// The identity is taken before the records are read, so that a
	// command that commits in between is read at the next look.
	seen, err := run.records.Stat(stateRel)
	if err != nil {
		return err
	}
	events, at, err := run.logFrom(f)
	if err != nil {
		return err
	}
	if err := emitKept(ctx, emit, events); err != nil {
		return err
	}
	tick := time.NewTicker(FollowInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		info, err := run.records.Stat(stateRel)
		if err != nil {
			return err
		}
		if info == seen {
			continue
		}
		seen = info
		var events []Event
		if events, at, err = run.logAfter(at); err != nil {
			return err
		}
		kept := slices.DeleteFunc(events, func(e Event) bool { return !f.Keeps(e) })
		if err := emitKept(ctx, emit, kept); err != nil {
			return err
		}
	}
}

// emitKept calls emit with events, unless there are none or ctx is done.
func emitKept(ctx context.Context, emit func([]Event) error, events []Event) error {
	if len(events) == 0 || ctx.Err() != nil {
		return nil
	}
	return emit(events)
}

// logAfter reads the records anew, and returns the events committed after
// the point at: the history files and reports the state now counts and
// at does not.
func (run *Run) logAfter(at logPoint) ([]Event, logPoint, error) {
	rec, err := run.read()
	if err != nil {
		return nil, at, err
	}
	now := logPoint{rec.state.Seq, len(rec.reports)}
	switch {
	case now.seq < at.seq:
		return nil, at, &store.RecordError{Path: run.records.StatePath("state.json"),
			Err: fmt.Errorf("its seq went back from %d to %d: an older state was put in the place of the one read before", at.seq, now.seq)}
	case now.reports < at.reports:
		return nil, at, &store.RecordError{Path: run.records.StatePath("state.json"),
			Err: fmt.Errorf("its count of reports went back from %d to %d: an older state was put in the place of the one read before", at.reports, now.reports)}
	}
	var history []Event
	for seq := at.seq + 1; seq <= now.seq; seq++ {
		more, err := run.records.HistoryOf(seq)
		if err != nil {
			return nil, at, err
		}
		history = append(history, more...)
	}
	return mergeReports(history, rec.reports[at.reports:], now.seq), now, nil
}

// startEvent is the first event of every log: the run's start, as run.json
// records it.
func (run *Run) startEvent() Event {
	params := run.params.String()
	if len(run.params) > 0 {
		params = "parameters " + params
	}
	rec := run.records.Record
	return store.Event{Type: store.EventStart, At: rec.StartedAt, Subject: rec.Definition,
		Text: fmt.Sprintf("version %s, %s", rec.Version, params)}
}

// mergeReports puts reports among history, the events of the commands up
// to upTo: each report after the command that preceded it, and those made
// after the last of them at the end.
func mergeReports(history []Event, reports []store.Report, upTo int) []Event {
	events := make([]Event, 0, len(history)+len(reports))
	r := 0
	addReports := func(upTo int) {
		for ; r < len(reports) && reports[r].Seq <= upTo; r++ {
			rep := reports[r]
			// Filled in as a history file's line is, so that a report
			// reads, and encodes, as any other event.
			events = append(events, store.Event{Format: store.EventFormat, Type: store.EventReport, Seq: rep.Seq, Step: rep.Step, At: rep.At,
				Subject: rep.Job, Attempt: rep.Number, Kind: rep.Event, Text: rep.Text, Messages: []string{}, Outcome: json.RawMessage("null")})
		}
	}
	for _, e := range history {
		addReports(e.Seq - 1)
		events = append(events, e)
	}
	addReports(upTo)
	return events
}

// knowsJob refuses a job name that neither the state nor the history
// knows; "" names no job and is known. The hint names a few of the jobs the
// run has.
func (run *Run) knowsJob(st *store.State, history []Event, job string) error {
	if job == "" || st.Jobs[job] != nil {
		return nil
	}
	known := map[string]bool{}
	for name := range st.Jobs {
		known[name] = true
	}
	for _, e := range history {
		for _, name := range eventJobs(e) {
			known[name] = true
		}
	}
	if known[job] {
		return nil
	}
	hint := "the run has named no job yet: a step names them"
	if len(known) > 0 {
		hint = fmt.Sprintf("name one of the run's jobs (%s); custodian status %s lists them",
			listed(slices.Sorted(maps.Keys(known))), shellQuote(run.records.Dir))
	}
	return refused(hint, "run %s has no job %q", run.records.Dir, job)
}
