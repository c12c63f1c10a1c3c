package servertest

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two worker processes on one task queue share a fan-out: never more
// workers at once than --max-parallel, over both, and each job launched
// once for its one hand-out.
func TestTwoWorkersShareAFanOut(t *testing.T) {
	const jobs, parallel = 40, 8
	dir := fanoutRun(t, jobs)
	plan := map[string][]string{}
	for i := 1; i <= jobs; i++ {
		plan[fmt.Sprintf("j%d", i)] = []string{"slow:0.4"}
	}
	h := newHarness(t, plan)
	a, b := h.worker(t, "--max-parallel", "8"), h.worker(t, "--max-parallel", "8")
	d := h.drive(t, dir, "--max-parallel", fmt.Sprint(parallel))
	require.Equal(t, 0, d.wait(t, 3*time.Minute), "drive: stdout %q\nstderr %s", d.stdout.String(), d.stderr.String())
	assert.Equal(t, "done\n", d.stdout.String())

	starts := h.starts(t)
	assert.Len(t, starts, jobs)
	for job, n := range starts {
		assert.Equal(t, 1, n, "%s was launched %d times for one hand-out", job, n)
	}
	running, most := 0, 0
	events := h.events(t)
	slices.SortStableFunc(events, func(x, y workerEvent) int { return int(x.at - y.at) })
	for _, e := range events {
		if e.what == "start" {
			running++
		} else {
			running--
		}
		most = max(most, running)
	}
	assert.LessOrEqual(t, most, parallel, "more workers ran at once than --max-parallel")
	assert.Greater(t, most, 1, "the workers never ran side by side")
	for name, w := range map[string]*process{"first": a, "second": b} {
		assert.Contains(t, w.stderr.String(), "launched", "the %s worker process launched nothing", name)
	}
}

// A worker process killed mid-activity: its worker dies with it (its
// keeper ends the group), the activity times out by heartbeat, and the
// job, its attempt not charged, is handed out again only once the lost
// worker cannot write, and is finished by the other worker process.
func TestAKilledWorkerProcessLosesNoJob(t *testing.T) {
	dir := fanoutRun(t, 1)
	h := newHarness(t, map[string][]string{"j1": {"spawn-and-hang", "valid"}})
	first := h.worker(t)
	d := h.drive(t, dir, "--idle-timeout", "3s")
	orphan := h.untilStarted(t, 1, 2*time.Minute)[0]
	time.Sleep(300 * time.Millisecond) // for the worker's child to start
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	assert.Eventually(t, func() bool { return groupGone(orphan.pid) }, 10*time.Second, 20*time.Millisecond,
		"the killed worker process's worker group lived on")

	h.worker(t)
	require.Equal(t, 0, d.wait(t, 2*time.Minute), "drive: stdout %q\nstderr %s", d.stdout.String(), d.stderr.String())
	assert.Equal(t, "done\n", d.stdout.String())
	assert.Equal(t, map[string][]string{"j1": {"lost", "finished"}}, outcomes(t, dir))
	ls := launches(t, dir)["j1"]
	require.Len(t, ls, 2)
	assert.Equal(t, orphan.pid, ls[0].Process.Pid, "the lost launch names another process")
	assert.Equal(t, 1, ls[1].Attempt, "the lost worker's attempt was charged")
	assert.Contains(t, run(t, "log", dir).stdout, "lost")
}

