package workflow

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
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
	// Settled names what the operator released ("workflow", a job) or
	// resolved ("effect NAME") since the last step: what the last outcome
	// says of them no longer stands.
	Settled  []string `json:"settled"`
	Agent    string   `json:"agent"`    // what the agent orchestrator may do now
	Operator string   `json:"operator"` // what the operator may do now
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
	// Changed names, for an accepted job, the recorded inputs ("input PATH")
	// and the output ("output PATH") whose bytes differ from the acceptance,
	// with " (removed)" for one that is gone: the next step will reopen it.
	// A changed prompt or launch parameters show only when a step replays.
	Changed []string `json:"changed"`
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
}

// Status reads where the run stands. It takes no lock, judges nothing,
// consumes no round and writes nothing: every record is replaced whole, so
// it reads each as it was before or after a running command's write.
func (o *Orchestrator) Status() (Status, error) {
	rec, err := o.read()
	if err != nil {
		return Status{}, err
	}
	st, effects := rec.state, rec.effects
	history, err := o.run.History(st.Seq)
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
		Settled:    []string{},
	}
	var outputs map[string]string
	if s.Last, s.Settled, outputs, err = o.readHistory(history); err != nil {
		return Status{}, err
	}
	settled := map[string]bool{}
	for _, subject := range s.Settled {
		settled[subject] = true
	}
	blocks := map[string]Block{}
	if s.Last != nil {
		for _, b := range s.Last.Outcome.Blocks {
			if !settled[b.Subject] {
				blocks[b.Subject] = b
			}
		}
	}
	if w := st.Workflow.Stopped; w != nil {
		b := o.stoppedBlock("workflow", w)
		s.Workflow = &b
	}
	named := map[string]bool{}
	for _, name := range st.Named {
		named[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(st.Jobs)) {
		js, err := o.jobStatus(st, name, named, blocks, outputs[name])
		if err != nil {
			return Status{}, err
		}
		s.Jobs = append(s.Jobs, js)
	}
	for _, name := range store.EffectNames(effects) {
		e := effects[name]
		es := EffectStatus{Name: name, Status: e.Status, Runs: e.Runs, At: e.At, By: e.By, Changed: []string{}}
		seen := st.Effects[name]
		es.Interrupted = e.Status == store.EffectStarted && (seen.Status != e.Status || seen.Runs != e.Runs)
		if e.Status != store.EffectAbsent {
			for _, f := range e.Inputs {
				changed, err := o.fileChange(f.Path, f.SHA256)
				if err != nil {
					return Status{}, err
				}
				if changed != "" {
					es.Changed = append(es.Changed, changed)
				}
			}
		}
		s.Effects = append(s.Effects, es)
	}
	s.Agent, s.Operator = advice(s)
	return s, nil
}

func (o *Orchestrator) jobStatus(st *store.State, name string, named map[string]bool, blocks map[string]Block, output string) (JobStatus, error) {
	j := st.Jobs[name]
	js := JobStatus{Name: name, Attempts: j.Handouts, LastFailure: j.LastFailure, Changed: []string{}}
	if j.Accepted != nil {
		for _, f := range j.Accepted.Input.Files {
			changed, err := o.fileChange(f.Path, f.SHA256)
			if err != nil {
				return js, err
			}
			if changed != "" {
				js.Changed = append(js.Changed, "input "+changed)
			}
		}
		if output != "" {
			changed, err := o.fileChange(output, j.Accepted.Output)
			if err != nil {
				return js, err
			}
			if changed != "" {
				js.Changed = append(js.Changed, "output "+changed)
			}
		}
	}
	switch {
	case j.Stopped != nil:
		js.State = JobStopped
		b := o.stoppedBlock(name, j.Stopped)
		js.Block = &b
	case st.Replayed > 0 && !named[name]:
		js.State = JobNoLongerUsed
	case j.Accepted != nil:
		js.State = JobAccepted
	case j.Outstanding != nil:
		js.State = JobAwaited
	default:
		js.State = JobPending
		// blocks holds what of the last outcome stands: not a released stop.
		if b, ok := blocks[name]; ok {
			js.State, js.Block = JobBlocked, &b
		}
	}
	return js, nil
}

