package main

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipelinesRun starts a run of the pipelines definition (the fanout
// variant's) with items items.
func pipelinesRun(t *testing.T, items string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pipelines")
	redefOK(t, "fanout", "start", "pipelines", "--run", dir, "--param", "items="+items)
	return dir
}

// span is when a worker of a job ran, by the workers' log.
func spans(t *testing.T, h *harness) map[string][2]int64 {
	t.Helper()
	out := map[string][2]int64{}
	for _, e := range h.events(t) {
		s := out[e.job]
		if e.what == "start" {
			s[0] = e.at
		} else {
			s[1] = e.at
		}
		out[e.job] = s
	}
	return out
}

// No round barrier: a job starts as soon as what it waits on is accepted,
// while unrelated workers still run, and the drive says how the work in
// flight stands after each step.
func TestDriveLaunchesAJobWhenWhatItWaitsOnIsAccepted(t *testing.T) {
	t.Parallel()
	dir := pipelinesRun(t, "2")
	h := newHarness(t, map[string][]string{"audit-01": {"slow:0.2"}, "audit-02": {"slow:3"}, "follow-01": {"slow:0.2"}})
	r := driveRun(t, variantBinaries["fanout"], h, dir, "exec", "--json")
	require.Equal(t, 0, r.code, r.stderr)

	s := spans(t, h)
	require.Contains(t, s, "follow-01")
	require.NotZero(t, s["follow-01"][1], "follow-01's worker never ended")
	assert.Less(t, s["follow-01"][0], s["audit-02"][1], "follow-01 waited for audit-02, which it does not read")
	assert.Less(t, s["follow-01"][1], s["audit-02"][1], "follow-01 ended while audit-02 still ran")
	assert.Greater(t, s["follow-02"][0], s["audit-02"][1])
	assert.Greater(t, s["join"][0], s["follow-02"][1])

	type flowEvent struct {
		Event string   `json:"event"`
		Jobs  []string `json:"jobs"`
		Flow  struct {
			Running []string `json:"running"`
			Queued  int      `json:"queued"`
			Judged  int      `json:"judged"`
		} `json:"flow"`
	}
	var flows []flowEvent
	var handedOut [][]string
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		var e flowEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Event {
		case "flow":
			flows = append(flows, e)
		case "round":
			handedOut = append(handedOut, e.Jobs)
		}
	}
	require.Contains(t, handedOut, []string{"follow-01"}, "follow-01 handed out alone, as soon as audit-01 was accepted")
	seen := false
	for _, f := range flows {
		if strings.Join(f.Flow.Running, ",") == "audit-02" && f.Flow.Judged == 1 {
			seen = true
		}
	}
	assert.True(t, seen, "no flow event after the step that judged audit-01 with audit-02 running: %s", r.stdout)
	assert.True(t, strings.HasSuffix(r.stdout, "{\"outcome\":\"done\"}\n"), "%s", r.stdout)
}

// A block stops new launches; the workers that run end on their own before
// drive reports the stop, and what they wrote is judged by the next step.
func TestDriveStopsLaunchingAtABlockAndLetsItsWorkersEnd(t *testing.T) {
	t.Parallel()
	dir := pipelinesRun(t, "2")
	h := newHarness(t, map[string][]string{"audit-01": {"problem"}, "audit-02": {"slow:2"}})
	r := driveRun(t, variantBinaries["fanout"], h, dir, "exec")
	require.Equal(t, 10, r.code, "blocked: %s", r.stderr)
	s := spans(t, h)
	require.Contains(t, s, "audit-02")
	assert.NotZero(t, s["audit-02"][1], "audit-02's worker was not let end")
	assert.NotContains(t, s, "follow-01")
	assert.NotContains(t, s, "follow-02", "a job was launched after the block")

	log := redefOK(t, "fanout", "log", dir)
	assert.Contains(t, log, "launched audit-02, attempt 1: finished, exit 0")
	assert.NotContains(t, log, "accepted audit-02", "the block's step judged a worker that still ran")
	reported := strings.Index(log, "report 1, stop on audit-01")
	ended := strings.Index(log, "launched audit-02, attempt 1: finished")
	require.Positive(t, reported)
	assert.Less(t, ended, reported, "drive reported the stop before its worker ended")

	redefOK(t, "fanout", "step", dir)
	assert.Contains(t, redefOK(t, "fanout", "log", dir, "--job", "audit-02"), "accepted audit-02, attempt 1", "the output written after the block is lost")
}

