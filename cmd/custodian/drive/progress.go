package drive

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/custodian-run/custodian/workflow/engine"
	"golang.org/x/term"
)

// EventKind names what happened in a drive.
type EventKind string

// The events of a drive, with the fields of Event each one sets.
const (
	EventRound        EventKind = "round"         // a step handed out jobs to launch: Round (the step's number in the run; 0: taken over), Jobs
	EventLaunched     EventKind = "launched"      // a worker started: Job, Attempt, Pid
	EventOutput       EventKind = "output"        // a worker wrote a line: Job, Text
	EventEnded        EventKind = "ended"         // a worker ended: Job, Outcome, Status, Duration
	EventLaunchFailed EventKind = "launch-failed" // a job could not be launched: Job, Text
	EventPaused       EventKind = "paused"        // launching waits out a usage limit: Until, Job, Text
	EventResumed      EventKind = "resumed"       // launching goes on
	EventStep         EventKind = "step"          // a step ended: Round (its number in the run), Outcome (its outcome word)
	EventDecided      EventKind = "decided"       // what the step decided: Decided
	EventInterrupted  EventKind = "interrupted"   // a signal stops the drive; its workers are being ended
	EventFlow         EventKind = "flow"          // after a step, the work in flight: Flow
)

// Flow is the work a drive has in flight after a step: the jobs whose
// workers still run, which the step left alone; the hand-outs ready to
// launch, waiting for a place under --max-parallel; and how many workers
// ended since the step before, whose outputs the step judged.
type Flow struct {
	Running []string `json:"running"`
	Queued  int      `json:"queued"`
	Judged  int      `json:"judged"`
}

// Event is one thing that happened in a drive, for a Sink to show. Time is
// when; a sink sets it to its own clock's time when it is zero.
type Event struct {
	Kind     EventKind     `json:"event"`
	Time     time.Time     `json:"time"`
	Round    int           `json:"round,omitzero"`
	Jobs     []string      `json:"jobs,omitempty"`
	Job      string        `json:"job,omitzero"`
	Attempt  int           `json:"attempt,omitzero"`
	Pid      int           `json:"pid,omitzero"`
	Outcome  string        `json:"outcome,omitzero"` // a worker's Outcome, or a step's outcome word
	Status   string        `json:"status,omitzero"`  // how the worker's process ended: Result.Status
	Duration time.Duration `json:"-"`                // how long the worker ran
	Until    time.Time     `json:"until,omitzero"`
	Text     string        `json:"text,omitzero"` // a line of output, or what went wrong
	// Decided is what a step decided: what it accepted, refused, spared,
	// reopened and handed out, the effects it ran, its blocks.
	Decided *engine.Decisions `json:"decided,omitempty"`
	Flow    *Flow             `json:"flow,omitempty"`
}

// MarshalJSON renders the event as one object, with the duration in
// seconds.
func (e Event) MarshalJSON() ([]byte, error) {
	type fields Event // without this method
	return json.Marshal(struct {
		fields
		Seconds float64 `json:"seconds,omitzero"`
	}{fields(e), e.Duration.Seconds()})
}

// String describes the event in one line, without its time.
func (e Event) String() string {
	switch e.Kind {
	case EventRound:
		noun := "jobs"
		if len(e.Jobs) == 1 {
			noun = "job"
		}
		if e.Round == 0 {
			return fmt.Sprintf("taking over %d %s handed out before this drive: %s", len(e.Jobs), noun, listed(e.Jobs))
		}
		return fmt.Sprintf("step %d handed out %d %s: %s", e.Round, len(e.Jobs), noun, listed(e.Jobs))
	case EventLaunched:
		return fmt.Sprintf("%s: launched, attempt %d, pid %d", e.Job, e.Attempt, e.Pid)
	case EventOutput:
		return e.Job + ": " + e.Text
	case EventEnded:
		return fmt.Sprintf("%s: %s, %s, after %s", e.Job, e.Outcome, e.Status, e.Duration.Round(100*time.Millisecond))
	case EventLaunchFailed:
		return e.Job + ": launch failed: " + e.Text
	case EventPaused:
		return fmt.Sprintf("paused for a usage limit until %s (%s: %s)", e.Until.Format(time.DateTime+" MST"), e.Job, e.Text)
	case EventResumed:
		return "resumed after the usage limit"
	case EventStep:
		if e.Round > 0 {
			return fmt.Sprintf("step %d: %s", e.Round, e.Outcome)
		}
		return "step: " + e.Outcome
	case EventDecided:
		return decidedText(e.Decided)
	case EventInterrupted:
		return "interrupted: ending the workers"
	case EventFlow:
		if e.Flow == nil {
			return "flow"
		}
		return fmt.Sprintf("flow: %d running, %d ready to launch, %d judged", len(e.Flow.Running), e.Flow.Queued, e.Flow.Judged)
	}
	return string(e.Kind)
}

// logged says whether a line of the event goes in a log a person reads:
// not a worker's output, which would swamp the events (the evidence of
// each launch keeps it), nor a step's hand-outs, which the line of what
// the step decided names already.
func (e Event) logged() bool {
	return e.Kind != EventOutput && (e.Kind != EventRound || e.Round == 0)
}

