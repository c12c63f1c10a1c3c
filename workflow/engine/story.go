package engine

import (
	"maps"
	"path"
	"slices"

	"github.com/custodian-run/custodian/internal/names"
	"github.com/custodian-run/custodian/store"
)

// JobStory is one job's whole story, read from the run's records: where it
// stands, every hand-out with what followed it, and the evidence of every
// launch of it that custodian drive made. Paths are absolute.
type JobStory struct {
	Run string `json:"run"`
	Job string `json:"job"`
	// Status is where the job stands, as Status shows it; nil for a name
	// the state no longer has: one a job was carried over from.
	Status *JobStatus `json:"status"`
	// Output is the job's output as it was last handed out; "" before.
	Output string `json:"output"`
	// Before are the job's events before its first hand-out: a carry-over
	// from a former name, or a file that lay at its output and was kept
	// aside when it was first handed out.
	Before []Event `json:"before"`
	// Handouts are the job's hand-outs, oldest first.
	Handouts []HandoutStory `json:"handouts"`
	// Workers are the job's workers a custodian drive has in flight that
	// still run (all of them, on another host).
	Workers []Lease `json:"workers"`
}

// HandoutStory is one hand-out of a job and what followed it, up to the
// next hand-out.
type HandoutStory struct {
	Attempt int    `json:"attempt"` // as the prompt and the log number it: a hand-out not charged is handed out again with its number
	Step    int    `json:"step"`    // the step that handed it out
	At      string `json:"at"`
	Prompt  string `json:"prompt"`
	// Events are the job's events after the hand-out, oldest first, as the
	// history records them, with their paths absolute: drive's launches,
	// the verdict (accept, refuse with its kind, reason and messages, or a
	// spare), the files kept aside (keep: Text the file's name, Path where
	// it was kept), a block and its record, the reports that name the job,
	// a release, and the reopening of an accepted job.
	Events []Event `json:"events"`
	// Launches are custodian drive's launches for the hand-out: those the
	// history records, in its order, then those whose evidence is kept and
	// whose end the history lacks.
	Launches []LaunchStory `json:"launches"`
}

// LaunchStory is one launch of a worker by custodian drive, from the
// history's launch event and from the evidence it kept.
type LaunchStory struct {
	// Launch is n of jobs/<job>/launch-<n>/; 0 for a hand-out that drive
	// did not launch, which has no evidence.
	Launch  int    `json:"launch"`
	Attempt int    `json:"attempt"`
	Outcome string `json:"outcome"` // finished, failed-to-start, timed-out, idle, usage-limited, killed, interrupted, not-launched, ...
	Text    string `json:"text"`    // the outcome with the exit status or signal, as the log says it
	// Recorded says the history records the launch's end, at Step and At.
	// A launch whose evidence is kept and whose end is not was kept by a
	// drive that ended before it committed.
	Recorded bool   `json:"recorded"`
	Step     int    `json:"step"`
	At       string `json:"at"`
	Evidence string `json:"evidence"` // the directory of launch.json, stdout and stderr; "" when none
	Stdout   string `json:"stdout"`   // the tail of the worker's stdout, as kept
	Stderr   string `json:"stderr"`
	// Record is the launch's launch.json, nil when it is missing: a drive
	// ended while it kept the evidence.
	Record *Launch `json:"record"`
}

// Story reads one job's whole story: its status, its hand-outs and what
// followed each, and custodian drive's launches with their evidence. A job
// that neither the state nor the history knows is refused, as LogOf
// refuses it. It takes no lock, judges nothing and writes nothing.
func (run *Run) Story(job string) (JobStory, error) {
	if job == "" {
		return JobStory{}, refused("name the job with --job NAME", "a story is of one job, and no job is named")
	}
	rec, err := run.read()
	if err != nil {
		return JobStory{}, err
	}
	history, err := run.records.History(rec.state.Seq)
	if err != nil {
		return JobStory{}, err
	}
	if err := run.knowsJob(rec.state, history, job); err != nil {
		return JobStory{}, err
	}
	stories, err := run.stories(rec, history, []string{job})
	if err != nil {
		return JobStory{}, err
	}
	return stories[0], nil
}

// Stories reads the story of every job the last replay named, by name,
// with one read of the records: what a run's page shows. It takes no
// lock, judges nothing and writes nothing.
func (run *Run) Stories() ([]JobStory, error) {
	rec, err := run.read()
	if err != nil {
		return nil, err
	}
	history, err := run.records.History(rec.state.Seq)
	if err != nil {
		return nil, err
	}
	return run.stories(rec, history, rec.state.Named)
}