// The coordinator SIGKILLed mid-round and started again: the workflow
// waits meanwhile, the run stays held, and the new drive takes it up
// where its history stands: no job launched twice for one hand-out, no
// step taken twice.
func TestACoordinatorKilledMidRoundIsTakenUp(t *testing.T) {
	const jobs = 6
	dir := fanoutRun(t, jobs)
	plan := map[string][]string{}
	for i := 1; i <= jobs; i++ {
		plan[fmt.Sprintf("j%d", i)] = []string{"slow:1.5"}
	}
	h := newHarness(t, plan)
	h.worker(t)
	first := h.drive(t, dir, "--max-parallel", "3")
	h.untilStarted(t, 3, 2*time.Minute)
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	first.wait(t, 10*time.Second)

	refused := run(t, "step", dir)
	assert.Equal(t, 3, refused.code, "a step beside the workflow whose coordinator died: %s", refused.stderr)
	assert.Contains(t, refused.stderr, "Temporal workflow custodian-")
	time.Sleep(2 * time.Second) // the first round's workers end while no coordinator runs

	second := h.drive(t, dir, "--max-parallel", "3")
	require.Equal(t, 0, second.wait(t, 2*time.Minute), "second drive: stdout %q\nstderr %s", second.stdout.String(), second.stderr.String())
	assert.Contains(t, second.stderr.String(), "attached to")
	assert.Equal(t, "done\n", second.stdout.String())
	for job, n := range h.starts(t) {
		assert.Equal(t, 1, n, "%s was launched %d times for one hand-out", job, n)
	}
	assert.Len(t, h.starts(t), jobs)
	for job, o := range outcomes(t, dir) {
		assert.Equal(t, []string{"finished"}, o, "%s", job)
	}
	var steps []int
	for _, line := range strings.Split(run(t, "log", dir).stdout, "\n") {
		var n int
		if f := strings.Fields(line); len(f) >= 5 && f[1] == "step" && f[3] == "outcome:" {
			_, err := fmt.Sscan(f[2], &n)
			require.NoError(t, err, "%q", line)
			steps = append(steps, n)
		}
	}
	require.NotEmpty(t, steps, "the log shows no step")
	for i, n := range steps {
		assert.Equal(t, i+1, n, "the run's steps are not 1 to N, each once: %v", steps)
	}
}

// An interrupted drive (SIGINT) cancels the workflow: every worker's group
// is ended, each launch recorded as interrupted, not charged, and the run
// freed, its status 12.
func TestAnInterruptEndsEveryWorker(t *testing.T) {
	const jobs = 3
	dir := fanoutRun(t, jobs)
	h := newHarness(t, map[string][]string{"j1": {"spawn-and-hang"}, "j2": {"spawn-and-hang"}, "j3": {"spawn-and-hang"}})
	h.worker(t)
	d := h.drive(t, dir, "--idle-timeout", "1m")
	started := h.untilStarted(t, jobs, 2*time.Minute)
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 12, d.wait(t, time.Minute), "drive: stdout %q\nstderr %s", d.stdout.String(), d.stderr.String())
	for _, s := range started {
		assert.True(t, groupGone(s.pid), "the group of %s's worker (pid %d) lived on", s.job, s.pid)
	}
	for job, o := range outcomes(t, dir) {
		assert.Equal(t, []string{"interrupted"}, o, "%s", job)
	}
	status := run(t, "status", dir)
	assert.NotContains(t, status.stdout, "driven:", "the run is still held")
	after := run(t, "step", dir)
	require.Equal(t, 0, after.code, "a step after the interrupt: %s", after.stderr)
	assert.True(t, strings.HasPrefix(after.stdout, "launch\n"), "the interrupted jobs were charged: %q", after.stdout)
}

// A worker that hits the account's usage limit is not the job's fault:
// launching waits for the limit to lift, and the job is launched again
// with the same hand-out, not charged; its evidence came back to the
// run's host.
func TestAUsageLimitPausesWithoutCharge(t *testing.T) {
	dir := fanoutRun(t, 1)
	h := newHarness(t, map[string][]string{"j1": {"usage-limit:2", "valid"}})
	h.worker(t)
	d := h.drive(t, dir)
	require.Equal(t, 0, d.wait(t, 2*time.Minute), "drive: stdout %q\nstderr %s", d.stdout.String(), d.stderr.String())
	assert.Equal(t, map[string][]string{"j1": {"usage-limited", "finished"}}, outcomes(t, dir))
	for _, l := range launches(t, dir)["j1"] {
		assert.Equal(t, 1, l.Attempt, "a launch at the usage limit was charged")
		assert.Positive(t, l.Stdout.Kept, "launch %d's output did not come back to the run's host", l.Launch)
	}
	assert.Contains(t, run(t, "log", dir).stdout, "usage-limited")
}

