// Package page writes the HTML pages of runs: a run's page, which `custodian
// view` writes as one self-contained file and `custodian serve` serves live,
// and the index of runs that serve shows.
//
// Every text on a page that comes from a run (a job's name, a refusal's
// message, a worker's reply, a path) is untrusted: the pages are made with
// html/template, which writes each as text in its context, and a page
// carries a content security policy that runs no script but its own.
package page

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"time"

	"github.com/custodian-run/custodian/runlist"
	"github.com/custodian-run/custodian/workflow/engine"
)

//go:embed page.css run.tmpl index.tmpl
var files embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	},
	"css": func() template.CSS { return css },
}).ParseFS(files, "*.tmpl"))

// css is the pages' one style sheet, inlined: a page needs no other file.
var css = func() template.CSS {
	data, err := files.ReadFile("page.css")
	if err != nil {
		panic(err)
	}
	return template.CSS(data)
}()

// Run is what a run's page shows.
type Run struct {
	Status  engine.Status
	Graph   engine.Graph
	Stories []engine.JobStory
	// SVG is the graph laid out (picture.SVG), put on the page as it is:
	// picture writes every text of it escaped.
	SVG []byte
	// Link makes the address of a file of the run from its absolute path:
	// a relative link beside view's file, one of serve's own routes for a
	// served page; "" for none.
	Link func(abs string) string
	// Live is set for a page that follows the run while it is open.
	Live *Live
	// Made is when the page was made, as it says.
	Made time.Time
}

// Live is how a served page follows its run: it listens to Events (server-
// sent events, one for every commit of the run) and fetches Fragment,
// whose main element takes the place of its own. Nonce lets its one script
// run under the page's content security policy.
type Live struct {
	Events   string
	Fragment string
	Nonce    string
}

// WriteRun writes the run's page, whole.
func WriteRun(w io.Writer, r Run) error {
	return templates.ExecuteTemplate(w, "run", runData(r))
}

// WriteRunMain writes only the main element of the run's page: what a live
// page fetches to show a new step.
func WriteRunMain(w io.Writer, r Run) error {
	return templates.ExecuteTemplate(w, "run-main", runData(r))
}

// Index is what the index of runs shows.
type Index struct {
	Dirs    []string
	Entries []runlist.Entry
	// Link makes the address of a run's page from its path.
	Link func(path string) string
	Live *Live
	Made time.Time
}

// WriteIndex writes the index of runs, whole.
func WriteIndex(w io.Writer, x Index) error {
	return templates.ExecuteTemplate(w, "index", indexData(x))
}

// WriteIndexMain writes only the index's main element.
func WriteIndexMain(w io.Writer, x Index) error {
	return templates.ExecuteTemplate(w, "index-main", indexData(x))
}

// indexPage is the index as its template reads it.
type indexPage struct {
	Index
	Rows []indexRow
}

type indexRow struct {
	runlist.Entry
	Link string
}

func indexData(x Index) indexPage {
	p := indexPage{Index: x}
	for _, e := range x.Entries {
		row := indexRow{Entry: e}
		if x.Link != nil && e.State != runlist.Unreadable {
			row.Link = x.Link(e.Path)
		}
		p.Rows = append(p.Rows, row)
	}
	return p
}

// runPage is a run's page as its template reads it.
type runPage struct {
	Run
	SVGHTML  template.HTML // SVG, trusted as picture's own markup
	Jobs     []jobPart
	Timeline timeline
	Step     int // the last step's number, 0 before the first
}

// jobPart is one job's part of the page.
type jobPart struct {
	Name     string
	State    string // the graph's word: accepted, awaited, running, refused, ...
	Open     bool   // shown unfolded: a job not accepted, or one tried more than once
	Story    engine.JobStory
	Handouts []handoutPart
}

// handoutPart is one hand-out of a job, with its links.
type handoutPart struct {
	engine.HandoutStory
	PromptLink string
	Events     []eventPart
	Launches   []launchPart
}

type eventPart struct {
	engine.Event
	Words string
	Link  string
}

type launchPart struct {
	engine.LaunchStory
	EvidenceLink, StdoutLink, StderrLink string
	Started, Ended                       string
	Message                              string
}

func runData(r Run) runPage {
	if r.Link == nil {
		r.Link = func(string) string { return "" }
	}
	p := runPage{Run: r}
	p.SVGHTML = template.HTML(r.SVG)
	if r.Status.Last != nil {
		p.Step = r.Status.Last.Step
	}
	states := map[string]string{}
	for _, n := range r.Graph.Nodes {
		states[n.Subject.String()] = n.State
	}
	for _, s := range r.Stories {
		j := jobPart{Name: s.Job, State: states[s.Job], Story: s}
		if j.State == "" && s.Status != nil {
			j.State = s.Status.State
		}
		j.Open = j.State != engine.NodeAccepted || len(s.Handouts) > 1
		for _, ho := range s.Handouts {
			hp := handoutPart{HandoutStory: ho, PromptLink: r.Link(ho.Prompt)}
			for _, e := range ho.Events {
				if e.Type == engine.EventLaunch {
					continue // shown as a launch, with its evidence
				}
				hp.Events = append(hp.Events, eventPart{Event: e, Words: eventWords(e), Link: r.Link(e.Path)})
			}
			for _, l := range ho.Launches {
				lp := launchPart{LaunchStory: l, EvidenceLink: r.Link(l.Evidence), StdoutLink: r.Link(l.Stdout), StderrLink: r.Link(l.Stderr)}
				if rec := l.Record; rec != nil {
					lp.Started, lp.Ended, lp.Message = rec.StartedAt, rec.EndedAt, rec.Message
				}
				hp.Launches = append(hp.Launches, lp)
			}
			j.Handouts = append(j.Handouts, hp)
		}
		p.Jobs = append(p.Jobs, j)
	}
	p.Timeline = timelineOf(r.Stories)
	return p
}

