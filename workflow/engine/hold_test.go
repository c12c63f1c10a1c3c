package engine_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// held is h's run as the Temporal workflow w holds it, which has begun.
func held(t *testing.T, h *harness, w store.Workflow) *engine.Driver {
	t.Helper()
	o, err := engine.Open(h.reg, h.dir)
	require.NoError(t, err)
	t.Cleanup(func() { o.Close() })
	d := o.WorkflowDriver(w)
	require.NoError(t, d.Begin())
	return d
}

var loopWorkflow = store.Workflow{ID: "custodian-r1", Namespace: "default", Address: "temporal.example:7233"}

// A run a Temporal workflow holds is refused to every other loop, which is
// told the workflow's name; the workflow's own steps go through, whatever
// process takes them, and its end frees the run.
func TestWorkflowDriver_holdsTheRun(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	d := held(t, h, loopWorkflow)

	_, err := h.o.Step()
	var holds *engine.WorkflowHoldsError
	require.ErrorAs(t, err, &holds)
	assert.Equal(t, engine.ExitBusy, engine.ExitCode(err))
	assert.Contains(t, err.Error(), "Temporal workflow custodian-r1 (namespace default at temporal.example:7233)")
	assert.Contains(t, engine.Hint(err), "custodian-temporal drive")
	assert.ErrorAs(t, h.o.Driver(process(t, true)).Begin(), &holds, "a drive began beside the workflow")
	other := h.o.WorkflowDriver(store.Workflow{ID: "custodian-other"})
	assert.ErrorAs(t, other.Begin(), &holds, "a second workflow took the run")
	rival := h.o.WorkflowDriver(store.Workflow{ID: loopWorkflow.ID, Namespace: "default", Address: "elsewhere.example:7233"})
	assert.ErrorAs(t, rival.Begin(), &holds, "the run's workflow on another cluster took the run")
	_, err = h.o.Report(engine.ReportStop, "", "by hand")
	assert.ErrorAs(t, err, &holds, "a report of another loop was taken")

	s, err := h.o.Status()
	require.NoError(t, err)
	require.NotNil(t, s.Round)
	require.NotNil(t, s.Round.Workflow, "status does not show the workflow")
	assert.Equal(t, loopWorkflow, *s.Round.Workflow)
	assert.Contains(t, s.Agent, "Temporal workflow custodian-r1 drives the run")

	// Another process of the same workflow: a coordinator taken up again.
	again := h.o.HolderDriver(engine.Holder{Workflow: &store.Workflow{ID: loopWorkflow.ID}})
	out, err := again.Step()
	require.NoError(t, err, "the workflow's own step was refused")
	assert.Equal(t, engine.KindLaunch, out.Kind)

	require.NoError(t, d.End())
	_, err = h.o.Step()
	assert.NoError(t, err, "the run is not free after the workflow ended")
}

// A worker on another host cannot be seen from the run's: its lease holds
// the job until it expires, and then it is over.
func TestLease_onAnotherHostHoldsUntilItExpires(t *testing.T) {
	lease := func(expires time.Time) engine.Lease {
		return engine.Lease{Job: "a", Attempt: 1, Launch: 1, Process: engine.Process{Pid: 4242, Start: "1"},
			Host: "worker-7", Expires: expires.UTC().Format(time.RFC3339Nano)}
	}
	t.Run("unexpired", func(t *testing.T) {
		h := startRun(t, oneJob(job("a")), source)
		h.launch("a")
		d := held(t, h, loopWorkflow)
		require.NoError(t, d.Lease(lease(time.Now().Add(time.Hour))))

		_, err := d.Step()
		var alive *engine.WorkersAliveError
		require.ErrorAs(t, err, &alive, "a step judged a job whose worker may still write")
		assert.Contains(t, err.Error(), "run on host worker-7")
		out, err := d.StepLeaving(map[string]int{"a": 1})
		require.NoError(t, err, "the workflow's step beside its own worker was refused")
		assert.Equal(t, []string{"a"}, out.Running)
		l, err := d.LeaseOf("a", 1)
		require.NoError(t, err)
		require.NotNil(t, l)
		assert.Equal(t, "worker-7", l.Host)
		// A worker leased after that step: the round is as old as it.
		require.NoError(t, d.Lease(engine.Lease{Job: "a", Attempt: 1, Launch: 2, Process: engine.Process{Pid: 4243, Start: "1"},
			Host: "worker-7", Expires: time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)}))
		assert.Equal(t, 2, inFlight(t, h).Step, "the round is not as old as its newest worker's step")
	})
	t.Run("expired", func(t *testing.T) {
		h := startRun(t, oneJob(job("a")), source)
		h.launch("a")
		d := held(t, h, loopWorkflow)
		require.NoError(t, d.Lease(lease(time.Now().Add(-time.Second))))
		h.write("a.md", "# A\n")
		out, err := d.Step()
		require.NoError(t, err)
		assert.Equal(t, engine.KindDone, out.Kind)
		assert.Empty(t, inFlight(t, h).Workers, "the expired lease was kept")
	})
}

// A step asked for by its number is taken once: asked again, it gives the
// outcome its history recorded; a number out of turn is refused.
func TestDriver_stepNumber(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	d := held(t, h, loopWorkflow)
	first, err := d.StepNumber(1, nil)
	require.NoError(t, err)
	require.Equal(t, engine.KindLaunch, first.Kind)
	h.write("a.md", "# A\n")

	again, err := d.StepNumber(1, nil)
	require.NoError(t, err)
	assert.Equal(t, first.Kind, again.Kind, "step 1 was taken again")
	s, err := h.o.Status()
	require.NoError(t, err)
	assert.Equal(t, 1, s.Steps)

	_, err = d.StepNumber(3, nil)
	assert.ErrorIs(t, err, engine.ErrRefused, "a step out of turn was taken")
	done, err := d.StepNumber(2, nil)
	require.NoError(t, err)
	assert.Equal(t, engine.KindDone, done.Kind)
}

