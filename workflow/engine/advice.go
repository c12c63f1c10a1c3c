package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// advice says what the agent orchestrator and the operator may do now,
// following the loop instruction (docs/loop.md), with the operator's
// commands ready to run. It reads the last outcome without what the
// operator settled since, the workflow's standing stop, and the effects a
// process may have ended inside. Where several things apply, the agent is
// told the gravest, and the operator every command that is theirs to run.
func advice(s Status) (agent, operator string) {
	if a := s.Abandoned; a != nil {
		return "nothing: the operator abandoned the run at " + a.At, "nothing: the run is ended for good; start a new run to go on"
	}
	agent, operator = outcomeAdvice(s)
	if rd := s.Round; rd != nil {
		// Nothing may step the run while a drive drives it, or while its
		// workers run: a step would judge outputs still being written.
		if w := rd.Workflow; w != nil {
			return fmt.Sprintf("nothing: Temporal workflow %s drives the run; do not step it", w.ID),
				fmt.Sprintf("nothing, while the workflow runs; to stop it: Ctrl-C on its custodian-temporal drive (namespace %s at %s)", w.Namespace, w.Address)
		}
		if rd.Driver.Pid != 0 {
			return fmt.Sprintf("nothing: custodian drive (pid %d on host %s) drives the run; do not step it", rd.Driver.Pid, rd.Host),
				fmt.Sprintf("nothing, while the drive runs; to stop it: kill -INT %d (it ends its workers and records them)", rd.Driver.Pid)
		}
		return fmt.Sprintf("nothing: workers of a drive that has ended still run (step %d); do not step the run", rd.Step),
			"wait for them to end, or end them and record them with: custodian drive " + shellQuote(s.Run) + " --reclaim --worker ..."
	}
	if r := s.StopReport; r != nil && agent != "nothing: the run is finished" {
		// The agent orchestrator has stopped: whatever the outcome lets it
		// do, it waits, and the run waits for the operator.
		agent = fmt.Sprintf("nothing: you reported a stop after step %d (report %d); the run waits for the operator", s.Steps, r.Number)
		then := "settle what stopped it"
		if operator != "nothing" {
			then = operator
		}
		if s.Driven {
			if !strings.Contains(then, driveAgain(s.Run)) {
				then += "; then drive again: " + driveAgain(s.Run)
			}
			operator = fmt.Sprintf("custodian drive stopped after step %d (report %d: %s); %s", s.Steps, r.Number, OneLine(r.Text), then)
		} else {
			operator = fmt.Sprintf("the agent orchestrator stopped after step %d (report %d: %s); %s; then tell it to resume the loop",
				s.Steps, r.Number, OneLine(r.Text), then)
		}
	}
	return agent, operator
}

// choicesOf is the choices of the question name, as a command line's
// alternatives: "accept|rework".
func choicesOf(s Status, name string) string {
	for _, q := range s.Questions {
		if q.Name == name {
			return strings.Join(q.Choices, "|")
		}
	}
	return "CHOICE"
}

// absentNote warns the operator who resolves an effect as absent that it
// runs again.
const absentNote = " (absent: it runs again at the next step that reaches it, so remove any part of it that took place first)"

