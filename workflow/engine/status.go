package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
)

// Job states in a Status, from what the records say.
const (
	JobAccepted     = "accepted"        // the output is accepted
	JobAwaited      = "awaited"         // handed out; its output is awaited
	JobBlocked      = "blocked"         // blocked in the last step; a repair is permitted
	JobStopped      = "stopped"         // stopped until the operator releases it
	JobPending      = "pending"         // to be handed out when a step next reaches it
	JobNoLongerUsed = "no longer named" // the last replay did not name it
)

// Status is where a run stands, read from its records without judging,
// counting or writing anything.
type Status struct {
	Run        string          `json:"run"`
	Definition string          `json:"definition"`
	Params     workflow.Params `json:"params"`
	StartedAt  string          `json:"started_at"`
	// Version is the custodian that started the run.
	Version string `json:"version"`
	// Builds are the builds that started the run, that last stepped it,
	// that its accepted jobs were last held against, and this binary's.
	Builds Builds `json:"builds"`
	// Patches are the patches the run was started with.
	Patches  []string       `json:"patches"`
	Steps    int            `json:"steps"`
	Last     *LastStep      `json:"last"` // nil before the first step
	Jobs     []JobStatus    `json:"jobs"`
	Effects  []EffectStatus `json:"effects"`
	Workflow *Block         `json:"workflow"` // the workflow's standing stop, if any
	// Blocks are what stands of the last outcome's blocks on subjects that
	// Jobs and Effects do not list: the workflow's blocks that permit a
	// repair, and effects without a journal.
	Blocks []Block `json:"blocks"`
	// Uncertain are the effects the last outcome found uncertain that have
	// no journal to list them under Effects.
	Uncertain []EffectState `json:"uncertain"`
	// Settled names what the operator released (workflow, a job) or
	// resolved (an effect) since the last step: what the last outcome says
	// of them no longer stands.
	Settled []Subject `json:"settled"`
	// Driven says the last step was a custodian drive's: the loop that
	// goes on is drive, not a harness.
	Driven bool `json:"driven"`
	// Abandoned is set when the operator ended the run for good.
	Abandoned *store.Abandon `json:"abandoned"`
	// Questions are what the definition asked the operator at the last
	// step and has no choice for (Context.Decide), by name; Decisions the
	// choices the operator recorded, by name.
	Questions []QuestionStatus `json:"questions"`
	Decisions []DecisionStatus `json:"decisions"`
	// StopReport is the agent orchestrator's report that it stopped, made
	// after the last step: the run waits for the operator.
	StopReport *Report `json:"stop_report"`
	// Round is what a drive has in flight: the drive, while it runs (Pid
	// 0 when it has ended), and those of its workers that still run (all,
	// on another host); nil when neither runs.
	Round    *Round `json:"round"`
	Agent    string `json:"agent"`    // what the agent orchestrator may do now
	Operator string `json:"operator"` // what the operator may do now
}

// QuestionStatus is a question the run waits on, and its block's record.
type QuestionStatus struct {
	Name    string   `json:"name"`
	Text    string   `json:"text"`
	Choices []string `json:"choices"`
	Record  string   `json:"record"`
}

// DecisionStatus is a choice the operator recorded, and why.
type DecisionStatus struct {
	Name   string `json:"name"`
	Choice string `json:"choice"`
	Text   string `json:"text"`
	At     string `json:"at"`
}

// LastStep is the outcome of the run's last step.
type LastStep struct {
	Step    int     `json:"step"`
	At      string  `json:"at"`
	Outcome Outcome `json:"outcome"`
}

// JobStatus is where one job stands.
type JobStatus struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Attempts int    `json:"attempts"` // attempts in the run: hand-outs, but those spared
	// Spared counts the hand-outs of the job that no worker attempted,
	// which were not charged; Spare says why the last one was not.
	Spared      int      `json:"spared"`
	Spare       string   `json:"spare"`
	LastFailure *Failure `json:"last_failure"`
	Block       *Block   `json:"block"` // blocked or stopped: why, and what is permitted
	// Changed names, for an accepted job, the recorded inputs ("input PATH")
	// and the output ("output PATH") whose bytes differ from the acceptance,
	// with " (removed)" for one that is gone: the next step will reopen it.
	// A changed prompt or launch parameters show only when a step replays.
	Changed []string `json:"changed"`
	// LastLaunch is the last launch of the job that custodian drive made,
	// or nil.
	LastLaunch *LaunchStatus `json:"last_launch"`
}

// LaunchStatus is how a launch of a worker by custodian drive ended, and
// where its evidence is.
type LaunchStatus struct {
	Attempt  int    `json:"attempt"`
	Outcome  string `json:"outcome"`  // finished, failed-to-start, timed-out, idle, usage-limited or killed
	Text     string `json:"text"`     // the outcome with the exit status or signal
	Evidence string `json:"evidence"` // the directory of launch.json, stdout and stderr
}

