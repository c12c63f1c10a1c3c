package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/workflow/engine"
)

// A round a step by hand handed out is taken over by the next drive: every
// job launched once, none charged.
func TestDriveTakesOverARoundItDidNotLaunch(t *testing.T) {
	t.Parallel()
	dir := trialRun(t, "clean")
	require.Equal(t, firstLaunch(dir), ok(t, "step", dir), "the step by hand")
	h := newHarness(t, nil)
	r := driveRun(t, binary, h, dir, "exec")
	require.Equal(t, 0, r.code, "drive: stdout %q, stderr %s", r.stdout, r.stderr)
	ev := checkEvidence(t, dir, "exec", h, map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1})
	for job, ls := range ev {
		assert.Equal(t, 1, ls[0].Attempt, "%s", job)
		assert.Contains(t, ls[0].Command[len(ls[0].Command)-1], "prompt-1.md", "%s: the step's own prompt file", job)
	}
	for job, s := range statusJobs(t, dir) {
		assert.Equal(t, 1, s.Attempts, "%s was charged", job)
	}
}

// Two interrupts in a round of 31 jobs at --max-parallel 4: no job that
// drive never launched, or whose worker it ended, is charged, and the run
// then drives to done with no block.
func TestDriveInterruptedTwiceChargesNoJobItDidNotRun(t *testing.T) {
	t.Parallel()
	const jobs = 31
	bin := variantBinaries["fanout"]
	require.NotEmpty(t, bin, "no build of variant fanout")
	dir := filepath.Join(t.TempDir(), "run")
	r := run(t, bin, nil, "start", "fanout", "--run", dir, "--param", "jobs="+strconv.Itoa(jobs))
	require.Equal(t, 0, r.code, r.stderr)
	// drive launches in the order of the names: j1, j10, j11 and j12
	// first, at both drives; their workers hang until an interrupt ends
	// them, and every other job waits in the queue.
	plan := map[string][]string{}
	for _, name := range []string{"j1", "j10", "j11", "j12"} {
		plan[name] = []string{"hang", "hang", "valid"}
	}
	h := newHarness(t, plan)
	for round := 1; round <= 2; round++ {
		d := startDriveWith(t, bin, h, dir, "exec", "--max-parallel", "4", "--grace", "200ms")
		waitFor(t, "four workers of the drive leased and started", func() bool {
			rd := roundInFlight(t, dir)
			return rd != nil && len(rd.Workers) == 4 && len(h.starts(t)) == 4*round
		})
		require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
		r := d.wait(t)
		require.Equal(t, 12, r.code, "interrupt %d: stdout %q, stderr %s", round, r.stdout, r.stderr)
	}
	r = driveRun(t, bin, h, dir, "exec", "--max-parallel", "4")
	require.Equal(t, 0, r.code, "the drive after two interrupts: stdout %q, stderr %s", r.stdout, r.stderr)
	assert.Equal(t, "done\n", r.stdout)
	log := run(t, bin, nil, "log", dir).stdout
	assert.NotContains(t, log, "blocked")
	assert.Contains(t, log, "(not launched)")
	assert.Contains(t, log, "(ended by an interrupt)")
	for job, s := range statusJobsWith(t, bin, dir) {
		assert.Equal(t, "accepted", s.State, job)
		assert.Equal(t, 1, s.Attempts, "%s was charged for work no worker did", job)
	}
}

// A harness whose session was cut says so before its resumed session's
// first step: the round's hand-outs without an output are handed out
// again with the same attempt numbers.
func TestHarnessResumeWithAnInterruptedReport(t *testing.T) {
	dir := trialRun(t, "clean")
	ok(t, "step", dir)
	writeText(t, filepath.Join(dir, "claims.md"), "# Claims\n\n- one\n- two\n")
	ok(t, "report", dir, "interrupted", "--text", "the session was cut; the operator says its workers stopped")
	step := ok(t, "step", dir, "--json")
	assert.Contains(t, step, `"name":"assumptions","attempt":1,"prompt":"`+filepath.Join(dir, ".custodian/jobs/assumptions/prompt-2.md")+`"`,
		"the cut round charged assumptions")
	assert.NotContains(t, step, `"name":"claims"`, "claims' output was not judged")
	assert.Contains(t, ok(t, "log", dir), "not charged: assumptions, attempt 1, has no output and no worker attempted it (the harness session that launched it was cut")
}

// An operator's command at the instant drive records a finished worker
// does not end the round: drive waits for the lock, and the evidence is
// kept.
func TestDriveBookkeepingWaitsForAnOperatorsCommand(t *testing.T) {
	t.Parallel()
	dir := trialRun(t, "clean")
	h := newHarness(t, map[string][]string{"claims": {"slow:1"}, "assumptions": {"slow:1"}})
	d := startDrive(t, h, dir, "exec")
	waitLeased(t, dir, h, 2)
	lock := flock.New(filepath.Join(dir, engine.StateDir, "lock"))
	require.NoError(t, lock.Lock())
	time.Sleep(1200 * time.Millisecond) // the workers end while the lock is held
	require.NoError(t, lock.Unlock())
	r := d.wait(t)
	require.Equal(t, 0, r.code, "drive: stdout %q, stderr %s", r.stdout, r.stderr)
	checkEvidence(t, dir, "exec", h, map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1})
}

// While a drive drives the run, a report from anyone else is refused as a
// step is, naming the drive.
func TestReportBesideALiveDriveIsBusy(t *testing.T) {
	t.Parallel()
	dir := trialRun(t, "clean")
	h := newHarness(t, map[string][]string{"claims": {"hang", "valid"}, "assumptions": {"hang", "valid"}})
	d := startDrive(t, h, dir, "exec", "--grace", "200ms")
	waitLeased(t, dir, h, 2)
	r := run(t, binary, nil, "report", dir, "stop", "--text", "a second loop")
	assert.Equal(t, 3, r.code, "stdout %q, stderr %s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "is driven by custodian drive (pid "+strconv.Itoa(d.cmd.Process.Pid)+")")
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
	d.wait(t)
	assert.NotContains(t, ok(t, "log", dir), "a second loop")
}

// drive says what each step decided, and reports a stop at a block on a
// job with --job, as the loop instruction says.
func TestDriveSaysWhatEachStepDecided(t *testing.T) {
	t.Parallel()
	dir := trialRun(t, "stop")
	h := newHarness(t, nil)
	r := driveRun(t, binary, h, dir, "exec")
	require.Equal(t, 10, r.code, "drive: stdout %q, stderr %s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "step 2 decided: accepted 1; refused 1 (validator-refused): assumptions; handed out 1: assumptions")
	assert.Contains(t, r.stderr, "step 3 decided: accepted 0; refused 1 (validator-refused): assumptions; blocked 1 (validator-refused): assumptions")
	log := ok(t, "log", dir)
	assert.Contains(t, log, "report 1, stop on assumptions: blocked; drive never repairs: assumptions: ")
	records, err := filepath.Glob(filepath.Join(dir, engine.StateDir, "jobs", "assumptions", "block-*.md"))
	require.NoError(t, err)
	require.Len(t, records, 1)
	data, err := os.ReadFile(records[0])
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(data), "(launches: finished, exit 0)"), "the block record lists no launches:\n%s", data)
}

// roundInFlight reads the run's round.json, or nil while it has none or
// while it is being replaced.
func roundInFlight(t *testing.T, dir string) *engine.Round {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, engine.StateDir, "round.json"))
	if err != nil {
		return nil
	}
	var rd engine.Round
	if json.Unmarshal(data, &rd) != nil {
		return nil
	}
	return &rd
}