// A launch recorded twice (an activity retried after its first try
// committed) is one launch; a lease that comes after its launch's end is
// not taken.
func TestDriver_recordLaunchOnce(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	d := held(t, h, loopWorkflow)
	l := engine.Launch{Job: "a", Attempt: 1, Launch: 1, Worker: "exec", Host: "worker-7",
		StartedAt: "2026-01-01T00:00:00Z", EndedAt: "2026-01-01T00:00:01Z", Outcome: "finished"}
	for range 2 {
		again := l
		_, err := d.RecordLaunch(&again, []byte("out\n"), nil)
		require.NoError(t, err)
	}
	events, err := h.o.Log()
	require.NoError(t, err)
	launches := 0
	for _, e := range events {
		if e.Type == engine.EventLaunch {
			launches++
		}
	}
	assert.Equal(t, 1, launches, "one launch was recorded twice")

	require.NoError(t, d.Lease(engine.Lease{Job: "a", Attempt: 1, Launch: 1, Process: engine.Process{Pid: 9, Start: "1"},
		Host: "worker-7", Expires: time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)}))
	assert.Empty(t, inFlight(t, h).Workers, "a lease of a recorded launch was taken")
}

// A worker lost with its host is not the job's fault: its hand-out is
// given again, not charged.
func TestDriver_lostLaunchIsNotCharged(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	d := held(t, h, loopWorkflow)
	_, err := d.RecordLaunch(&engine.Launch{Job: "a", Attempt: 1, Launch: 1, Worker: "exec", Host: "worker-7",
		Outcome: engine.LaunchLost, ExitStatus: -1, Message: "the worker's heartbeat stopped"}, nil, nil)
	require.NoError(t, err)
	out, err := d.Step()
	require.NoError(t, err)
	require.Equal(t, engine.KindLaunch, out.Kind)
	require.Len(t, out.Jobs, 1)
	assert.Equal(t, 1, out.Jobs[0].Attempt, "the lost launch was charged as an attempt")
}

// A loop the workflow does not hold the run for records nothing of its
// workers: a drive --reclaim beside the workflow is refused before it
// records a lease as ended.
func TestWorkflowDriver_otherLoopsRecordNothing(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	d := held(t, h, loopWorkflow)
	require.NoError(t, d.Lease(engine.Lease{Job: "a", Attempt: 1, Launch: 1, Process: engine.Process{Pid: 4242, Start: "1"},
		Host: "worker-7", Expires: time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)}))
	other := h.o.Driver(process(t, true))
	var holds *engine.WorkflowHoldsError
	_, err := other.RecordLaunch(&engine.Launch{Job: "a", Attempt: 1, Launch: 1, Outcome: engine.LaunchFoundEnded}, nil, nil)
	assert.ErrorAs(t, err, &holds)
	assert.ErrorAs(t, other.NotLaunched([]engine.Handout{{Name: "a", Attempt: 1}}), &holds)
	assert.ErrorAs(t, other.Lease(engine.Lease{Job: "a", Attempt: 1, Launch: 2, Process: engine.Process{Pid: 9, Start: "1"}}), &holds)
	assert.Len(t, inFlight(t, h).Workers, 1, "the workflow's lease was dropped")
	assert.False(t, d.Recorded("a", 1))
}

// A launch whose evidence was kept and whose end was not committed (its
// drive ended in between) is committed when it is recorded again; one
// committed is not recorded twice.
func TestDriver_recordLaunchCommitsWhatWasKept(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	d := held(t, h, loopWorkflow)
	// The evidence as a drive that ended before its commit left it.
	l := &engine.Launch{Job: "a", Attempt: 1, Launch: 1, Worker: "exec", Outcome: engine.LaunchInterrupted, ExitStatus: -1,
		Command: []string{"w"}, Env: []string{}, StartedAt: "2026-01-01T00:00:00Z", EndedAt: "2026-01-01T00:00:01Z"}
	kept := filepath.Join(h.dir, ".custodian", "jobs", "a", "launch-1")
	require.NoError(t, os.MkdirAll(kept, 0o755))
	data, err := json.Marshal(struct {
		Format int    `json:"format"`
		Run    string `json:"run"`
		*engine.Launch
	}{1, h.o.ID(), l})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(kept, "launch.json"), data, 0o644))

	require.True(t, d.Recorded("a", 1), "the kept evidence does not read")
	_, err = d.RecordLaunch(&engine.Launch{Job: "a", Attempt: 1, Launch: 1, Outcome: engine.LaunchFoundEnded}, nil, nil)
	require.NoError(t, err)
	out, err := d.Step()
	require.NoError(t, err)
	require.Len(t, out.Jobs, 1)
	assert.Equal(t, 1, out.Jobs[0].Attempt, "the interrupted launch, kept and never committed, was charged")
}

// A hand-out recorded not launched twice (a retried activity) is noted
// once.
func TestDriver_notLaunchedOnce(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	out := h.launch("a")
	d := held(t, h, loopWorkflow)
	for range 2 {
		require.NoError(t, d.NotLaunched([]engine.Handout{out["a"]}))
	}
	events, err := h.o.Log()
	require.NoError(t, err)
	n := 0
	for _, e := range events {
		if e.Type == engine.EventLaunch && e.Kind == engine.LaunchNotLaunched {
			n++
		}
	}
	assert.Equal(t, 1, n, "one hand-out noted not launched twice")
}
