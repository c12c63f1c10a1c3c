package engine_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/internal/proc"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// process names a process for a lease: this test's own, which runs, or
// one that has ended.
func process(t *testing.T, alive bool) engine.Process {
	t.Helper()
	if alive {
		start, err := proc.StartTime(os.Getpid())
		require.NoError(t, err)
		return engine.Process{Pid: os.Getpid(), Start: start}
	}
	cmd := exec.Command("true")
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	start, err := proc.StartTime(pid)
	require.NoError(t, err)
	require.NoError(t, cmd.Wait())
	return engine.Process{Pid: pid, Start: start}
}

// driving returns h's run as the drive d holds it, which has begun to
// drive the run.
func driving(t *testing.T, h *harness, d engine.Process) *engine.Driver {
	t.Helper()
	o, err := engine.Open(h.reg, h.dir)
	require.NoError(t, err)
	t.Cleanup(func() { o.Close() })
	held := o.Driver(d)
	require.NoError(t, held.Begin())
	return held
}

// inFlight is the round in flight in h's run, as any drive reads it.
func inFlight(t *testing.T, h *harness) *engine.Round {
	t.Helper()
	rd, err := h.o.Driver(engine.Process{}).InFlight()
	require.NoError(t, err)
	return rd
}

// leased is a run stepped once, whose job a a drive that has ended leased
// to the process p.
func leased(t *testing.T, p engine.Process) *harness {
	t.Helper()
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	d := driving(t, h, process(t, false))
	require.NoError(t, d.BeginRound())
	require.NoError(t, d.Lease(engine.Lease{Job: "a", Attempt: 1, Launch: 1, Process: p}))
	return h
}

// While a drive runs, it alone steps the run: every other loop is refused,
// and names it. A drive that has ended is cleared.
func TestDriver_aLiveDriveHasTheRun(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	self := process(t, true)
	d := driving(t, h, self)

	_, err := h.o.Step()
	var alive *engine.DriverAliveError
	require.ErrorAs(t, err, &alive)
	assert.Equal(t, engine.ExitBusy, engine.ExitCode(err))
	assert.Contains(t, err.Error(), fmt.Sprintf("custodian drive (pid %d), which still runs", self.Pid))
	other, err := engine.Open(h.reg, h.dir)
	require.NoError(t, err)
	defer other.Close()
	assert.ErrorAs(t, other.Driver(process(t, false)).Begin(), &alive, "a second drive began beside a live one")

	s, err := h.o.Status()
	require.NoError(t, err)
	require.NotNil(t, s.Round, "status does not show the drive")
	assert.Equal(t, self, s.Round.Driver)
	assert.Contains(t, s.Agent, "drives the run; do not step it")

	out, err := d.Step()
	require.NoError(t, err, "the drive's own step was refused")
	assert.Equal(t, engine.KindLaunch, out.Kind)
	require.NoError(t, d.End())
	_, err = h.o.Step()
	assert.NoError(t, err, "the run is not free after the drive ended")
	s, err = h.o.Status()
	require.NoError(t, err)
	assert.Nil(t, s.Round)

	t.Run("a drive that ended without saying so is cleared", func(t *testing.T) {
		h := startRun(t, oneJob(job("a")), source)
		driving(t, h, process(t, false))
		_, err := h.o.Step()
		require.NoError(t, err)
		assert.Zero(t, inFlight(t, h).Driver.Pid, "the ended drive is still recorded")
	})
}

// No worker is ever left running unseen: a step, or a drive's next round,
// refuses a run whose recorded workers still run, and names them; a round
// whose workers are all gone is cleared and the command goes on.
func TestDriver_liveWorkersRefuseTheRun(t *testing.T) {
	t.Run("a worker that runs", func(t *testing.T) {
		h := leased(t, process(t, true))
		for name, command := range map[string]func() error{
			"step": func() error { _, err := h.o.Step(); return err },
			"next drive": func() error {
				o, err := engine.Open(h.reg, h.dir)
				require.NoError(t, err)
				defer o.Close()
				return o.Driver(process(t, true)).Begin()
			},
			"end round": h.o.Driver(engine.Process{}).EndRound,
		} {
			err := command()
			var alive *engine.WorkersAliveError
			require.ErrorAs(t, err, &alive, name)
			assert.ErrorIs(t, err, engine.ErrBusy, name)
			assert.Equal(t, engine.ExitBusy, engine.ExitCode(err), name)
			assert.Contains(t, err.Error(), "a (pid ", name)
			assert.Contains(t, engine.Hint(err), "--reclaim", name)
		}
		rd := inFlight(t, h)
		require.NotNil(t, rd)
		assert.Len(t, rd.Workers, 1, "a refused command dropped the lease")
	})
	t.Run("a worker that has ended", func(t *testing.T) {
		h := leased(t, process(t, false))
		h.write("a.md", "# A\n")
		assert.Equal(t, engine.KindDone, h.step().Kind)
		rd := inFlight(t, h)
		require.NotNil(t, rd)
		assert.Empty(t, rd.Workers, "the ended worker's lease was kept")
	})
}