// eventWords says what an event of a hand-out's story records.
func eventWords(e engine.Event) string {
	switch e.Type {
	case engine.EventAccept:
		return "accepted"
	case engine.EventRefuse:
		return "refused (" + e.Kind + "): " + e.Text
	case engine.EventSpare:
		return "not charged: " + e.Text
	case engine.EventReopen:
		return "reopened: " + e.Text
	case engine.EventKeep:
		return "kept " + e.Text + " aside"
	case engine.EventBlock:
		return "blocked (" + e.Kind + "): " + e.Text
	case engine.EventRelease:
		return "released by the operator"
	case engine.EventReport:
		return "reported " + e.Kind + ": " + e.Text
	case engine.EventCarry:
		return "carried over from " + e.Text
	}
	return string(e.Type) + ": " + e.Text
}

// verdict is the word of a judgment's event, for an attempt's bar.
func verdict(t engine.EventType) string {
	switch t {
	case engine.EventAccept:
		return "accepted"
	case engine.EventRefuse:
		return "refused"
	case engine.EventSpare:
		return "spared"
	}
	return "blocked"
}

// timeline is the attempts of a run laid along the time they took.
type timeline struct {
	Start, End string
	Bars       []bar
}

// bar is one attempt: from its hand-out (or its worker's start) to its
// judgment (or its worker's end), as percentages of the timeline.
type bar struct {
	Job     string
	Attempt int
	From    string
	To      string
	Left    float64
	Width   float64
	Outcome string // accepted, refused, running, ...
	from    time.Time
}

// timelineOf lays every hand-out of the stories along the run's time:
// custodian drive's record says when its worker started and ended; without
// one, the hand-out's step and the step that judged it do.
func timelineOf(stories []engine.JobStory) timeline {
	type span struct {
		job            string
		attempt        int
		from, to       time.Time
		fromAt, toAt   string
		outcome        string
		judged, worked bool
	}
	var spans []span
	for _, s := range stories {
		for _, ho := range s.Handouts {
			sp := span{job: s.Job, attempt: ho.Attempt, fromAt: ho.At, outcome: "awaited"}
			for _, l := range ho.Launches {
				if rec := l.Record; rec != nil && rec.StartedAt != "" && !sp.worked {
					sp.fromAt, sp.worked = rec.StartedAt, true
					if rec.EndedAt != "" {
						sp.toAt = rec.EndedAt
					}
				}
			}
			for _, e := range ho.Events {
				switch e.Type {
				case engine.EventAccept, engine.EventRefuse, engine.EventSpare, engine.EventBlock:
					if !sp.judged {
						sp.judged, sp.outcome = true, verdict(e.Type)
						if !sp.worked || sp.toAt == "" {
							sp.toAt = e.At
						}
					}
				}
			}
			sp.from, _ = time.Parse(time.RFC3339Nano, sp.fromAt)
			sp.to, _ = time.Parse(time.RFC3339Nano, sp.toAt)
			spans = append(spans, sp)
		}
	}
	var tl timeline
	var start, end time.Time
	for _, sp := range spans {
		if !sp.from.IsZero() && (start.IsZero() || sp.from.Before(start)) {
			start = sp.from
		}
		for _, t := range []time.Time{sp.from, sp.to} {
			if t.After(end) {
				end = t
			}
		}
	}
	if start.IsZero() {
		return tl // no attempt, or none with a time a record gives
	}
	total := end.Sub(start).Seconds()
	for _, sp := range spans {
		to := sp.to
		if to.IsZero() {
			to = end // not judged yet: it runs to the timeline's end
		}
		b := bar{Job: sp.job, Attempt: sp.attempt, From: sp.fromAt, To: sp.toAt, Outcome: sp.outcome, from: sp.from}
		if total > 0 {
			b.Left = 100 * sp.from.Sub(start).Seconds() / total
			b.Width = max(0.5, 100*to.Sub(sp.from).Seconds()/total)
		} else {
			b.Width = 100
		}
		tl.Bars = append(tl.Bars, b)
	}
	slices.SortStableFunc(tl.Bars, func(a, b bar) int { return a.from.Compare(b.from) })
	tl.Start, tl.End = start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339)
	return tl
}
