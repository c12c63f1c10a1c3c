package workflow

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/custodian-run/custodian/store"
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
	Run        string         `json:"run"`
	Definition string         `json:"definition"`
	Params     Params         `json:"params"`
	StartedAt  string         `json:"started_at"`
	Steps      int            `json:"steps"`
	Last       *LastStep      `json:"last"` // nil before the first step
	Jobs       []JobStatus    `json:"jobs"`
	Effects    []EffectStatus `json:"effects"`
	Workflow   *Block         `json:"workflow"` // the workflow's standing stop, if any
	Agent      string         `json:"agent"`    // what the agent orchestrator may do now
	Operator   string         `json:"operator"` // what the operator may do now
}

// LastStep is the outcome of the run's last step.
type LastStep struct {
	Step    int     `json:"step"`
	At      string  `json:"at"`
	Outcome Outcome `json:"outcome"`
}

// JobStatus is where one job stands.
type JobStatus struct {
	Name        string         `json:"name"`
	State       string         `json:"state"`
	Attempts    int            `json:"attempts"` // hand-outs in the run
	LastFailure *store.Failure `json:"last_failure"`
	Block       *Block         `json:"block"` // blocked or stopped: why, and what is permitted
	// Changed names, for an accepted job, the recorded inputs and the output
	// whose bytes differ from the acceptance: the next step will reopen it.
	// A changed prompt or launch parameters show only when a step replays.
	Changed []string `json:"changed"`
}

// EffectStatus is what an effect's journal says.
type EffectStatus struct {
	Name    string   `json:"name"`
	Status  string   `json:"status"` // started, completed or absent
	Runs    int      `json:"runs"`
	At      string   `json:"at"`
	By      string   `json:"by"`
	Changed []string `json:"changed"` // inputs that changed since it was journaled
}

// Status reads where the run stands. It takes no lock, judges nothing,
// consumes no round and writes nothing: every record is replaced whole, so
// it reads each as it was before or after a running command's write.
func (o *Orchestrator) Status() (Status, error) {
	st, err := o.run.LoadState()
	if err != nil {
		return Status{}, err
	}
	if st == nil {
		st = store.NewState(InputStateVersion)
	}
	effects, err := o.run.Effects()
	if err != nil {
		return Status{}, err
	}
	s := Status{
		Run:        o.run.Dir,
		Definition: o.def.Name,
		Params:     o.params,
		StartedAt:  o.run.Record.StartedAt,
		Steps:      st.Steps,
		Jobs:       []JobStatus{},
		Effects:    []EffectStatus{},
	}
	if s.Last, err = o.lastStep(st); err != nil {
		return Status{}, err
	}
	blocks := map[string]Block{}
	if s.Last != nil {
		for _, b := range s.Last.Outcome.Blocks {
			blocks[b.Subject] = b
		}
	}
	if w := st.Workflow.Stopped; w != nil {
		b := o.stoppedBlock("workflow", w)
		s.Workflow = &b
	}
	names := make([]string, 0, len(st.Jobs))
	for name := range st.Jobs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		js, err := o.jobStatus(st, name, blocks)
		if err != nil {
			return Status{}, err
		}
		s.Jobs = append(s.Jobs, js)
	}
	for _, name := range store.EffectNames(effects) {
		e := effects[name]
		es := EffectStatus{Name: name, Status: e.Status, Runs: e.Runs, At: e.At, By: e.By, Changed: []string{}}
		for _, f := range e.Inputs {
			if changed, err := o.fileChanged(f.Path, f.SHA256); err != nil {
				return Status{}, err
			} else if changed {
				es.Changed = append(es.Changed, f.Path)
			}
		}
		s.Effects = append(s.Effects, es)
	}
	s.Agent, s.Operator = advice(s)
	return s, nil
}

func (o *Orchestrator) jobStatus(st *store.State, name string, blocks map[string]Block) (JobStatus, error) {
	j := st.Jobs[name]
	js := JobStatus{Name: name, Attempts: j.Handouts, LastFailure: j.LastFailure, Changed: []string{}}
	if j.Accepted != nil {
		for _, f := range j.Accepted.Input.Files {
			changed, err := o.fileChanged(f.Path, f.SHA256)
			if err != nil {
				return js, err
			}
			if changed {
				js.Changed = append(js.Changed, "input "+f.Path)
			}
		}
	}
	switch {
	case j.Stopped != nil:
		js.State = JobStopped
		b := o.stoppedBlock(name, j.Stopped)
		js.Block = &b
	case st.Replayed > 0 && !slices.Contains(st.Named, name):
		js.State = JobNoLongerUsed
	case j.Accepted != nil:
		js.State = JobAccepted
	case j.Outstanding != nil:
		js.State = JobAwaited
	default:
		js.State = JobPending
		if b, ok := blocks[name]; ok {
			js.State, js.Block = JobBlocked, &b
		}
	}
	return js, nil
}

