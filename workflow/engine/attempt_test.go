package engine_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// recordLaunch records that drive's launch of the hand-out h ended with
// outcome.
func recordLaunch(t *testing.T, d *engine.Driver, h engine.Handout, outcome string) {
	t.Helper()
	n, err := d.NextLaunch(h.Name)
	require.NoError(t, err)
	_, err = d.RecordLaunch(&engine.Launch{Job: h.Name, Attempt: h.Attempt, Launch: n, Worker: "exec", Outcome: outcome, ExitStatus: -1}, nil, nil)
	require.NoError(t, err)
}

// An attempt is a worker's attempt: a hand-out that no worker attempted,
// as drive's records say, is handed out again with the same attempt
// number and a new prompt file, and the job is not charged; one a worker
// ended on its own is a failed attempt.
func TestAttemptIsAWorkersAttempt(t *testing.T) {
	tests := []struct {
		name     string
		outcomes []string // the launches drive recorded for the hand-out
		charged  bool
		why      string
	}{
		{"not launched", nil, false, "not launched"},
		{"its launch failed", []string{"failed-to-start"}, false, "its launch failed"},
		{"ended by an interrupt", []string{engine.LaunchInterrupted}, false, "ended by an interrupt"},
		{"ended by a reclaim", []string{engine.LaunchReclaimed}, false, "ended by drive --reclaim"},
		{"finished", []string{"finished"}, true, ""},
		{"timed out", []string{"timed-out"}, true, ""},
		{"found ended by a reclaim", []string{engine.LaunchFoundEnded}, true, ""},
		{"finished, then an interrupt", []string{"usage-limited", "finished", engine.LaunchInterrupted}, true, ""},
		{"no record at all: a harness's round", []string{"none"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startRun(t, oneJob(job("a")), source)
			first := h.launch("a")["a"]
			d := h.o.Driver(engine.Process{})
			switch {
			case tt.outcomes == nil:
				require.NoError(t, d.NotLaunched([]engine.Handout{first}))
			case tt.outcomes[0] != "none":
				for _, o := range tt.outcomes {
					recordLaunch(t, d, first, o)
				}
			}
			again := h.launch("a")["a"]
			js := h.state().Jobs["a"]
			assert.Equal(t, 2, js.Handouts)
			assert.Equal(t, filepath.Join(h.dir, ".custodian/jobs/a/prompt-2.md"), again.Prompt, "a new prompt file")
			if tt.charged {
				assert.Equal(t, 2, again.Attempt)
				assert.Equal(t, 1, failures(js))
				return
			}
			assert.Equal(t, first.Attempt, again.Attempt, "the same attempt number")
			assert.Zero(t, failures(js), "the job was charged")
			assert.Equal(t, 1, js.Trouble.Spared)
			log := historyText(t, h)
			assert.Contains(t, log, "spare a attempt 1 "+tt.why)

			s := h.status()
			require.Len(t, s.Jobs, 1)
			assert.Equal(t, 1, s.Jobs[0].Attempts)
			assert.Equal(t, 1, s.Jobs[0].Spared)
			assert.Equal(t, tt.why, s.Jobs[0].Spare)
		})
	}
}

// A job is spared at most MaxSpared times in a run: then a missing output
// is a failed attempt, so that a loop that never launches still ends.
func TestAttemptSparesAreBounded(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	d := h.o.Driver(engine.Process{})
	for i := range engine.MaxSpared {
		out := h.launch("a")["a"]
		assert.Equal(t, 1, out.Attempt, "spare %d", i)
		require.NoError(t, d.NotLaunched([]engine.Handout{out}))
	}
	out := h.launch("a")["a"]
	require.NoError(t, d.NotLaunched([]engine.Handout{out}))
	out = h.launch("a")["a"]
	assert.Equal(t, 2, out.Attempt, "the sixth was not charged")
	js := h.state().Jobs["a"]
	assert.Equal(t, 1, failures(js))
	assert.Contains(t, js.Trouble.LastFailure.Reason, "no output (not launched; the job was spared 5 times already)")
}

// A block record of a driven job lists how each attempt's launches ended.
func TestBlockRecordListsEachAttemptsLaunches(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	d := h.o.Driver(engine.Process{})
	recordLaunch(t, d, h.launch("a")["a"], "finished")
	second := h.launch("a")["a"]
	recordLaunch(t, d, second, "timed-out")
	b := h.blocked()["a"]
	record := recordText(t, b.Record)
	assert.Contains(t, record, "- attempt 1: no output (launches: finished, exit -1)")
	assert.Contains(t, record, "- attempt 2: no output (launches: timed-out, exit -1)")
}