// fileChange says how the file at key (run-relative or absolute) differs
// from the recorded hash: "" when it does not; otherwise key, marked
// " (removed)" when it is gone and " (added)" when it was absent then.
func (o *Orchestrator) fileChange(key, sum string) (string, error) {
	now, err := store.FileSHA256(inputPath(o.run.Dir, key))
	switch {
	case err != nil || now == sum:
		return "", err
	case now == "":
		return key + " (removed)", nil
	case sum == "":
		return key + " (added)", nil
	default:
		return key, nil
	}
}

// readHistory reads what the status needs from the committed history: the
// last step's outcome; what the operator released or resolved after it; and
// each job's output path, run-relative, as its last hand-out named it
// (state.json keeps only the output's hash).
func (o *Orchestrator) readHistory(history []store.Event) (last *LastStep, settled []string, outputs map[string]string, err error) {
	settled, outputs = []string{}, map[string]string{}
	for _, e := range history {
		switch e.Type {
		case store.EventStep:
			out, err := o.eventOutcome(e)
			if err != nil {
				return nil, nil, nil, err
			}
			last, settled = &LastStep{Step: e.Step, At: e.At, Outcome: out}, []string{}
			for _, h := range out.Jobs {
				if rel := handoutOutput(h); rel != "" {
					outputs[h.Name] = rel
				}
			}
		case store.EventRelease, store.EventResolve:
			subject := e.Subject
			if e.Type == store.EventResolve {
				subject = "effect " + subject
			}
			if !slices.Contains(settled, subject) {
				settled = append(settled, subject)
			}
		}
	}
	return last, settled, outputs, nil
}

// handoutOutput is a hand-out's output path relative to the run directory
// the hand-out was made in, which the prompt's path gives: a run that moved
// since keeps its outputs.
func handoutOutput(h Handout) string {
	prompt := "/" + store.PromptPath(h.Name, h.Attempt)
	dir, ok := strings.CutSuffix(filepath.ToSlash(h.Prompt), prompt)
	if !ok {
		return ""
	}
	rel, ok := insideRun(filepath.FromSlash(dir), h.Output)
	if !ok {
		return ""
	}
	return rel
}

