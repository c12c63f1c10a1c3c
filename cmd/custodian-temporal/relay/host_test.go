package relay

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/internal/proc"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// settings are the drive's, as the workflow gives them to each activity.
var settings = Settings{Profile: "claude", Grace: 100 * time.Millisecond, MaxWait: time.Hour}

// heldRun is a clean trial run stepped once, its two lenses handed out,
// held by a workflow through the Host that the test's activities run on.
func heldRun(t *testing.T) (*Host, *testsuite.TestActivityEnvironment) {
	t.Helper()
	o, err := engine.Start(definitions.Builtin(), "trial", filepath.Join(t.TempDir(), "run"), workflow.Params{"scenario": "clean"})
	require.NoError(t, err)
	t.Cleanup(o.Close)
	out, err := o.Step()
	require.NoError(t, err)
	require.Len(t, out.Jobs, 2)
	h := &Host{Run: o, Workflow: engine.Workflow{ID: WorkflowID(o.ID()), Namespace: "default", Address: "t:7233"},
		Sink: drive.NewPlain(io.Discard)}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(h)
	var begin BeginResult
	v, err := env.ExecuteActivity(h.Begin, BeginInput{Settings: settings})
	require.NoError(t, err)
	require.NoError(t, v.Get(&begin))
	require.Nil(t, begin.Fault)
	assert.Equal(t, 1, begin.Steps)
	assert.Len(t, begin.Unlaunched, 2, "the step's hand-outs, which no worker was launched for")
	return h, env
}

// lost asks the run's host about a lost launch of assumptions.
func lost(t *testing.T, env *testsuite.TestActivityEnvironment, h *Host, waited bool) LostResult {
	t.Helper()
	v, err := env.ExecuteActivity(h.Lost, LostInput{Job: Job{Handout: engine.Handout{Name: "assumptions", Attempt: 1}, Launch: 1},
		Settings: settings, Why: "heartbeat timeout", Waited: waited})
	require.NoError(t, err)
	var r LostResult
	require.NoError(t, v.Get(&r))
	require.Nil(t, r.Fault)
	return r
}

// outcomeOf reads the outcome of assumptions' first launch, or "" when
// none is recorded.
func outcomeOf(t *testing.T, h *Host) string {
	t.Helper()
	if !h.held().Recorded("assumptions", 1) {
		return ""
	}
	s, err := h.Run.Story("assumptions")
	require.NoError(t, err)
	require.NotEmpty(t, s.Handouts)
	require.NotEmpty(t, s.Handouts[0].Launches)
	return s.Handouts[0].Launches[0].Outcome
}

// A lost launch is recorded lost only once its worker can write no more:
// on another host, once its lease has expired; on this one, once its
// processes are gone, an orphan ended here; without a lease, after one
// wait for a worker host that ends its worker when it cannot give one.
func TestHost_lost(t *testing.T) {
	here, err := os.Hostname()
	require.NoError(t, err)
	lease := func(host string, expires time.Time, p engine.Process) engine.Lease {
		return engine.Lease{Job: "assumptions", Attempt: 1, Launch: 1, Process: p, Host: host,
			Expires: expires.UTC().Format(time.RFC3339Nano)}
	}
	far := engine.Process{Pid: 4242, Start: "1"}

	t.Run("on another host, unexpired", func(t *testing.T) {
		h, env := heldRun(t)
		require.NoError(t, h.held().Lease(lease("worker-7", time.Now().Add(time.Hour), far)))
		r := lost(t, env, h, false)
		assert.InDelta(t, time.Hour.Seconds(), r.Wait.Seconds(), 5, "the wait is not the lease's")
		assert.Empty(t, outcomeOf(t, h), "a worker that may still write was recorded lost")
	})
	t.Run("on another host, expired", func(t *testing.T) {
		h, env := heldRun(t)
		require.NoError(t, h.held().Lease(lease("worker-7", time.Now().Add(-time.Second), far)))
		assert.Zero(t, lost(t, env, h, false).Wait)
		assert.Equal(t, engine.LaunchLost, outcomeOf(t, h))
		assert.Zero(t, lost(t, env, h, false).Wait, "a lost launch asked about again")
	})
	t.Run("on this host, an orphan that runs", func(t *testing.T) {
		h, env := heldRun(t)
		orphan := exec.Command("sleep", "60")
		orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, orphan.Start())
		go func() { _ = orphan.Wait() }()
		start, err := proc.StartTime(orphan.Process.Pid)
		require.NoError(t, err)
		p := engine.Process{Pid: orphan.Process.Pid, Start: start}
		require.NoError(t, h.held().Lease(lease(here, time.Now().Add(time.Hour), p)))
		assert.Zero(t, lost(t, env, h, false).Wait)
		assert.Eventually(t, func() bool { return !proc.Alive(p.Pid, p.Start) }, 5*time.Second, 10*time.Millisecond,
			"the orphan on this host was not ended")
		assert.Equal(t, engine.LaunchLost, outcomeOf(t, h))
	})
	t.Run("no lease", func(t *testing.T) {
		h, env := heldRun(t)
		assert.Positive(t, lost(t, env, h, false).Wait, "a launch without a lease was recorded lost at once")
		assert.Empty(t, outcomeOf(t, h))
		assert.Zero(t, lost(t, env, h, true).Wait)
		assert.Equal(t, engine.LaunchLost, outcomeOf(t, h))
	})
}