// A harness whose session was cut says so once, before the resumed
// session's first step, and that step takes the round's hand-outs without
// an output as attempted by no worker. An output a worker did write is
// judged as ever.
func TestReportInterrupted(t *testing.T) {
	h := startRun(t, parallelDef(), source)
	jobs := h.launch("a", "b")
	writeFile(t, jobs["b"].Output, validText)

	_, err := h.o.Report(engine.ReportInterrupted, "a", "the session was cut")
	assert.ErrorIs(t, err, engine.ErrRefused, "an interrupted report that names a job")
	_, err = h.o.Report(engine.ReportInterrupted, "", "the session was cut; the operator says its workers stopped")
	require.NoError(t, err)
	_, err = h.o.Report(engine.ReportInterrupted, "", "again")
	assert.ErrorIs(t, err, engine.ErrRefused, "a second interrupted report for one round")

	again := h.launch("a")["a"]
	assert.Equal(t, 1, again.Attempt, "the cut round charged a")
	js := h.state().Jobs
	assert.Zero(t, failures(js["a"]))
	assert.NotEmpty(t, js["b"].Accepted, "b's output was not judged")
	assert.Contains(t, historyText(t, h), "spare a attempt 1 the harness session that launched it was cut")

	h2 := startRun(t, oneJob(job("a")), source)
	_, err = h2.o.Report(engine.ReportInterrupted, "", "nothing was handed out")
	assert.ErrorIs(t, err, engine.ErrRefused)
}

// A drive takes over a round it did not launch: the hand-outs of the last
// step that no launch is recorded for and that have no output.
func TestDriverUnlaunched(t *testing.T) {
	h := startRun(t, parallelDef(), source)
	jobs := h.launch("a", "b")
	d := h.o.Driver(engine.Process{})
	names := func() []string {
		t.Helper()
		hs, err := d.Unlaunched()
		require.NoError(t, err)
		var out []string
		for _, h := range hs {
			out = append(out, h.Name)
		}
		return out
	}
	assert.Equal(t, []string{"a", "b"}, names())
	recordLaunch(t, d, jobs["a"], "finished")
	assert.Equal(t, []string{"b"}, names())
	writeFile(t, jobs["b"].Output, validText)
	assert.Empty(t, names(), "a hand-out with an output is the next step's to judge")
}

// One loop at a time, for reports too: while a live drive drives the run,
// another's report is refused as busy, naming the drive; the drive's own
// go through.
func TestReportBesideALiveDrive(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	d := driving(t, h, process(t, true))
	_, err := h.o.Report(engine.ReportStop, "", "a second loop stops")
	var alive *engine.DriverAliveError
	require.ErrorAs(t, err, &alive)
	assert.Equal(t, engine.ExitBusy, engine.ExitCode(err))
	_, _, err = h.o.Driver(process(t, false)).ReportUsageLimited("a", "limit")
	assert.ErrorAs(t, err, &alive, "another drive's usage report")

	rep, err := d.Report(engine.ReportStop, "a", "drive stops")
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Number)
}

// A drive's bookkeeping waits a little for a lock another command holds,
// rather than end its round and lose a finished worker's evidence.
func TestDriverBookkeepingWaitsForTheLock(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	first := h.launch("a")["a"]
	other, err := store.Open(h.dir)
	require.NoError(t, err)
	defer other.Close()
	unlock, err := other.Lock()
	require.NoError(t, err)
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(300 * time.Millisecond)
		unlock()
	}()
	recordLaunch(t, h.o.Driver(engine.Process{}), first, "finished")
	<-released // before other.Close, which unlock's bookkeeping must precede
	_, err = h.o.Report(engine.ReportRepair, "", "x")
	require.NoError(t, err)
	assert.True(t, h.state().Jobs["a"].Outstanding.Worked)
}

// Status and release say how the loop goes on: drive again when a drive
// took the last step, step when a harness did.
func TestHintsNameTheLoopThatDrivesTheRun(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	h.launch("a")
	h.blocked()
	s := h.status()
	assert.False(t, s.Driven)
	assert.Contains(t, s.Operator, "custodian step "+h.dir)
	err := h.o.Release(engine.JobSubject("a"))
	assert.Contains(t, engine.Hint(err), "run step: ")

	h = startRun(t, oneJob(job("a")), source)
	h.launch("a")
	h.launch("a")
	out, err := h.o.Driver(process(t, false)).Step()
	require.NoError(t, err)
	require.Equal(t, engine.KindBlocked, out.Kind)
	s = h.status()
	assert.True(t, s.Driven)
	assert.Contains(t, s.Operator, "fix the cause, then drive again: custodian drive "+h.dir+" --worker ...")
	assert.False(t, strings.Contains(s.Operator, "custodian step"), s.Operator)
	err = h.o.Release(engine.JobSubject("a"))
	assert.Contains(t, engine.Hint(err), "fix the cause, then custodian drive "+h.dir+" --worker ...: drive never repairs")
}

// parallelDef names two jobs, a and b, that wait on nothing.
func parallelDef() *workflow.Definition {
	return &workflow.Definition{Name: "two", Run: func(ctx *workflow.Context) error {
		ctx.Wait(ctx.Agent(job("a")), ctx.Agent(job("b")))
		return nil
	}}
}

// historyText is the run's history, an event a line: its type, subject,
// attempt and text.
func historyText(t *testing.T, h *harness) string {
	t.Helper()
	var b strings.Builder
	for _, e := range historyLog(t, h.reg, h.dir) {
		fmt.Fprintf(&b, "%s %s attempt %d %s\n", e.Type, e.Subject, e.Attempt, e.Text)
	}
	return b.String()
}