// advice says what the agent orchestrator and the operator may do now,
// following the loop instruction (docs/loop.md), with the operator's
// commands ready to run. It reads the last outcome without what the
// operator settled since, the workflow's standing stop, and the effects a
// process may have ended inside. Where several things apply, the agent is
// told the gravest, and the operator every command that is theirs to run.
func advice(s Status) (agent, operator string) {
	run := shellQuote(s.Run)
	settled := map[string]bool{}
	for _, subject := range s.Settled {
		settled[subject] = true
	}
	var out Outcome
	if s.Last != nil {
		out = s.Last.Outcome
	}
	var ops, uncertain, interrupted, stops, repairs []string
	for _, e := range out.Effects {
		if !settled["effect "+e.Name] {
			uncertain = append(uncertain, e.Name)
			ops = append(ops, "establish whether effect "+e.Name+" took place, then: custodian resolve "+run+" "+e.Name+" completed|absent")
		}
	}
	for _, e := range s.Effects {
		if e.Interrupted && !slices.Contains(uncertain, e.Name) {
			interrupted = append(interrupted, e.Name)
			ops = append(ops, "make sure no custodian process is running, then let a step ask the recognizer of effect "+e.Name+
				", or establish whether it took place and: custodian resolve "+run+" "+e.Name+" completed|absent")
		}
	}
	if s.Workflow != nil {
		stops = append(stops, "workflow")
		ops = append(ops, "fix the cause, then: custodian release "+run+" workflow")
	}
	for _, b := range out.Blocks {
		switch {
		case settled[b.Subject] || b.Subject == "workflow" && s.Workflow != nil:
		case b.Permitted == PermitRepair:
			repairs = append(repairs, b.Subject)
		default:
			stops = append(stops, b.Subject)
			if name, ok := cutEffect(b.Subject); ok {
				ops = append(ops, "establish what took place, then: custodian resolve "+run+" "+name+" completed|absent")
			} else {
				ops = append(ops, "fix the cause, then: custodian release "+run+" "+b.Subject)
			}
		}
	}
	if len(repairs) > 0 && len(stops) == 0 {
		// Nothing is stopped: if the agent orchestrator stopped here rather
		// than repair, the operator mends the cause and steps.
		ops = append(ops, "if the agent orchestrator stopped, fix the cause, then: custodian step "+run)
	}
	operator = "nothing"
	if len(ops) > 0 {
		operator = strings.Join(ops, "; ")
	}
	switch {
	case len(uncertain) > 0:
		return "stop and report it: the fate of an effect is uncertain (" + join(uncertain) + ")", operator
	case len(interrupted) > 0:
		return "stop and report it: effect " + join(interrupted) + " started and its end is not recorded; " +
			"a step is inside it or a process ended inside it", operator
	case len(stops) > 0:
		return "stop and report it: a block permits only stopping (" + join(stops) + ")", operator
	case len(repairs) > 0:
		return "repair within the scope, report each repair, then step; or stop (" + join(repairs) + ")", operator
	case s.Last == nil:
		return "step: no step has run", operator
	case out.Kind == KindBlocked || out.Kind == KindUncertain:
		// Nothing of it stands: the operator released or resolved it.
		return fmt.Sprintf("step: after step %d the operator %s", s.Last.Step, SettledText(s.Settled)), operator
	case out.Kind == KindLaunch:
		return fmt.Sprintf("launch the workers of step %d that have not started, wait for all of them, then step", s.Last.Step), operator
	}
	// The last step found the run done.
	var changed []string
	for _, j := range s.Jobs {
		if j.State == JobAccepted && len(j.Changed) > 0 {
			changed = append(changed, j.Name)
		}
	}
	for _, e := range s.Effects {
		if e.Status == store.EffectCompleted && len(e.Changed) > 0 {
			changed = append(changed, "effect "+e.Name)
		}
	}
	if len(changed) > 0 {
		return fmt.Sprintf("step: what was accepted changed after the run was done at step %d (%s); the next step judges it again", s.Last.Step, join(changed)), operator
	}
	return "nothing: the run is finished", operator
}

// SettledText says what the operator did to the subjects of a Status's
// Settled, in words: "released claims, workflow and resolved effect publish".
func SettledText(settled []string) string {
	var released, resolved []string
	for _, subject := range settled {
		if _, ok := cutEffect(subject); ok {
			resolved = append(resolved, subject)
		} else {
			released = append(released, subject)
		}
	}
	var parts []string
	if len(released) > 0 {
		parts = append(parts, "released "+join(released))
	}
	if len(resolved) > 0 {
		parts = append(parts, "resolved "+join(resolved))
	}
	return strings.Join(parts, " and ")
}

// shellQuote quotes a path for a POSIX shell when it needs quoting.
func shellQuote(p string) string {
	if p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
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
	rec, err := o.read()
	if err != nil {
		return nil, err
	}
	seq, reports := rec.state.Seq, rec.reports
	history, err := o.run.History(seq)
	if err != nil {
		return nil, err
	}
	params := o.params.String()
	if len(o.params) > 0 {
		params = "parameters " + params
	}
	events := []store.Event{{Type: store.EventStart, At: o.run.Record.StartedAt, Subject: o.run.Record.Definition,
		Text: fmt.Sprintf("version %s, %s", o.run.Record.Version, params)}}
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