// Sink shows a drive's events as they happen. Its methods are safe for
// concurrent use: workers' output arrives from their own goroutines. A
// write that fails does not stop the drive; Close returns the first such
// error.
type Sink interface {
	Emit(Event)
	Close() error
}

// NewSink returns the sink for w: JSON lines when asJSON; the live view
// when w is a terminal that understands cursor movement; plain lines
// otherwise.
func NewSink(w io.Writer, asJSON bool) Sink {
	f, isFile := w.(*os.File)
	switch {
	case asJSON:
		return NewJSONLines(w)
	case isFile && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb":
		fd := int(f.Fd())
		size := func() (int, int) {
			width, height, _ := term.GetSize(fd)
			return width, height
		}
		return NewLive(w, size, time.Now)
	default:
		return NewPlain(w)
	}
}

// writer writes for a sink, and keeps the first error.
type writer struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// write writes s whole, in one call, so that lines from several sinks or
// processes on one file do not interleave; mu must be held.
func (w *writer) write(s string) {
	if _, err := io.WriteString(w.w, s); err != nil && w.err == nil {
		w.err = err
	}
}

func stamp(e *Event, now func() time.Time) {
	if e.Time.IsZero() {
		e.Time = now()
	}
}

// Plain writes one line per event, its time first, for a log or a pipe.
// It leaves out the workers' output, which would swamp the events; the
// evidence of each launch keeps it whole.
type Plain struct{ out writer }

// NewPlain returns a sink that writes plain lines to w.
func NewPlain(w io.Writer) *Plain { return &Plain{out: writer{w: w}} }

// Emit writes the event's line.
func (p *Plain) Emit(e Event) {
	if !e.logged() {
		return
	}
	stamp(&e, time.Now)
	p.out.mu.Lock()
	defer p.out.mu.Unlock()
	p.out.write(e.Time.Format(time.TimeOnly) + " " + e.String() + "\n")
}

// Close returns the first error in writing.
func (p *Plain) Close() error {
	p.out.mu.Lock()
	defer p.out.mu.Unlock()
	return p.out.err
}

// JSONLines writes each event as one JSON object on a line of its own,
// for a program to read.
type JSONLines struct{ out writer }

// NewJSONLines returns a sink that writes JSON lines to w.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{out: writer{w: w}} }

// Emit writes the event's object.
func (j *JSONLines) Emit(e Event) {
	stamp(&e, time.Now)
	data, err := json.Marshal(e)
	j.out.mu.Lock()
	defer j.out.mu.Unlock()
	if err != nil {
		j.out.err = cmp.Or(j.out.err, err)
		return
	}
	j.out.write(string(data) + "\n")
}

// Close returns the first error in writing.
func (j *JSONLines) Close() error {
	j.out.mu.Lock()
	defer j.out.mu.Unlock()
	return j.out.err
}

// decidedText says what a step decided in one line, alike refusals and
// blocks once: "step 3 decided: accepted 28; refused 2 (no-output): a, b;
// handed out 2: a, b; effect publish completed".
func decidedText(dec *engine.Decisions) string {
	if dec == nil {
		return "step decided nothing"
	}
	parts := []string{fmt.Sprintf("accepted %d", len(dec.Accepted))}
	kinds, byKind := []engine.BlockKind{}, map[engine.BlockKind][]string{}
	for _, r := range dec.Refused {
		if byKind[r.Kind] == nil {
			kinds = append(kinds, r.Kind)
		}
		byKind[r.Kind] = append(byKind[r.Kind], r.Job)
	}
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("refused %d (%s): %s", len(byKind[k]), k, listed(byKind[k])))
	}
	if len(dec.Spared) > 0 {
		parts = append(parts, fmt.Sprintf("not charged %d (no worker attempted them): %s", len(dec.Spared), listed(dec.Spared)))
	}
	if len(dec.Reopened) > 0 {
		parts = append(parts, fmt.Sprintf("reopened %d: %s", len(dec.Reopened), listed(dec.Reopened)))
	}
	if len(dec.HandedOut) > 0 {
		parts = append(parts, fmt.Sprintf("handed out %d: %s", len(dec.HandedOut), listed(dec.HandedOut)))
	}
	for _, e := range dec.Effects {
		parts = append(parts, "effect "+e.Name+" "+e.Status)
	}
	blocked, byBlock := []engine.BlockKind{}, map[engine.BlockKind][]string{}
	for _, b := range dec.Blocks {
		if byBlock[b.Kind] == nil {
			blocked = append(blocked, b.Kind)
		}
		byBlock[b.Kind] = append(byBlock[b.Kind], b.Subject.String())
	}
	for _, k := range blocked {
		parts = append(parts, fmt.Sprintf("blocked %d (%s): %s", len(byBlock[k]), k, listed(byBlock[k])))
	}
	return fmt.Sprintf("step %d decided: %s", dec.Step, strings.Join(parts, "; "))
}
