package engine

import (
	"slices"

	"github.com/custodian-run/custodian/store"
)

// Report events: the only things the agent orchestrator reports.
const (
	ReportLaunchFailed = "launch-failed"
	ReportRepair       = "repair"
	ReportStop         = "stop"
)

// ReportEvents lists the report events, in the order the docs give them.
var ReportEvents = []string{ReportLaunchFailed, ReportRepair, ReportStop}

// Report is one report of the agent orchestrator, as the run keeps it.
type Report = store.Report

// Report records what only the agent orchestrator can see: a launch that
// failed, a repair it made, or that it stopped. job, when given, must name a
// job of the run. A report never advances the run and never causes an
// acceptance; it appears in the block records of its job, or of every
// subject when it names none.
func (run *Run) Report(event, job, text string) (Report, error) {
	if event == ReportUsageLimited {
		if job == "" {
			return Report{}, refused("name the job whose launch hit the limit with --job", "a usage-limited report names its job")
		}
		rep, _, err := run.reportUsageLimited(job, text)
		return rep, err
	}
	if !slices.Contains(ReportEvents, event) {
		return Report{}, refused("report one of: launch-failed, repair, stop",
			"event %q is not reported; the events are launch-failed, repair, stop", event)
	}
	var rep Report
	err := run.locked(func(rec *loaded) error {
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
