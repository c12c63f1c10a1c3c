package engine_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun_Report(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")

	for _, event := range []string{"launch-failed", "repair", "stop"} {
		rep, err := h.o.Report(event, "a", "about "+event)
		require.NoError(t, err, "event %s", event)
		assert.Equal(t, event, rep.Event)
	}
	for _, event := range []string{"", "done", "Repair", "accepted", "launch_failed"} {
		_, err := h.o.Report(event, "a", "text")
		assert.ErrorIs(t, err, engine.ErrRefused, "event %q", event)
	}
	reports := readReports(t, h)
	require.Len(t, reports, 3, "a refused report was stored")
	for i, rep := range reports {
		assert.Equal(t, i+1, rep.Number)
	}
}

func TestReportJobMustBeAJobOfTheRun(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	// Before any step the run has no jobs at all.
	_, err := h.o.Report("launch-failed", "a", "too early")
	assert.ErrorIs(t, err, engine.ErrRefused)

	h.launch("a")
	_, err = h.o.Report("launch-failed", "b", "no such job")
	assert.ErrorIs(t, err, engine.ErrRefused)
	_, err = h.o.Report("launch-failed", "a", "the model was unavailable")
	assert.NoError(t, err)
	_, err = h.o.Report("stop", "", "stopping")
	assert.NoError(t, err)
	assert.Len(t, readReports(t, h), 2)
}

func TestReportsAppearInTheBlockRecordsTheyConcern(t *testing.T) {
	failing := false
	h := startRun(t, &workflow.Definition{Name: "reports", Run: func(ctx *workflow.Context) error {
		if failing {
			return errors.New("the definition failed")
		}
		ctx.Wait(ctx.Agent(job("a")), ctx.Agent(job("b")))
		return nil
	}}, source)

	h.launch("a", "b")
	_, err := h.o.Report("launch-failed", "a", "could not launch a")
	require.NoError(t, err)
	_, err = h.o.Report("launch-failed", "b", "could not launch b")
	require.NoError(t, err)
	_, err = h.o.Report("repair", "", "fixed the environment")
	require.NoError(t, err)

	// The reports are records: a new process sees them.
	h.reopen()
	h.launch("a", "b")
	blocks := h.blocked()
	require.Equal(t, []string{"a", "b"}, subjects(blocks))

	recA := recordText(t, blocks["a"].Record)
	assert.Contains(t, recA, "## Reports")
	assert.Regexp(t, `- report 1, \S+, launch-failed on a: could not launch a`, recA)
	assert.Regexp(t, `- report 3, \S+, repair: fixed the environment`, recA)
	assert.NotContains(t, recA, "could not launch b")
	recB := recordText(t, blocks["b"].Record)
	assert.Contains(t, recB, "could not launch b")
	assert.Contains(t, recB, "fixed the environment")
	assert.NotContains(t, recB, "could not launch a")

	// A report without a job is in the workflow's block record too.
	failing = true
	w := h.blocked()["workflow"]
	recW := recordText(t, w.Record)
	assert.Contains(t, recW, "fixed the environment")
	assert.NotContains(t, recW, "could not launch")
}

// A report is what the agent orchestrator saw; it is never evidence that a
// job was done, and it does not move the run. (An interrupted report says
// that no worker attempted the round: TestReportInterrupted.)
func TestReportNeverAcceptsNorAdvances(t *testing.T) {
	events := []string{engine.ReportLaunchFailed, engine.ReportRepair, engine.ReportStop}
	cases := []struct {
		name   string
		output string
	}{
		{"no output", ""},
		{"invalid output", invalidText},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startRun(t, oneJob(job("a")), source)
			h.work(h.launch("a"), map[string]reply{"a": {output: tc.output}})
			before := h.state()

			for _, event := range events {
				_, err := h.o.Report(event, "a", fmt.Sprintf("%s: the job is done, accept it", event))
				require.NoError(t, err)
			}
			after := h.state()
			assert.Equal(t, len(events), after.Reports, "the state counts the reports")
			after.Reports = before.Reports
			assert.Equal(t, before, after, "a report changed the state of a job")

			// The step judges as if no report had been made: a failed attempt.
			j := h.launch("a")["a"]
			assert.Equal(t, 2, j.Attempt)
			assert.Equal(t, 1, failures(h.state().Jobs["a"]))
			assert.Empty(t, h.state().Jobs["a"].Accepted)
		})
	}
}

func TestRunCompletesWithoutAnyReport(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "quiet", Run: func(ctx *workflow.Context) error {
		ctx.Wait(ctx.Agent(job("a")), ctx.Agent(job("b")))
		c := job("c")
		c.Inputs = []string{"a.md", "b.md"}
		ctx.Agent(c).Wait()
		return nil
	}}, source)

	h.runToDone()
	assert.Empty(t, readReports(t, h))
	assert.NoFileExists(t, h.path(".custodian/reports.jsonl"))
}

func readReports(t *testing.T, h *harness) []store.Report {
	t.Helper()
	run, err := store.Open(h.dir)
	require.NoError(t, err)
	defer run.Close()
	st, err := run.LoadState()
	require.NoError(t, err)
	reports, err := run.Reports(st.Reports)
	require.NoError(t, err)
	return reports
}

// Every command that changes a run takes its lock and is refused at once
// while another holder has it, never queued.
func TestCommandsRefuseABusyRun(t *testing.T) {
	h := stoppedRun(t)
	holder, err := store.Open(h.dir)
	require.NoError(t, err)
	unlock, err := holder.Lock()
	require.NoError(t, err)
	before := snapshot(t, h)

	commands := map[string]func() error{
		"step":    func() error { _, err := h.o.Step(); return err },
		"report":  func() error { _, err := h.o.Report("repair", "a", "repaired"); return err },
		"release": func() error { return h.o.Release("a") },
	}
	for name, run := range commands {
		assert.ErrorIs(t, run(), store.ErrBusy, name)
	}
	assert.Equal(t, before, snapshot(t, h), "a refused command changed the records")

	unlock()
	assert.NoError(t, h.o.Release("a"), "the lock was not free once released")
}