// Every launch leaves evidence where the history says, and its record
// drops the worker's lease.
func TestDriver_recordLaunch(t *testing.T) {
	h := leased(t, process(t, true))
	d := h.o.Driver(engine.Process{})
	dir, err := d.RecordLaunch(&engine.Launch{Job: "a", Attempt: 1, Launch: 1, Worker: "exec", Command: []string{"w", "p"},
		Env: []string{"PATH"}, Host: "h", Process: process(t, true), StartedAt: "2026-01-01T00:00:00Z", EndedAt: "2026-01-01T00:00:01Z",
		Outcome: "timed-out", ExitStatus: -1, Signal: "killed"}, []byte("out\n"), []byte("err\n"))
	require.NoError(t, err)
	assert.Equal(t, ".custodian/jobs/a/launch-1", dir)
	assert.Equal(t, "out\n", h.read(dir+"/stdout"))
	assert.Equal(t, "err\n", h.read(dir+"/stderr"))
	assert.Contains(t, h.read(dir+"/launch.json"), `"outcome":"timed-out"`)
	n, err := d.NextLaunch("a")
	require.NoError(t, err)
	assert.Equal(t, 2, n)

	assert.Empty(t, inFlight(t, h).Workers, "the recorded worker is still leased")
	events, err := h.o.Log()
	require.NoError(t, err)
	last := events[len(events)-1]
	assert.Equal(t, engine.EventLaunch, last.Type)
	assert.Equal(t, "a", last.Subject)
	assert.Equal(t, "timed-out, signal killed", last.Text)
	assert.Equal(t, dir, last.Path)

	s, err := h.o.Status()
	require.NoError(t, err)
	require.Len(t, s.Jobs, 1)
	require.NotNil(t, s.Jobs[0].LastLaunch, "status does not show the launch")
	assert.Equal(t, "timed-out", s.Jobs[0].LastLaunch.Outcome)
	assert.Equal(t, h.dir+"/"+dir, s.Jobs[0].LastLaunch.Evidence)

	_, err = d.RecordLaunch(&engine.Launch{Job: "nobody", Attempt: 1, Launch: 1, Outcome: "finished"}, nil, nil)
	assert.Error(t, err, "a launch of a job the run lacks was recorded")
}

// A launch that ends at the account's usage limit is not the job's fault:
// the first MaxUsageLimited of a job are free, and charge no attempt.
func TestDriver_usageLimitedIsFreeUpToTheBound(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	d := h.o.Driver(engine.Process{})
	for i := 1; i <= engine.MaxUsageLimited+1; i++ {
		rep, free, err := d.ReportUsageLimited("a", "hit your limit")
		require.NoError(t, err)
		assert.Equal(t, i <= engine.MaxUsageLimited, free, "launch %d", i)
		assert.Equal(t, engine.ReportUsageLimited, rep.Event)
	}
	assert.Equal(t, 1, h.state().Jobs["a"].Handouts, "a usage limit charged an attempt")
	h.write("a.md", "# A\n")
	assert.Equal(t, engine.KindDone, h.step().Kind)

	_, _, err := d.ReportUsageLimited("nobody", "hit your limit")
	assert.True(t, errors.Is(err, engine.ErrRefused), "%v", err)
	_, err = h.o.Report(engine.ReportUsageLimited, "", "hit your limit")
	assert.True(t, errors.Is(err, engine.ErrRefused) && strings.Contains(err.Error(), "names its job"), "%v", err)
}

// Running knows a drive by its own process only: a dead drive's pid is not
// kept alive by its group.
func TestRunning(t *testing.T) {
	self, dead := process(t, true), process(t, false)
	assert.True(t, proc.Running(self.Pid, self.Start))
	assert.False(t, proc.Running(dead.Pid, dead.Start))
	assert.False(t, proc.Running(self.Pid, "another start"), "a pid taken over by a later process")
	assert.False(t, proc.Running(0, ""))
}