// EffectStatus is what an effect's journal says.
type EffectStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"` // started, completed or absent
	Runs   int    `json:"runs"`
	At     string `json:"at"`
	By     string `json:"by"`
	// Changed names the inputs of a started or completed effect that changed
	// since it was journaled; an absent one is journaled anew when it runs.
	Changed []string `json:"changed"`
	// Interrupted: the journal says started, and no committed command has
	// recorded that start. A step is inside the effect now, or a process
	// ended inside it; the next step asks its recognizer.
	Interrupted bool `json:"interrupted"`
	// Uncertain is what the last outcome said of the effect's fate when it
	// found it uncertain and the operator has not resolved it since.
	Uncertain string `json:"uncertain"`
	// Block is the last outcome's block on the effect, unless the operator
	// resolved it since.
	Block *Block `json:"block"`
}

// Failure is a job's refused or missing attempt, or its block.
type Failure = store.Failure

// Status reads where the run stands. It takes no lock, judges nothing,
// consumes no round and writes nothing: every record is replaced whole, so
// it reads each as it was before or after a running command's write.
func (run *Run) Status() (Status, error) {
	rec, err := run.read()
	if err != nil {
		return Status{}, err
	}
	return run.status(rec, true)
}

// status is Status of the records rec; without changes, it does not look
// for the files of accepted jobs that changed since (JobStatus.Changed), which
// costs a look at every recorded input.
func (run *Run) status(rec *loaded, changes bool) (Status, error) {
	st, effects := rec.state, rec.effects
	history, err := run.records.History(st.Seq)
	if err != nil {
		return Status{}, err
	}
	s := Status{
		Run:        run.records.Dir,
		Definition: run.def.Name,
		Params:     run.params,
		StartedAt:  run.records.Record.StartedAt,
		Version:    run.records.Record.Version,
		Builds:     run.builds(st),
		Patches:    run.records.Record.Patches,
		Steps:      st.Steps,
		Jobs:       []JobStatus{},
		Effects:    []EffectStatus{},
		Blocks:     []Block{},
		Uncertain:  []EffectState{},
		Settled:    []Subject{},
	}
	if s.Last, s.Settled, s.Driven, err = run.readHistory(history); err != nil {
		return Status{}, err
	}
	launches, spares := lastLaunches(run, history)
	workers, _, _ := liveWorkers(rec.round)
	if driving, _ := liveDriver(rec.round); driving || len(workers) > 0 || rec.round != nil && rec.round.Workflow != nil {
		rd := *rec.round
		rd.Workers = workers
		if !driving {
			rd.Driver = Process{}
		}
		s.Round = &rd
	}
	files := run.records.Files()
	standing := s.standing()
	if w := st.Workflow.Stopped; w != nil {
		b := run.stoppedBlock(WorkflowSubject, w)
		s.Workflow = &b
	}
	named := map[string]bool{}
	for _, name := range st.Named {
		named[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(st.Jobs)) {
		js, err := run.jobStatus(files, st, name, named, standing, changes)
		if err != nil {
			return Status{}, err
		}
		js.LastLaunch, js.Spare = launches[name], spares[name]
		s.Jobs = append(s.Jobs, js)
	}
	uncertain := map[string]string{}
	if s.Last != nil {
		for _, e := range s.Last.Outcome.Effects {
			if !slices.Contains(s.Settled, EffectSubject(e.Name)) {
				uncertain[e.Name] = e.Detail
			}
		}
	}
	for _, name := range store.EffectNames(effects) {
		e := effects[name]
		es := EffectStatus{Name: name, Status: e.Status, Runs: e.Runs, At: e.At, By: e.By, Changed: []string{}}
		seen := st.Effects[name]
		es.Interrupted = e.Status == store.EffectStarted && (seen.Status != e.Status || seen.Runs != e.Runs)
		if e.Status != store.EffectAbsent {
			for _, f := range e.Inputs {
				changed, err := fileChange(files, f.Path, f.SHA256)
				if err != nil {
					return Status{}, err
				}
				if changed != "" {
					es.Changed = append(es.Changed, changed)
				}
			}
		}
		es.Uncertain = uncertain[name]
		delete(uncertain, name)
		if b, ok := standing[EffectSubject(name)]; ok {
			es.Block = &b
			delete(standing, EffectSubject(name))
		}
		s.Effects = append(s.Effects, es)
	}
	for _, name := range slices.Sorted(maps.Keys(uncertain)) {
		s.Uncertain = append(s.Uncertain, EffectState{Name: name, Detail: uncertain[name]})
	}
	if s.Last != nil {
		// What is left of the last outcome's blocks belongs to no listed job
		// or effect, in the outcome's order; the workflow's standing stop is
		// shown as s.Workflow.
		for _, b := range s.Last.Outcome.Blocks {
			_, stands := standing[b.Subject]
			if stands && !(b.Subject == WorkflowSubject && s.Workflow != nil) && !isListedJob(s, b.Subject) {
				s.Blocks = append(s.Blocks, b)
			}
		}
	}
	if n := len(rec.reports); n > 0 {
		if last := rec.reports[n-1]; last.Event == ReportStop && last.Step == st.Steps {
			s.StopReport = &last
		}
	}
	s.Abandoned = st.Abandoned
	s.Questions, s.Decisions = []QuestionStatus{}, []DecisionStatus{}
	for _, name := range slices.Sorted(maps.Keys(st.Questions)) {
		q := st.Questions[name]
		s.Questions = append(s.Questions, QuestionStatus{Name: name, Text: q.Text, Choices: q.Choices, Record: run.abs(store.DecisionBlockPath(name))})
	}
	for _, name := range slices.Sorted(maps.Keys(st.Decisions)) {
		d := st.Decisions[name]
		s.Decisions = append(s.Decisions, DecisionStatus{Name: name, Choice: d.Choice, Text: d.Text, At: d.At})
	}
	s.Agent, s.Operator = advice(s)
	return s, nil
}

// standing returns the last outcome's blocks that still stand, by subject:
// those the operator has not released or resolved since.
func (s Status) standing() map[Subject]Block {
	standing := map[Subject]Block{}
	if s.Last != nil {
		for _, b := range s.Last.Outcome.Blocks {
			if !slices.Contains(s.Settled, b.Subject) {
				standing[b.Subject] = b
			}
		}
	}
	return standing
}

func isListedJob(s Status, subject Subject) bool {
	name, ok := subject.Job()
	return ok && slices.ContainsFunc(s.Jobs, func(j JobStatus) bool { return j.Name == name })
}

func (run *Run) jobStatus(files *store.Files, st *store.State, name string, named map[string]bool, blocks map[Subject]Block, changes bool) (JobStatus, error) {
	j := st.Jobs[name]
	js := JobStatus{Name: name, Attempts: attempt(j), Changed: []string{}}
	var stopped *store.Stop
	if t := j.Trouble; t != nil {
		js.LastFailure, stopped, js.Spared = t.LastFailure, t.Stopped, t.Spared
	}
	if j.Accepted != "" && changes {
		for _, f := range j.Input.Files {
			changed, err := fileChange(files, f.Path, f.SHA256)
			if err != nil {
				return js, err
			}
			if changed != "" {
				js.Changed = append(js.Changed, "input "+changed)
			}
		}
		changed, err := fileChange(files, j.Input.Output, j.Accepted)
		if err != nil {
			return js, err
		}
		if changed != "" {
			js.Changed = append(js.Changed, "output "+changed)
		}
	}
	switch {
	case stopped != nil:
		js.State = JobStopped
		b := run.stoppedBlock(JobSubject(name), stopped)
		js.Block = &b
	case st.Replayed > 0 && !named[name]:
		js.State = JobNoLongerUsed
	case j.Accepted != "":
		js.State = JobAccepted
	case j.Outstanding != nil:
		js.State = JobAwaited
	default:
		js.State = JobPending
		// blocks holds what of the last outcome stands: not a released stop.
		if b, ok := blocks[JobSubject(name)]; ok {
			js.State, js.Block = JobBlocked, &b
		}
	}
	return js, nil
}

// fileChange says how the file at key (run-relative or absolute) differs
// from the recorded hash: "" when it does not; otherwise key, marked
// " (removed)" when it is gone and " (added)" when it was absent then.
func fileChange(files *store.Files, key, sum string) (string, error) {
	c, err := files.Hash(key, -1)
	switch {
	case err != nil || c.SHA256 == sum:
		return "", err
	case c.SHA256 == "":
		return key + " (removed)", nil
	case sum == "":
		return key + " (added)", nil
	default:
		return key, nil
	}
}

// readHistory reads what the status needs from the committed history: the
// last step's outcome, and what the operator released, resolved or decided
// after it.
func (run *Run) readHistory(history []store.Event) (last *LastStep, settled []Subject, driven bool, err error) {
	settled = []Subject{}
	for _, e := range history {
		switch e.Type {
		case store.EventStep:
			out, err := run.eventOutcome(e)
			if err != nil {
				return nil, nil, false, err
			}
			last, settled, driven = &LastStep{Step: e.Step, At: e.At, Outcome: out}, []Subject{}, e.Kind == stepByDrive
		case store.EventRelease, store.EventResolve, store.EventDecide:
			subject := Subject(e.Subject)
			if e.Type == store.EventResolve {
				subject = EffectSubject(e.Subject)
			}
			if !slices.Contains(settled, subject) {
				settled = append(settled, subject)
			}
		}
	}
	return last, settled, driven, nil
}

// jobStates are the states of jobs in the order a summary counts them.
var jobStates = []string{JobAccepted, JobAwaited, JobBlocked, JobStopped, JobPending, JobNoLongerUsed}

// Summary counts the run's jobs by state, in one line: "31 jobs: 28
// accepted, 2 awaited, 1 blocked".
func (s Status) Summary() string {
	count := map[string]int{}
	for _, j := range s.Jobs {
		count[j.State]++
	}
	noun := "jobs"
	if len(s.Jobs) == 1 {
		noun = "job"
	}
	var parts []string
	for _, state := range jobStates {
		if n := count[state]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, state))
		}
	}
	if len(parts) == 0 {
		return "0 jobs"
	}
	return fmt.Sprintf("%d %s: %s", len(s.Jobs), noun, strings.Join(parts, ", "))
}