// A worker host that serves another profile than the drive names makes
// no launch: each is recorded failed-to-start and reported, as a launch
// that failed, and the job blocks after its attempts.
func TestAWorkerOfAnotherProfileLaunchesNothing(t *testing.T) {
	dir := fanoutRun(t, 1)
	h := newHarness(t, nil)
	h.start(t, append(append([]string{"worker"}, connect()...), "--task-queue", h.queue, "--worker", "codex")...)
	d := h.drive(t, dir)
	require.Equal(t, 10, d.wait(t, 2*time.Minute), "drive: stdout %q\nstderr %s", d.stdout.String(), d.stderr.String())
	assert.Empty(t, h.starts(t))
	for _, l := range launches(t, dir)["j1"] {
		assert.Equal(t, "failed-to-start", l.Outcome)
		assert.Contains(t, l.Message, "serves profile codex, and the drive launches claude")
	}
	assert.Contains(t, run(t, "log", dir).stdout, "launch-failed")
}

// A worker process stopped with Ctrl-C ends its workers, each with its
// grace, and sends their evidence back: the launches are recorded as
// interrupted, not charged, and the jobs handed out again to the worker
// that takes its place.
func TestAStoppedWorkerProcessSendsItsEvidence(t *testing.T) {
	dir := fanoutRun(t, 2)
	h := newHarness(t, map[string][]string{"j1": {"hang", "valid"}, "j2": {"hang", "valid"}})
	first := h.worker(t)
	d := h.drive(t, dir, "--idle-timeout", "1m")
	h.untilStarted(t, 2, 2*time.Minute)
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 0, first.wait(t, time.Minute), "the stopped worker: %s", first.stderr.String())
	h.worker(t)
	require.Equal(t, 0, d.wait(t, 2*time.Minute), "drive: stdout %q\nstderr %s", d.stdout.String(), d.stderr.String())
	assert.Equal(t, map[string][]string{"j1": {"interrupted", "finished"}, "j2": {"interrupted", "finished"}}, outcomes(t, dir))
}

// A workflow whose history outgrows --renew-at goes on as a new execution,
// which takes up what it queued, and drive follows it to the run's end.
func TestALongRunGoesOnAsNew(t *testing.T) {
	const jobs = 6
	dir := fanoutRun(t, jobs)
	h := newHarness(t, nil)
	h.worker(t)
	d := h.drive(t, dir, "--max-parallel", "2", "--renew-at", "20000")
	require.Equal(t, 0, d.wait(t, 2*time.Minute), "drive: stdout %q\nstderr %s", d.stdout.String(), d.stderr.String())
	assert.Equal(t, "done\n", d.stdout.String())
	assert.Len(t, h.starts(t), jobs)
	log := run(t, "log", dir).stdout
	assert.Contains(t, log, "not launched", "the workflow never went on as new")
	for job, o := range outcomes(t, dir) {
		assert.Equal(t, []string{"finished"}, o, "%s", job)
	}
}

// A drive that attaches serves the workflow with the settings it was
// started with, not its own: here its own profile could not launch a
// single hand-out.
func TestAnAttachingDriveKeepsTheWorkflowsSettings(t *testing.T) {
	const jobs = 3
	dir := fanoutRun(t, jobs)
	plan := map[string][]string{}
	for i := 1; i <= jobs; i++ {
		plan[fmt.Sprintf("j%d", i)] = []string{"slow:1"}
	}
	h := newHarness(t, plan)
	h.worker(t)
	first := h.drive(t, dir, "--max-parallel", "1")
	h.untilStarted(t, 1, 2*time.Minute)
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	first.wait(t, 10*time.Second)

	args := append(append([]string{"drive", dir}, connect()...), "--task-queue", h.queue,
		"--worker", "exec", "--command", "'/bin/true' {param:nothing}", "--grace", "1s", "--idle-timeout", "5s")
	second := h.start(t, args...)
	require.Equal(t, 0, second.wait(t, 2*time.Minute), "second drive: stdout %q\nstderr %s", second.stdout.String(), second.stderr.String())
	assert.Equal(t, "done\n", second.stdout.String())
	assert.Len(t, h.starts(t), jobs)
}