// A launch's evidence sent twice (an activity retried after its first try
// committed) is recorded once; a stop reported twice is one report.
func TestHost_recordsOnce(t *testing.T) {
	h, env := heldRun(t)
	res := LaunchResult{Launch: &engine.Launch{Job: "assumptions", Attempt: 1, Launch: 1, Worker: "claude", Host: "worker-7",
		StartedAt: "2026-12-02T00:00:00Z", EndedAt: "2026-12-02T00:00:01Z", Outcome: string(drive.Finished)}, Stdout: []byte("out\n")}
	for range 2 {
		v, err := env.ExecuteActivity(h.Record, RecordInput{Result: res, Settings: settings})
		require.NoError(t, err)
		var r RecordResult
		require.NoError(t, v.Get(&r))
		require.Nil(t, r.Fault)
	}
	s, err := h.Run.Story("assumptions")
	require.NoError(t, err)
	assert.Len(t, s.Handouts[0].Launches, 1, "one launch recorded twice")

	for range 2 {
		_, err := env.ExecuteActivity(h.Report, ReportInput{Job: "claims", Why: "blocked; drive never repairs"})
		require.NoError(t, err)
	}
	log, err := h.Run.Log()
	require.NoError(t, err)
	stops := 0
	for _, e := range log {
		if e.Type == engine.EventReport && e.Kind == engine.ReportStop {
			stops++
		}
	}
	assert.Equal(t, 1, stops, "one stop reported twice")
}

// A usage-limited launch whose record is sent again (its first answer
// lost) is still launched again, not charged, at the same time.
func TestHost_aUsageLimitRecordedTwiceStillPauses(t *testing.T) {
	h, env := heldRun(t)
	res := LaunchResult{Launch: &engine.Launch{Job: "assumptions", Attempt: 1, Launch: 1, Worker: "claude", Host: "worker-7",
		StartedAt: "2026-12-02T00:00:00Z", EndedAt: "2026-12-02T00:00:01Z", Outcome: string(drive.UsageLimited), ExitStatus: 1,
		UsageLimit: &engine.UsageLimit{Known: true, Resets: "2026-12-02T00:30:00Z", Message: "limit reached"}}}
	var answers []RecordResult
	for range 2 {
		v, err := env.ExecuteActivity(h.Record, RecordInput{Result: res, Settings: settings})
		require.NoError(t, err)
		var r RecordResult
		require.NoError(t, v.Get(&r))
		require.Nil(t, r.Fault)
		answers = append(answers, r)
	}
	want := RecordResult{Again: true, Until: time.Date(2026, 12, 2, 0, 30, 0, 0, time.UTC)}
	for i, r := range answers {
		assert.True(t, r.Again, "answer %d does not launch again", i)
		assert.True(t, want.Until.Equal(r.Until), "answer %d: until %s", i, r.Until)
	}
}

// A lease the workflow was given and the run's host has not recorded yet
// holds the job as a recorded one does.
func TestHost_lostKnowsTheWorkflowsLease(t *testing.T) {
	h, env := heldRun(t)
	lease := engine.Lease{Job: "assumptions", Attempt: 1, Launch: 1, Process: engine.Process{Pid: 4242, Start: "1"},
		Host: "worker-7", Expires: time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)}
	v, err := env.ExecuteActivity(h.Lost, LostInput{Job: Job{Handout: engine.Handout{Name: "assumptions", Attempt: 1}, Launch: 1},
		Settings: settings, Why: "heartbeat timeout", Waited: true, Lease: &lease})
	require.NoError(t, err)
	var r LostResult
	require.NoError(t, v.Get(&r))
	assert.InDelta(t, time.Hour.Seconds(), r.Wait.Seconds(), 5, "a worker that may still write was taken for lost")
	assert.Empty(t, outcomeOf(t, h))
}