// stories tells the stories of jobs, in the order given, from the records
// rec and their history, in one pass over the history.
func (run *Run) stories(rec *loaded, history []Event, jobs []string) ([]JobStory, error) {
	st := rec.state
	last, settled, _, err := run.readHistory(history)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, name := range st.Named {
		named[name] = true
	}
	standing := Status{Last: last, Settled: settled}.standing()
	launches, spares := lastLaunches(run, history)
	workers, _, _ := liveWorkers(rec.round)
	stories := make([]JobStory, len(jobs))
	byName := make(map[string]*JobStory, len(jobs))
	kept := make(map[string]map[int]*Launch, len(jobs))
	for i, job := range jobs {
		s := &stories[i]
		*s = JobStory{Run: run.records.Dir, Job: job, Before: []Event{}, Handouts: []HandoutStory{}, Workers: []Lease{}}
		byName[job] = s
		if js := st.Jobs[job]; js != nil {
			status, err := run.jobStatus(run.records.Files(), st, job, named, standing, true)
			if err != nil {
				return nil, err
			}
			status.LastLaunch, status.Spare = launches[job], spares[job]
			s.Status = &status
			if js.Input != nil {
				s.Output = run.abs(js.Input.Output)
			}
		}
		if kept[job], err = run.keptLaunches(job); err != nil {
			return nil, err
		}
		for _, w := range workers {
			if w.Job == job {
				s.Workers = append(s.Workers, w)
			}
		}
	}
	told := map[string]map[int]bool{}
	for _, e := range mergeReports(history, rec.reports, st.Seq) {
		if e.Path != "" {
			e.Path = run.abs(e.Path)
		}
		for _, job := range eventJobs(e) {
			if s := byName[job]; s != nil {
				if told[job] == nil {
					told[job] = map[int]bool{}
				}
				run.tell(s, e, kept[job], told[job])
			}
		}
	}
	for _, job := range jobs {
		run.tellKept(byName[job], kept[job], told[job])
	}
	return stories, nil
}

// tell adds the event e to the story s: a hand-out begins a part of its
// own, and what follows goes with the hand-out before it. told notes the
// kept launches a launch event names.
func (run *Run) tell(s *JobStory, e Event, kept map[int]*Launch, told map[int]bool) {
	if e.Type == store.EventHandout {
		s.Handouts = append(s.Handouts, HandoutStory{Attempt: e.Attempt, Step: e.Step, At: e.At, Prompt: e.Path,
			Events: []Event{}, Launches: []LaunchStory{}})
		return
	}
	n := len(s.Handouts)
	if n == 0 {
		s.Before = append(s.Before, e)
		return
	}
	ho := &s.Handouts[n-1]
	ho.Events = append(ho.Events, e)
	if e.Type != store.EventLaunch {
		return
	}
	l := LaunchStory{Attempt: e.Attempt, Outcome: e.Kind, Text: e.Text, Recorded: true, Step: e.Step, At: e.At}
	for k, record := range kept {
		if e.Path == run.abs(store.LaunchDir(s.Job, k)) {
			run.launchEvidence(&l, s.Job, k, record)
			told[k] = true
		}
	}
	if l.Launch == 0 && e.Path != "" {
		l.Evidence = e.Path // where the history says, though nothing is kept there
	}
	ho.Launches = append(ho.Launches, l)
}

// tellKept adds to the story s the launches whose evidence is kept and
// whose end the history lacks.
func (run *Run) tellKept(s *JobStory, kept map[int]*Launch, told map[int]bool) {
	for _, k := range slices.Sorted(maps.Keys(kept)) {
		record := kept[k]
		if told[k] || len(s.Handouts) == 0 {
			continue
		}
		// The hand-out it worked on, by its record; the last one when the
		// record is missing.
		ho := &s.Handouts[len(s.Handouts)-1]
		for i := range s.Handouts {
			if record != nil && s.Handouts[i].Attempt == record.Attempt {
				ho = &s.Handouts[i]
			}
		}
		l := LaunchStory{}
		if record != nil {
			l.Attempt, l.Outcome = record.Attempt, record.Outcome
			l.Text, _, _ = launchEnd(record)
		}
		run.launchEvidence(&l, s.Job, k, record)
		ho.Launches = append(ho.Launches, l)
	}
}

// launchEvidence fills in where the evidence of the job's launch n is, and
// its record.
func (run *Run) launchEvidence(l *LaunchStory, job string, n int, record *Launch) {
	dir := store.LaunchDir(job, n)
	l.Launch, l.Record = n, record
	l.Evidence, l.Stdout, l.Stderr = run.abs(dir), run.abs(path.Join(dir, "stdout")), run.abs(path.Join(dir, "stderr"))
}

// keptLaunches reads the records of the job's launches whose evidence is
// kept, by number: nil for one whose launch.json is missing. A name that
// is not a job's has none.
func (run *Run) keptLaunches(job string) (map[int]*Launch, error) {
	kept := map[int]*Launch{}
	if !names.Valid(job) {
		return kept, nil
	}
	numbers, err := run.records.Launches(job)
	if err != nil {
		return nil, err
	}
	for _, n := range numbers {
		info, err := run.records.Stat(path.Join(store.LaunchDir(job, n), "launch.json"))
		if err != nil {
			return nil, err
		}
		if info.Kind == store.Missing {
			kept[n] = nil
			continue
		}
		if kept[n], err = run.records.LoadLaunch(job, n); err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// lastLaunches returns, by job, the last launch the history records and
// why the last hand-out not charged was not.
func lastLaunches(run *Run, history []store.Event) (map[string]*LaunchStatus, map[string]string) {
	launches, spares := map[string]*LaunchStatus{}, map[string]string{}
	for _, e := range history {
		switch e.Type {
		case store.EventLaunch:
			launches[e.Subject] = &LaunchStatus{Attempt: e.Attempt, Outcome: e.Kind, Text: e.Text, Evidence: run.abs(e.Path)}
		case store.EventSpare:
			spares[e.Subject] = e.Text
		}
	}
	return launches, spares
}
