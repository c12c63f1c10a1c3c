package servertest

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every trial scenario, driven through Temporal, ends where custodian
// drive ends it: the same exit status, the same launches, the stop
// reported, the run free again.
func TestTrialScenarios(t *testing.T) {
	tests := []struct {
		scenario string
		flags    []string
		plan     map[string][]string
		code     int
		launches map[string]int
	}{
		{scenario: "clean", code: 0, launches: map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}},
		{scenario: "retry", plan: map[string][]string{"reconcile": {"valid", "checked"}}, code: 0,
			launches: map[string]int{"assumptions": 1, "claims": 1, "reconcile": 2}},
		{scenario: "problem", plan: map[string][]string{"notes": {"problem"}}, code: 10,
			launches: map[string]int{"assumptions": 1, "claims": 1, "notes": 1}},
		{scenario: "stop", code: 10, launches: map[string]int{"assumptions": 2, "claims": 1}},
		{scenario: "stop-only", code: 10, launches: map[string]int{"assumptions": 2, "claims": 1}},
		{scenario: "parameters", flags: []string{"--launch", "model=small"}, code: 0,
			launches: map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}},
		{scenario: "uncertain", code: 11, launches: map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}},
		{scenario: "busy", flags: []string{"--hold", "3"}, code: 3, launches: map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			dir := trialRun(t, tt.scenario, tt.flags...)
			h := newHarness(t, tt.plan)
			h.worker(t)
			d := h.drive(t, dir)
			code := d.wait(t, 2*time.Minute)
			require.Equal(t, tt.code, code, "drive: stdout %q\nstderr %s", d.stdout.String(), d.stderr.String())
			assert.Equal(t, tt.launches, h.starts(t), "the workers launched")

			switch tt.scenario {
			case "busy":
				assert.Empty(t, d.stdout.String())
				assert.Contains(t, d.stderr.String(), "custodian: hint: another custodian process is working on this run")
				// Once the hold is over, a drive takes the round the
				// background step handed out and nobody launched.
				require.Eventually(t, func() bool {
					d = h.drive(t, dir)
					return d.wait(t, 2*time.Minute) != 3
				}, 20*time.Second, 500*time.Millisecond, "the run stayed busy")
				require.Equal(t, 0, d.code, "drive after the hold: stdout %q\nstderr %s", d.stdout.String(), d.stderr.String())
				assert.Equal(t, "done\n", d.stdout.String())
				assert.Equal(t, map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}, h.starts(t))
				return
			case "uncertain":
				assert.Empty(t, d.stdout.String(), "a step that ended inside an effect printed nothing: nor does drive")
				assert.Contains(t, d.stderr.String(), "the process ended while publishing")
			}
			for job, n := range tt.launches {
				assert.Len(t, outcomes(t, dir)[job], n, "the evidence of %s", job)
			}
			if tt.code == 10 || tt.code == 11 {
				log := run(t, "log", dir)
				assert.Contains(t, log.stdout, ", stop", "drive reported no stop")
			}
			after := run(t, "step", dir)
			require.Equal(t, 0, after.code, "the run is not free after the workflow: %s", after.stderr)
			switch tt.code {
			case 0:
				assert.Equal(t, "done\n", d.stdout.String())
			case 10:
				assert.True(t, strings.HasPrefix(d.stdout.String(), "blocked\n"), "drive's stdout: %q", d.stdout.String())
			}
		})
	}
}

// While a workflow drives the run, every other loop is refused, and told
// the workflow's name; drive's own step goes through.
func TestAHeldRunRefusesOtherLoops(t *testing.T) {
	dir := fanoutRun(t, 2)
	h := newHarness(t, map[string][]string{"j1": {"slow:30"}, "j2": {"slow:30"}})
	h.worker(t)
	d := h.drive(t, dir)
	h.untilStarted(t, 2, 2*time.Minute)
	for _, args := range [][]string{{"step", dir}, {"report", dir, "stop"}} {
		// Refused either way; while the coordinator records a lease, by
		// the run's lock rather than by the hold.
		var r result
		assert.Eventually(t, func() bool {
			r = run(t, args...)
			return r.code != 3 || strings.Contains(r.stderr, "is driven by Temporal workflow custodian-")
		}, 10*time.Second, 50*time.Millisecond, "%v was not told of the workflow: %s", args, r.stderr)
		assert.Equal(t, 3, r.code, "%v: %s", args, r.stderr)
	}
	status := run(t, "status", dir)
	assert.Contains(t, status.stdout, "driven: by Temporal workflow custodian-")
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 12, d.wait(t, time.Minute), "stderr: %s", d.stderr.String())
}

// A launch set-up that cannot launch a hand-out fails the drive with exit
// 2, the fault's message and hint, as custodian drive does; nothing is
// launched, and the run is free again.
func TestALaunchSetUpThatCannotLaunchExits2(t *testing.T) {
	dir := trialRun(t, "parameters", "--launch", "model=small")
	h := newHarness(t, nil)
	h.worker(t)
	args := append(append([]string{"drive", dir}, connect()...), "--task-queue", h.queue,
		"--worker", "exec", "--command", "'"+fakeworker+"' {prompt}", "--grace", "1s")
	d := h.start(t, args...)
	require.Equal(t, 2, d.wait(t, 2*time.Minute), "drive: stdout %q\nstderr %s", d.stdout.String(), d.stderr.String())
	assert.Contains(t, d.stderr.String(), `custodian: drive: the launch set-up cannot launch this round`)
	assert.Contains(t, d.stderr.String(), `launch parameter "model"`)
	assert.Contains(t, d.stderr.String(), "\ncustodian: hint: fix --command or the jobs' launch parameters")
	assert.Empty(t, d.stdout.String())
	assert.Empty(t, h.starts(t))
	after := run(t, "step", dir)
	assert.Equal(t, 0, after.code, "the run is not free after the fault: %s", after.stderr)
}