// fileChanged says whether the file at key (run-relative or absolute) no
// longer has the recorded hash.
func (o *Orchestrator) fileChanged(key, sum string) (bool, error) {
	now, err := store.FileSHA256(inputPath(o.run.Dir, key))
	return now != sum, err
}

// lastStep finds the last step's event in the committed history.
func (o *Orchestrator) lastStep(st *store.State) (*LastStep, error) {
	for seq := st.Seq; seq > 0; seq-- {
		events, err := o.run.HistoryOf(seq)
		if err != nil {
			return nil, err
		}
		for _, e := range events {
			if e.Type != "step" {
				continue
			}
			var out Outcome
			if err := json.Unmarshal(e.Outcome, &out); err != nil {
				return nil, &store.RecordError{Path: o.run.StatePath("history", fmt.Sprintf("%d.jsonl", seq)), Err: err}
			}
			return &LastStep{Step: e.Step, At: e.At, Outcome: out}, nil
		}
	}
	return nil, nil
}

// advice says what the agent orchestrator and the operator may do now,
// following the loop instruction (docs/loop.md).
func advice(s Status) (agent, operator string) {
	if s.Workflow != nil {
		return "stop: the workflow is stopped", "release workflow once its cause is fixed: custodian release RUN workflow"
	}
	if s.Last == nil {
		return "step: no step has run", "nothing"
	}
	out := s.Last.Outcome
	switch out.Kind {
	case KindLaunch:
		return fmt.Sprintf("launch the workers of step %d that have not started, wait for all of them, then step", s.Last.Step), "nothing"
	case KindDone:
		return "nothing: the run is finished", "nothing"
	case KindUncertain:
		var names []string
		for _, e := range out.Effects {
			names = append(names, e.Name)
		}
		return "stop: the fate of an effect is uncertain",
			fmt.Sprintf("establish what took place and record it: custodian resolve RUN NAME completed|absent (effects: %s)", join(names))
	}
	var stop, release, resolve []string
	for _, b := range out.Blocks {
		if b.Permitted != PermitStop {
			continue
		}
		stop = append(stop, b.Subject)
		if name, ok := cutEffect(b.Subject); ok {
			resolve = append(resolve, name)
		} else {
			release = append(release, b.Subject)
		}
	}
	if len(stop) == 0 {
		return "repair within the scope, report each repair, then step; or stop", "nothing"
	}
	var ops []string
	if len(release) > 0 {
		ops = append(ops, "release once the cause is fixed: custodian release RUN SUBJECT ("+join(release)+")")
	}
	if len(resolve) > 0 {
		ops = append(ops, "establish what took place and record it: custodian resolve RUN NAME completed|absent ("+join(resolve)+")")
	}
	return "stop: a block permits only stopping (" + join(stop) + ")", join(ops)
}

func cutEffect(subject string) (string, bool) {
	name, ok := strings.CutPrefix(subject, "effect ")
	return name, ok && name != ""
}

func join(s []string) string { return strings.Join(s, ", ") }

// Log returns the run's history, oldest first: its start, the events of
// every committed command, and the agent orchestrator's reports, each after
// the command that preceded it. It takes no lock and writes nothing.
func (o *Orchestrator) Log() ([]store.Event, error) {
	st, err := o.run.LoadState()
	if err != nil {
		return nil, err
	}
	seq := 0
	if st != nil {
		seq = st.Seq
	}
	history, err := o.run.History(seq)
	if err != nil {
		return nil, err
	}
	reports, err := o.run.Reports()
	if err != nil {
		return nil, err
	}
	events := []store.Event{{Type: "start", At: o.run.Record.StartedAt, Subject: o.run.Record.Definition,
		Text: fmt.Sprintf("version %s, parameters %s", o.run.Record.Version, formatParams(o.params))}}
	r := 0
	addReports := func(upTo int) {
		for ; r < len(reports) && reports[r].Seq <= upTo; r++ {
			rep := reports[r]
			events = append(events, store.Event{Type: "report", Seq: rep.Seq, Step: rep.Step, At: rep.At,
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

func formatParams(p Params) string {
	if len(p) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = k + "=" + p[k]
	}
	return strings.Join(pairs, " ")
}
