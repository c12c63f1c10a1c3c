package engine

import (
	"slices"
	"strings"
	"time"

	"github.com/custodian-run/custodian/store"
)

// Report events: the only things the agent orchestrator reports.
const (
	ReportLaunchFailed = "launch-failed"
	ReportRepair       = "repair"
	ReportStop         = "stop"
	// ReportInterrupted says that the harness session that launched the
	// last round was cut, and that the operator confirmed that its workers
	// stopped: the round's hand-outs without an output are not charged.
	ReportInterrupted = "interrupted"
)

// ReportEvents lists the report events, in the order the docs give them.
var ReportEvents = []string{ReportLaunchFailed, ReportRepair, ReportStop, ReportInterrupted}

// sessionCut is why a hand-out of a round whose harness session was cut
// is not charged.
const sessionCut = "the harness session that launched it was cut (report interrupted)"

// Report is one report of the agent orchestrator, as the run keeps it.
type Report = store.Report

// Report records what only the agent orchestrator can see: a launch that
// failed, a repair it made, or that it stopped. job, when given, must name a
// job of the run. A report never advances the run and never causes an
// acceptance; it appears in the block records of its job, or of every
// subject when it names none.
//
// While a custodian drive drives the run, another loop's report is
// refused (ErrBusy, naming the drive): one loop at a time.
func (run *Run) Report(event, job, text string) (Report, error) {
	return run.report(Holder{}, event, job, text)
}

// report is Report, made by the drive self, or by no drive.
func (run *Run) report(self Holder, event, job, text string) (Report, error) {
	if event == ReportUsageLimited {
		if job == "" {
			return Report{}, refused("name the job whose launch hit the limit with --job", "a usage-limited report names its job")
		}
		rep, _, err := run.reportUsageLimited(self, 0, job, text)
		return rep, err
	}
	if !slices.Contains(ReportEvents, event) {
		return Report{}, refused("report one of: "+strings.Join(ReportEvents, ", "),
			"event %q is not reported; the events are %s", event, strings.Join(ReportEvents, ", "))
	}
	var rep Report
	err := run.lockedWaiting(waitFor(self), func(rec *loaded) error {
		if err := run.ownLoop(rec, self); err != nil {
			return err
		}
		if event == ReportInterrupted {
			if err := sessionWasCut(rec.state, job); err != nil {
				return err
			}
		}
		if job != "" && rec.state.Jobs[job] == nil {
			return refused("name a job that step has handed out, or leave --job out",
				"job %q is not a job of run %s", job, run.records.Dir)
		}
		var err error
		rep, err = run.commitReport(rec, event, job, text)
		return err
	})
	return rep, err
}

// commitReport writes a report and commits the state that counts it: the
// state's rename commits the report, and a report that ends before leaves
// a line the next report replaces.
func (run *Run) commitReport(rec *loaded, event, job, text string) (Report, error) {
	rep, err := run.records.WriteReport(rec.state.Reports, store.Report{Event: event, Job: job, Text: text, At: store.Now(),
		Seq: rec.state.Seq, Step: rec.state.Steps})
	if err != nil {
		return rep, err
	}
	rec.state.Reports = rep.Number
	return rep, run.records.SaveState("report-state", rec.state)
}

// waitFor is how long a command of the drive self waits for the lock: a
// drive's bookkeeping waits a little, any other command not at all.
func waitFor(self Holder) time.Duration {
	if !self.none() {
		return bookkeeping
	}
	return 0
}

// ownLoop refuses a command of a loop other than the live drive that
// drives the run, if one does: the drive self, or no drive.
func (run *Run) ownLoop(rec *loaded, self Holder) error {
	return run.heldElsewhere(rec.round, self)
}

// sessionWasCut marks every outstanding hand-out that no worker ended on
// its own as not to be charged: the harness session that launched them
// was cut. It refuses a report that names a job, and one with nothing to
// mark.
func sessionWasCut(st *store.State, job string) error {
	if job != "" {
		return refused("leave --job out: the report is about the whole round", "an interrupted report names no job; it is about the round the cut session launched")
	}
	marked := 0
	for _, js := range st.Jobs {
		if o := js.Outstanding; o != nil && !o.Worked && o.Spare != sessionCut {
			o.Spare = sessionCut
			marked++
		}
	}
	if marked == 0 {
		return refused("run custodian step RUN: there is no round to mark",
			"no hand-out is outstanding that is not marked already: nothing was cut, or the report was made already")
	}
	return nil
}
