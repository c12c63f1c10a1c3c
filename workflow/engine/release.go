package engine

import (
	"maps"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// Release lets a stopped subject, a job or "workflow", be tried again: its
// attempts and repairs start over. Accepted outputs of other jobs are
// untouched. Only the operator releases.
func (run *Run) Release(subject Subject) error {
	return run.locked(func(rec *loaded) error {
		st := rec.state
		switch {
		case isEffect(subject):
			return refused("the operator records what took place with resolve RUN NAME completed|absent",
				"%s is not released; an effect is resolved", subject)
		case isDecision(subject):
			return refused("the operator records a choice with decide RUN NAME CHOICE --text WHY",
				"%s is not released; a question is decided", subject)
		case subject == WorkflowSubject:
			if st.Workflow.Stopped == nil {
				return refused(notStopped(run.loop(st)), "workflow is not stopped")
			}
			// A stop of a changed definition lets through exactly the
			// changes it listed.
			maps.Copy(st.Workflow.Allowed, st.Workflow.Stopped.Changes)
			st.Workflow.Stopped = nil
			st.Workflow.Places = map[string]int{}
		default:
			job := string(subject)
			js := st.Jobs[job]
			if js == nil {
				return refused("name a job of the run, or workflow", "run %s has no job %q", run.records.Dir, job)
			}
			if js.Trouble == nil || js.Trouble.Stopped == nil {
				return refused(notStopped(run.loop(st)), "job %s is not stopped", job)
			}
			t := js.Trouble
			t.Stopped = nil
			t.Failures, t.BlocksTowardLimit = 0, 0
			t.History = []string{}
			js.Outstanding = nil
		}
		events := sealHistory(st, rec.effects, []store.Event{{Type: store.EventRelease, Subject: string(subject)}})
		return run.commit("release", st, events)
	})
}

func isDecision(s Subject) bool {
	_, ok := s.Decision()
	return ok
}

func isEffect(s Subject) bool {
	_, ok := s.Effect()
	return ok
}

// notStopped is the hint of a release of a subject that is not stopped,
// for the loop that drives the run.
func notStopped(loop string) string {
	if strings.HasPrefix(loop, "custodian drive ") {
		return "fix the cause, then " + loop + ": drive never repairs, and tries a subject that permits a repair again; " +
			"release only a subject step reports as permitting only stopping"
	}
	return "run step: a block that permits a repair is the agent orchestrator's to repair; release only a subject step reports as permitting only stopping"
}