// The log says what each of a drive's steps left running, in one line.
func TestLogSaysWhatADrivesStepLeftRunning(t *testing.T) {
	t.Parallel()
	dir := pipelinesRun(t, "2")
	h := newHarness(t, map[string][]string{"audit-01": {"slow:0.2"}, "audit-02": {"slow:2"}})
	r := driveRun(t, variantBinaries["fanout"], h, dir, "exec")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `step 2 +outcome: launch \(left running: audit-02\)\n`, redefOK(t, "fanout", "log", dir))
}

// A drive's step beside running workers waits a moment for a lock another
// command holds (an operator's command that is refused), rather than fail
// and end the workers.
func TestADrivesStepBesideItsWorkersWaitsForAnOperatorsLock(t *testing.T) {
	t.Parallel()
	dir := pipelinesRun(t, "2")
	h := newHarness(t, map[string][]string{"audit-01": {"slow:0.3"}, "audit-02": {"slow:2.5"}})
	d := startDriveWith(t, variantBinaries["fanout"], h, dir, "exec")
	waitLeased(t, dir, h, 2)
	lock := flock.New(filepath.Join(dir, engine.StateDir, "lock"))
	require.NoError(t, lock.Lock())
	time.Sleep(1200 * time.Millisecond) // audit-01 ends, and drive's step waits
	require.NoError(t, lock.Unlock())
	r := d.wait(t)
	require.Equal(t, 0, r.code, "drive: stdout %q, stderr %s", r.stdout, r.stderr)
	s := spans(t, h)
	assert.Less(t, s["follow-01"][0], s["audit-02"][1], "the step after the lock went on beside audit-02")
	assert.NotContains(t, redefOK(t, "fanout", "log", dir), "killed", "a worker was ended")
}

// A step that ends inside an effect while a worker runs stops new
// launches as an uncertain outcome does: the worker ends and is recorded,
// then drive reports the stop and ends uncertain.
func TestDriveLetsItsWorkersEndWhenAStepEndsInsideAnEffect(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "sideeffect")
	redefOK(t, "fanout", "start", "sideeffect", "--run", dir)
	h := newHarness(t, map[string][]string{"quick": {"slow:0.2"}, "slow": {"slow:2"}})
	r := driveRun(t, variantBinaries["fanout"], h, dir, "exec")
	require.Equal(t, 11, r.code, "uncertain: stdout %q, stderr %s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "custodian: step ended with exit status 9, inside an effect; drive reported the stop")
	s := spans(t, h)
	require.Contains(t, s, "slow")
	assert.NotZero(t, s["slow"][1], "slow's worker was not let end")

	log := redefOK(t, "fanout", "log", dir)
	ended := strings.Index(log, "launched slow, attempt 1: finished, exit 0")
	reported := strings.Index(log, "stop: step ended with exit status 9, inside an effect")
	require.Positive(t, ended, log)
	require.Positive(t, reported, log)
	assert.Less(t, ended, reported, "drive reported the stop before its worker ended")
}

// A launch set-up that cannot launch what a step hands out while workers
// run launches nothing more: the workers end and are recorded, drive
// exits 2 naming the job, and the hand-out stays for the next drive.
func TestDriveStopsAtALaunchSetupFaultAndLetsItsWorkersEnd(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "pipelines")
	redefOK(t, "fanout", "start", "pipelines", "--run", dir, "--param", "items=3", "--param", "model=small")
	// One place: audit-02 takes audit-01's at once, and audit-03 waits.
	h := newHarness(t, map[string][]string{"audit-01": {"slow:0.2"}, "audit-02": {"slow:2"}})
	r := driveRun(t, variantBinaries["fanout"], h, dir, "exec", "--max-parallel", "1")
	require.Equal(t, 2, r.code, "stdout %q, stderr %s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, `follow-01: launch parameter "model"`)
	s := spans(t, h)
	assert.NotZero(t, s["audit-02"][1], "audit-02's worker was not let end")
	assert.NotContains(t, s, "audit-03", "a queued job was launched after the fault")
	assert.NotContains(t, s, "follow-01")
	log := redefOK(t, "fanout", "log", dir)
	assert.Contains(t, log, "launched audit-02, attempt 1: finished, exit 0")
	notLaunched := strings.Index(log, "launched audit-03, attempt 1: not launched: drive stopped before it started a worker\n")
	require.Positive(t, notLaunched, "the queued job is not charged: %s", log)
	assert.Less(t, notLaunched, strings.Index(log, "launched audit-02, attempt 1: finished"),
		"the queue is recorded when drive stops launching, before its workers end")
}