// outcomeAdvice is what the last outcome and what came after it let each
// party do.
func outcomeAdvice(s Status) (agent, operator string) {
	run := shellQuote(s.Run)
	settled := map[Subject]bool{}
	for _, subject := range s.Settled {
		settled[subject] = true
	}
	var out Outcome
	if s.Last != nil {
		out = s.Last.Outcome
	}
	var ops, uncertain, interrupted []string
	var stops, repairs, releases []Subject
	for _, e := range out.Effects {
		if !settled[EffectSubject(e.Name)] {
			uncertain = append(uncertain, e.Name)
			ops = append(ops, "establish whether effect "+e.Name+" took place, then: custodian resolve "+run+" "+e.Name+" completed|absent"+absentNote)
		}
	}
	for _, e := range s.Effects {
		if e.Interrupted && !slices.Contains(uncertain, e.Name) {
			interrupted = append(interrupted, e.Name)
			ops = append(ops, "make sure no custodian process is running, then let a step ask the recognizer of effect "+e.Name+
				", or establish whether it took place and: custodian resolve "+run+" "+e.Name+" completed|absent"+absentNote)
		}
	}
	if w := s.Workflow; w != nil {
		stops = append(stops, WorkflowSubject)
		switch w.Kind {
		case BlockDefinitionChanged:
			ops = append(ops, "read "+w.Record+"; go back to the binary whose definition the run last agreed with ("+s.Builds.GoBack(s.Version)+
				"), or let the changes through: custodian release "+run+" workflow")
		case BlockBadParameter:
			ops = append(ops, "start a new run with parameters the definition takes; release does not change a run's parameters")
		default:
			ops = append(ops, "fix the cause, then: custodian release "+run+" workflow")
		}
	}
	for _, b := range out.Blocks {
		switch {
		case settled[b.Subject] || b.Subject == WorkflowSubject && s.Workflow != nil:
		case b.Permitted == PermitRepair:
			repairs = append(repairs, b.Subject)
		default:
			stops = append(stops, b.Subject)
			if name, ok := b.Subject.Effect(); ok {
				ops = append(ops, "establish what took place, then: custodian resolve "+run+" "+name+" completed|absent"+absentNote)
			} else if name, ok := b.Subject.Decision(); ok {
				ops = append(ops, "read "+b.Record+", then choose: custodian decide "+run+" "+name+" "+choicesOf(s, name)+" --text WHY")
			} else {
				releases = append(releases, b.Subject)
			}
		}
	}
	switch len(releases) {
	case 0:
	case 1:
		ops = append(ops, "fix the cause, then: custodian release "+run+" "+releases[0].String())
	default:
		// Alike stops are said once: one command releases them in turn.
		ops = append(ops, fmt.Sprintf("fix the cause, then release the %d stopped subjects: for s in %s; do custodian release %s \"$s\"; done",
			len(releases), strings.Join(subjectWords(releases), " "), run))
	}
	if len(repairs) > 0 && len(stops) == 0 {
		// Nothing is stopped: if the agent orchestrator stopped here rather
		// than repair, the operator mends the cause and steps.
		if s.Driven {
			ops = append(ops, "fix the cause, then drive again: "+driveAgain(s.Run))
		} else {
			ops = append(ops, "if the agent orchestrator stopped, fix the cause, then: custodian step "+run)
		}
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
		return "stop and report it: a block permits only stopping (" + listed(stops) + ")", operator
	case len(repairs) > 0:
		return "repair within the scope, report each repair, then step; or stop (" + listed(repairs) + ")", operator
	case s.Last == nil:
		return "step: no step has run", operator
	case out.Kind == KindBlocked || out.Kind == KindUncertain:
		// Nothing of it stands: the operator released or resolved it.
		return fmt.Sprintf("step: after step %d the operator %s", s.Last.Step, settledText(s.Settled)), operator
	case out.Kind == KindLaunch:
		return fmt.Sprintf("launch the workers of step %d that have not started, wait for all of them, then step", s.Last.Step), operator
	}
	// The last step found the run done.
	var changed []Subject
	for _, j := range s.Jobs {
		if j.State == JobAccepted && len(j.Changed) > 0 {
			changed = append(changed, JobSubject(j.Name))
		}
	}
	for _, e := range s.Effects {
		if e.Status == store.EffectCompleted && len(e.Changed) > 0 {
			changed = append(changed, EffectSubject(e.Name))
		}
	}
	if len(changed) > 0 {
		return fmt.Sprintf("step: what was accepted changed after the run was done at step %d (%s); the next step judges it again", s.Last.Step, join(changed)), operator
	}
	return "nothing: the run is finished", operator
}

// SettledText says what the operator did since the last step, in words
// ("released claims, workflow and resolved effect publish"), or "" when
// the operator did nothing since.
func (s Status) SettledText() string {
	if s.Last == nil {
		return ""
	}
	return settledText(s.Settled)
}

// settledText says what the operator did to the settled subjects, in words.
func settledText(settled []Subject) string {
	var released, resolved []Subject
	for _, subject := range settled {
		if isEffect(subject) {
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

// driveAgain is the command that drives the run again, with the worker
// flags the operator gives.
func driveAgain(run string) string { return "custodian drive " + shellQuote(run) + " --worker ..." }

// shellQuote quotes a path for a POSIX shell when it needs quoting.
func shellQuote(p string) string {
	if p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// listed names a few items when there are many: "a, b, c and 27 more".
func listed[T ~string](items []T) string {
	const shown = 3
	if len(items) <= shown+1 {
		return join(items)
	}
	return fmt.Sprintf("%s and %d more", join(items[:shown]), len(items)-shown)
}

// subjectWords are subjects as words for a shell, each quoted when it
// needs it.
func subjectWords(subjects []Subject) []string {
	words := make([]string, len(subjects))
	for i, s := range subjects {
		words[i] = shellQuote(s.String())
	}
	return words
}

// join lists words or subjects with commas.
func join[T ~string](items []T) string {
	words := make([]string, len(items))
	for i, item := range items {
		words[i] = string(item)
	}
	return strings.Join(words, ", ")
}
