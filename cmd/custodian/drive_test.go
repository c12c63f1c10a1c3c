package main

// The process tests of custodian drive: the real binary, in a process of
// its own, launching the fake worker (drive/testdata/fakeworker) as the
// exec, claude and codex profiles run it, and the run's records, the
// workers' log and /proc checked afterwards.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fake worker, built once by TestMain (driveBuilds), and the
// directory where claude and codex are links to it, for the PATH of the
// drives that run those profiles (and no other process's).
var (
	fakeworker string
	fakeBin    string
)

// driveBuilds returns the go command that builds the fake worker into dir,
// for TestMain's build list, and notes where it and its links will be.
func driveBuilds(dir string) [][]string {
	fakeworker = filepath.Join(dir, "fakeworker")
	fakeBin = filepath.Join(dir, "bin")
	return [][]string{{"build", "-o", fakeworker, "./drive/testdata/fakeworker"}}
}

var (
	linksOnce sync.Once
	linksErr  error
	// fakeExe is fakeworker with every symlink resolved, as
	// /proc/PID/exe names it.
	fakeExe string
)

// fakeLinks makes fakeBin, with claude and codex in it as links to the
// fake worker, once, and returns it.
func fakeLinks(t testing.TB) string {
	t.Helper()
	linksOnce.Do(func() {
		if linksErr = os.MkdirAll(fakeBin, 0o755); linksErr != nil {
			return
		}
		for _, name := range []string{"claude", "codex"} {
			if linksErr = os.Symlink(fakeworker, filepath.Join(fakeBin, name)); linksErr != nil {
				return
			}
		}
		fakeExe, linksErr = filepath.EvalSymlinks(fakeworker)
	})
	require.NoError(t, linksErr)
	return fakeBin
}

// profiles are the worker profiles drive takes.
var profiles = []string{"exec", "claude", "codex"}

// workerArgs are the drive flags that run profile with the fake worker.
func workerArgs(profile string) []string {
	if profile == "exec" {
		return []string{"--worker", "exec", "--command", "'" + fakeworker + "' {prompt}"}
	}
	return []string{"--worker", profile}
}

// harness is the fake workers of one test: their script, their log, and
// the environment a drive runs with so that it finds them.
type harness struct {
	script, log string
	env         []string
}

// newHarness writes the script plan (FAKEWORKER_SCRIPT's JSON; nil for
// none) and returns the harness. Every fake worker of this harness still
// running when the test ends is killed then.
func newHarness(t testing.TB, plan map[string][]string) *harness {
	t.Helper()
	bin := fakeLinks(t)
	dir := t.TempDir()
	h := &harness{script: filepath.Join(dir, "script.json"), log: filepath.Join(dir, "workers.log")}
	if plan == nil {
		plan = map[string][]string{}
	}
	data, err := json.Marshal(plan)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(h.script, data, 0o644))
	h.env = []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"FAKEWORKER_SCRIPT=" + h.script,
		"FAKEWORKER_LOG=" + h.log,
	}
	t.Cleanup(func() {
		for _, pid := range h.procs() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return h
}

// workerEvent is a line of FAKEWORKER_LOG.
type workerEvent struct {
	what, job string
	at        int64
	pid       int
}

// events reads the workers' log.
func (h *harness) events(t *testing.T) []workerEvent {
	t.Helper()
	data, err := os.ReadFile(h.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var out []workerEvent
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		require.Len(t, f, 4, "a line of the workers' log: %q", line)
		at, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err)
		pid, err := strconv.Atoi(f[3])
		require.NoError(t, err)
		out = append(out, workerEvent{what: f[0], job: f[1], at: at, pid: pid})
	}
	return out
}

// starts returns the workers' start lines.
func (h *harness) starts(t *testing.T) []workerEvent {
	t.Helper()
	var out []workerEvent
	for _, e := range h.events(t) {
		if e.what == "start" {
			out = append(out, e)
		}
	}
	return out
}

// procs returns the pids of the live processes of this harness's fake
// workers, the children they started included: every process, not a
// zombie, that runs the fake worker with this harness's log in its
// environment. It needs /proc; without it, it finds none.
func (h *harness) procs() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !isFakeWorker(pid) {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), "FAKEWORKER_LOG="+h.log) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// survivors returns the processes of this harness's fake workers that
// still run, and those of pids (logged or printed by the workers) that do.
func (h *harness) survivors(pids ...int) []int {
	out := h.procs()
	for _, pid := range pids {
		if alive(pid) && !slices.Contains(out, pid) {
			out = append(out, pid)
		}
	}
	return out
}

// procState returns the state letter of /proc/PID/stat and the process
// group, or ok false when there is no such process or no /proc.
func procState(pid int) (state string, pgrp int, ok bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, false
	}
	f := bytes.Fields(data[bytes.LastIndexByte(data, ')')+1:])
	if len(f) < 3 {
		return "", 0, false
	}
	pgrp, _ = strconv.Atoi(string(f[2]))
	return string(f[0]), pgrp, true
}

// isFakeWorker says whether pid is a live process of the fake worker's
// binary. A zombie has ended, and has no executable.
func isFakeWorker(pid int) bool {
	state, _, ok := procState(pid)
	if !ok || state == "Z" {
		return false
	}
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	return err == nil && exe == fakeExe
}

// alive says whether pid is a fake worker that has not ended. Without
// /proc, any process of that pid counts.
func alive(pid int) bool {
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		return isFakeWorker(pid)
	}
	return syscall.Kill(pid, 0) == nil
}

// groupLive counts the processes of the group pgid that have not ended:
// zombies, which wait to be reaped (where no init reaps orphans, for
// ever), do not count. Without /proc, it says whether kill finds any.
func groupLive(pgid int) int {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return 0
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return 1
	}
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, pgrp, ok := procState(pid); ok && state != "Z" && pgrp == pgid {
			n++
		}
	}
	return n
}

// driveRun runs bin (the custodian binary or a variant) with `drive dir`,
// the flags of profile, and args, in the environment of h.
func driveRun(t *testing.T, bin string, h *harness, dir, profile string, args ...string) result {
	t.Helper()
	full := append(append([]string{"drive", dir}, workerArgs(profile)...), args...)
	return run(t, bin, h.env, full...)
}

// started is a drive running in the background.
type started struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
}

// startDrive starts `drive dir` with profile's flags and args in the
// environment of h, and kills it when the test ends if it still runs.
func startDrive(t *testing.T, h *harness, dir, profile string, args ...string) *started {
	t.Helper()
	return startDriveWith(t, binary, h, dir, profile, args...)
}

// startDriveWith is startDrive with the build bin.
func startDriveWith(t *testing.T, bin string, h *harness, dir, profile string, args ...string) *started {
	t.Helper()
	s := &started{done: make(chan struct{})}
	s.cmd = exec.Command(bin, append(append([]string{"drive", dir}, workerArgs(profile)...), args...)...)
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CUSTODIAN_CRASH_") {
			s.cmd.Env = append(s.cmd.Env, kv)
		}
	}
	s.cmd.Env = append(s.cmd.Env, h.env...)
	require.NoError(t, s.cmd.Start())
	go func() {
		_ = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// wait waits for the drive to end, at most a minute, and returns what it
// printed and its status.
func (s *started) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
		require.Fail(t, "drive did not end within a minute", "stderr %s", s.stderr.String())
	}
	return result{stdout: s.stdout.String(), stderr: s.stderr.String(), code: s.cmd.ProcessState.ExitCode()}
}

// waitFor polls cond until it holds, for at most 30 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "waited 30s for %s", what)
		time.Sleep(20 * time.Millisecond)
	}
}

// evidence reads the evidence of every launch of the run in dir, by job,
// in launch order. It requires that a job's launches are launch-1 to
// launch-N, each with launch.json, stdout and stderr, that launch.json
// names its job and number, and that it keeps what launch.json says.
func evidence(t *testing.T, dir string) map[string][]engine.Launch {
	t.Helper()
	out := map[string][]engine.Launch{}
	jobs, err := os.ReadDir(filepath.Join(dir, engine.StateDir, "jobs"))
	if errors.Is(err, os.ErrNotExist) {
		return out // no job was ever handed out
	}
	require.NoError(t, err)
	for _, job := range jobs {
		entries, err := os.ReadDir(filepath.Join(dir, engine.StateDir, "jobs", job.Name()))
		require.NoError(t, err)
		var numbers []int
		for _, e := range entries {
			if rest, ok := strings.CutPrefix(e.Name(), "launch-"); ok && e.IsDir() {
				n, err := strconv.Atoi(rest)
				require.NoError(t, err, "%s/%s", job.Name(), e.Name())
				numbers = append(numbers, n)
			}
		}
		sort.Ints(numbers)
		for i, n := range numbers {
			require.Equal(t, i+1, n, "the launches of %s are not numbered 1 to N: %v", job.Name(), numbers)
			ldir := filepath.Join(dir, engine.StateDir, "jobs", job.Name(), "launch-"+strconv.Itoa(n))
			data, err := os.ReadFile(filepath.Join(ldir, "launch.json"))
			require.NoError(t, err)
			var l engine.Launch
			require.NoError(t, json.Unmarshal(data, &l), "%s", data)
			stdout, err := os.ReadFile(filepath.Join(ldir, "stdout"))
			require.NoError(t, err)
			stderr, err := os.ReadFile(filepath.Join(ldir, "stderr"))
			require.NoError(t, err)
			assert.Equal(t, job.Name(), l.Job, "%s", ldir)
			assert.Equal(t, n, l.Launch, "%s", ldir)
			assert.Equal(t, l.Stdout.Kept, len(stdout), "%s: stdout", ldir)
			assert.Equal(t, l.Stderr.Kept, len(stderr), "%s: stderr", ldir)
			assert.GreaterOrEqual(t, l.Stdout.Bytes, int64(l.Stdout.Kept), "%s: stdout", ldir)
			assert.GreaterOrEqual(t, l.Stderr.Bytes, int64(l.Stderr.Kept), "%s: stderr", ldir)
			out[job.Name()] = append(out[job.Name()], l)
		}
	}
	return out
}

// launchCounts returns how many launches of each job have evidence.
func launchCounts(ev map[string][]engine.Launch) map[string]int {
	out := map[string]int{}
	for job, ls := range ev {
		out[job] = len(ls)
	}
	return out
}

// checkEvidence requires that the run in dir keeps the evidence of the
// launches want counts, by job, made by profile, and that every fake
// worker that started (by h's log) is the process of a launch of its job,
// and every launch that did not fail to start one that started.
func checkEvidence(t *testing.T, dir, profile string, h *harness, want map[string]int) map[string][]engine.Launch {
	t.Helper()
	ev := evidence(t, dir)
	require.Equal(t, want, launchCounts(ev), "launches with evidence, by job")
	ran := map[string]bool{}
	for job, ls := range ev {
		for _, l := range ls {
			assert.Equal(t, profile, l.Worker, "%s launch %d", job, l.Launch)
			assert.NotEmpty(t, l.Run, "%s launch %d", job, l.Launch)
			assert.NotEmpty(t, l.Outcome, "%s launch %d", job, l.Launch)
			if l.Outcome == "failed-to-start" {
				assert.Equal(t, -1, l.ExitStatus, "%s launch %d", job, l.Launch)
				assert.NotEmpty(t, l.Message, "%s launch %d: why it did not start", job, l.Launch)
				continue
			}
			require.NotEmpty(t, l.Command, "%s launch %d", job, l.Launch)
			assert.Positive(t, l.Process.Pid, "%s launch %d", job, l.Launch)
			ran[fmt.Sprint(job, " ", l.Process.Pid)] = true
			if l.Outcome != "finished" {
				continue
			}
			switch profile {
			case "exec":
				assert.Equal(t, fakeworker, l.Command[0], "%s launch %d", job, l.Launch)
				assert.Empty(t, l.Session, "%s launch %d", job, l.Launch)
			default:
				assert.Equal(t, profile, l.Command[0], "%s launch %d", job, l.Launch)
				assert.NotEmpty(t, l.Session, "%s launch %d: the %s session", job, l.Launch, profile)
				assert.NotEmpty(t, l.Message, "%s launch %d: the final message", job, l.Launch)
			}
			assert.Equal(t, 0, l.ExitStatus, "%s launch %d", job, l.Launch)
		}
	}
	started := map[string]bool{}
	for _, e := range h.starts(t) {
		started[fmt.Sprint(e.job, " ", e.pid)] = true
	}
	assert.Equal(t, started, ran, "the workers that started (job pid), against the launches that ran")
	return ev
}

// launchLine is a line of step's launch outcome: a job, its prompt file,
// and its launch parameters.
var launchLine = regexp.MustCompile("^- ([a-z0-9-]+): `([^`]+)`(?: launch=(.+))?$")

// workerEnv is this process's environment as drive gives it to a worker:
// without the variables that make a nested agent misbehave (the fake
// worker refuses CLAUDECODE), with env besides.
func workerEnv(env ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "CLAUDECODE" || strings.HasPrefix(kv, "CUSTODIAN_CRASH_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, env...)
}

// stepByHand takes a run of scenario (set up with flags) through the loop
// as docs/loop.md tells an agent orchestrator to: it steps, runs the fake
// worker with plan on each prompt file (or, for a job with launch
// parameters when mapsParams is false, reports the launch failed), and
// steps again, until a step prints anything but launch. It returns the run
// directory and what that last step printed, with its status.
func stepByHand(t *testing.T, scenario string, flags []string, plan map[string][]string, mapsParams bool) (string, result) {
	t.Helper()
	dir := trialRun(t, scenario, flags...)
	h := newHarness(t, plan)
	for range 12 {
		r := run(t, binary, nil, "step", dir)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "launch\n") {
			return dir, r
		}
		for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")[1:] {
			m := launchLine.FindStringSubmatch(line)
			require.NotNil(t, m, "a launch line: %q", line)
			if m[3] != "" && !mapsParams {
				ok(t, "report", dir, "launch-failed", "--job", m[1], "--text", "the harness cannot apply "+m[3])
				continue
			}
			w := exec.Command(fakeworker, m[2])
			w.Dir, w.Env = dir, workerEnv("FAKEWORKER_SCRIPT="+h.script, "FAKEWORKER_LOG="+h.log)
			out, err := w.CombinedOutput()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				require.NoError(t, err, "%s", out)
			}
		}
	}
	require.Fail(t, "the run by hand still launches after 12 steps")
	return dir, result{}
}

// standing says whether a step printed an outcome that the next step
// prints again: done, uncertain, or blocks that permit only stopping. A
// block that permits a repair does not stand: the next step tries the
// subject again, with a new cycle of attempts (docs/loop.md, "Stopping").
func standing(stdout string) bool {
	return !strings.Contains(stdout, "permitted: repair within this scope")
}

func TestDriveTrialScenarios(t *testing.T) {
	type end struct {
		code     int
		launches map[string]int
	}
	tests := []struct {
		scenario string
		flags    []string
		plan     map[string][]string
		end      end
		// execEnd, when set, is the end with the exec profile, which
		// cannot map the scenario's launch parameter (no placeholder of
		// --command uses it): claims fails to launch twice and blocks.
		execEnd *end
	}{
		{scenario: "clean", end: end{0, map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}}},
		{
			scenario: "retry", plan: map[string][]string{"reconcile": {"valid", "checked"}},
			end: end{0, map[string]int{"assumptions": 1, "claims": 1, "reconcile": 2}},
		},
		{
			// drive never repairs: the notes worker's problem report blocks,
			// and the block is where drive stops.
			scenario: "problem", plan: map[string][]string{"notes": {"problem"}},
			end: end{10, map[string]int{"assumptions": 1, "claims": 1, "notes": 1}},
		},
		{scenario: "stop", end: end{10, map[string]int{"assumptions": 2, "claims": 1}}},
		{scenario: "stop-only", end: end{10, map[string]int{"assumptions": 2, "claims": 1}}},
		{
			scenario: "parameters", flags: []string{"--launch", "model=small"},
			end: end{0, map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}},
			// exec's command maps no launch parameter: drive refuses the
			// round before it launches anything (TestDriveUnmappableLaunchParameter).
			execEnd: &end{2, map[string]int{}},
		},
		{scenario: "uncertain", end: end{11, map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}}},
		{scenario: "busy", flags: []string{"--hold", "2"}, end: end{3, map[string]int{}}},
	}
	for _, tt := range tests {
		// Every scenario with one profile, and every profile on the
		// scenario that tells them apart: the launch parameters each maps
		// or cannot.
		scenarioProfiles := []string{"claude"}
		if tt.scenario == "parameters" {
			scenarioProfiles = profiles
		}
		for _, profile := range scenarioProfiles {
			t.Run(tt.scenario+"/"+profile, func(t *testing.T) {
				t.Parallel()
				want := tt.end
				if profile == "exec" && tt.execEnd != nil {
					want = *tt.execEnd
				}
				dir := trialRun(t, tt.scenario, tt.flags...)
				h := newHarness(t, tt.plan)
				r := driveRun(t, binary, h, dir, profile)
				require.Equal(t, want.code, r.code, "drive: stdout %q, stderr %s", r.stdout, r.stderr)
				assert.Empty(t, h.survivors(), "fake workers still run after drive ended")
				if want.code == 2 {
					assert.Empty(t, evidence(t, dir))
					return
				}

				switch tt.scenario {
				case "busy":
					driveBusy(t, dir, h, profile, r)
					return
				case "uncertain":
					// The step that ran the effect ended inside it, with status 9
					// and nothing on stdout: drive prints what it printed, nothing,
					// and passes on its stderr.
					assert.Empty(t, r.stdout)
					assert.Contains(t, r.stderr, "the process ended while publishing\n")
					assert.Contains(t, r.stderr, "custodian: step ended with exit status 9, inside an effect")
				}
				checkEvidence(t, dir, profile, h, want.launches)

				// What a step printed at this end of a run taken through the
				// same course by hand.
				refDir, ref := stepByHand(t, tt.scenario, tt.flags, tt.plan, tt.execEnd == nil || profile != "exec")
				assert.Equal(t, strings.ReplaceAll(ref.stdout, refDir, dir), r.stdout,
					"drive's stdout against the last step of the course by hand (status %d)", ref.code)

				if want.code == 10 || want.code == 11 {
					assert.Contains(t, ok(t, "log", dir), ", stop", "drive reported no stop")
				}
				final := r.stdout
				if tt.scenario == "uncertain" {
					// A second drive meets the effect's block at its first step.
					r = driveRun(t, binary, h, dir, profile)
					require.Equal(t, 11, r.code, "second drive: stdout %q, stderr %s", r.stdout, r.stderr)
					require.True(t, strings.HasPrefix(r.stdout, "uncertain\n"), "second drive: %q", r.stdout)
					final = r.stdout
				}
				after := run(t, binary, nil, "step", dir)
				require.Equal(t, 0, after.code, "step after drive: %s", after.stderr)
				if standing(final) {
					assert.Equal(t, final, after.stdout, "a step after drive")
				} else {
					assert.True(t, strings.HasPrefix(after.stdout, "launch\n"),
						"a block that permits a repair stands for one step; the next tries again: %q", after.stdout)
				}
			})
		}
	}
}

// driveBusy checks a drive of the busy scenario, r, refused at its first
// step, then drives the run to done once the hold is over.
func driveBusy(t *testing.T, dir string, h *harness, profile string, r result) {
	t.Helper()
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "busy")
	assert.Contains(t, r.stderr, "\ncustodian: hint: another custodian process is working on this run")
	step := run(t, binary, nil, "step", dir)
	assert.Equal(t, 3, step.code, "step while the hold lasts: %s", step.stderr)
	assert.Equal(t, r.stdout, step.stdout, "step while the hold lasts prints what drive printed")
	assert.Empty(t, evidence(t, dir), "a refused drive launched")

	// Wait for the held step the way it holds the run: by its lock.
	lock := flock.New(filepath.Join(dir, engine.StateDir, "lock"))
	require.NoError(t, lock.Lock())
	require.NoError(t, lock.Unlock())
	r = driveRun(t, binary, h, dir, profile)
	require.Equal(t, 0, r.code, "drive after the hold: stdout %q, stderr %s", r.stdout, r.stderr)
	assert.Equal(t, "done\n", r.stdout)
	checkEvidence(t, dir, profile, h, map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1})
	assert.Equal(t, "done\n", ok(t, "step", dir))
}

func TestDriveMaxParallel(t *testing.T) {
	t.Parallel()
	const jobs, parallel = 48, 8
	bin := variantBinaries["fanout"]
	require.NotEmpty(t, bin, "no build of variant fanout")
	dir := filepath.Join(t.TempDir(), "run")
	r := run(t, bin, nil, "start", "fanout", "--run", dir, "--param", "jobs="+strconv.Itoa(jobs))
	require.Equal(t, 0, r.code, r.stderr)

	// Step hands jobs out in name order: the first eight launched take a
	// second each, so that eight workers run at once for a while.
	names := make([]string, jobs)
	for i := range names {
		names[i] = "j" + strconv.Itoa(i+1)
	}
	sort.Strings(names)
	plan := map[string][]string{}
	for _, name := range names[:parallel] {
		plan[name] = []string{"slow:1"}
	}
	h := newHarness(t, plan)
	r = driveRun(t, bin, h, dir, "exec", "--max-parallel", strconv.Itoa(parallel))
	require.Equal(t, 0, r.code, "drive: stdout %q, stderr %s", r.stdout, r.stderr)
	assert.Equal(t, "done\n", r.stdout)

	events := h.events(t)
	sort.SliceStable(events, func(i, j int) bool {
		if events[i].at != events[j].at {
			return events[i].at < events[j].at
		}
		return events[i].what == "end" && events[j].what == "start" // an end at the same instant first
	})
	running, most := 0, 0
	began, ended := map[string]int{}, map[string]int{}
	for _, e := range events {
		switch e.what {
		case "start":
			running++
			began[e.job]++
		case "end":
			running--
			ended[e.job]++
		}
		most = max(most, running)
	}
	assert.LessOrEqual(t, most, parallel, "workers running at once, by their log")
	assert.Greater(t, most, 1, "no two workers ever ran at once: the measure says nothing")
	assert.Len(t, began, jobs, "jobs whose worker started")
	assert.Len(t, ended, jobs, "jobs whose worker ended")
	for _, name := range names {
		assert.Equal(t, 1, began[name], "starts of %s", name)
		assert.Equal(t, 1, ended[name], "ends of %s", name)
	}
	want := map[string]int{}
	for _, name := range names {
		want[name] = 1
	}
	checkEvidence(t, dir, "exec", h, want)
}

// spawned returns the pid that a spawn-and-hang worker printed on stderr
// for the child it started.
func spawned(t *testing.T, stderr string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^spawned (\d+)$`).FindStringSubmatch(stderr)
	require.NotNil(t, m, "the worker's stderr names no child it spawned: %q", stderr)
	pid, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return pid
}

func TestDriveTimeoutsEndTheWholeGroup(t *testing.T) {
	tests := []struct {
		name    string
		flags   []string
		outcome string
	}{
		{"timeout", []string{"--timeout", "1s", "--grace", "500ms"}, "timed-out"},
		{"idle timeout", []string{"--idle-timeout", "1s", "--grace", "500ms"}, "idle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := trialRun(t, "clean")
			h := newHarness(t, map[string][]string{"claims": {"spawn-and-hang", "valid"}})
			r := driveRun(t, binary, h, dir, "exec", tt.flags...)
			require.Equal(t, 0, r.code, "drive: stdout %q, stderr %s", r.stdout, r.stderr)
			assert.Equal(t, "done\n", r.stdout)

			ev := checkEvidence(t, dir, "exec", h, map[string]int{"assumptions": 1, "claims": 2, "reconcile": 1})
			first := ev["claims"][0]
			assert.Equal(t, tt.outcome, first.Outcome, "claims launch 1")
			assert.NotEmpty(t, first.Signal, "claims launch 1: the signal that ended it")
			assert.Equal(t, 1, first.Attempt)
			assert.Equal(t, "finished", ev["claims"][1].Outcome, "claims launch 2")
			assert.Equal(t, 2, ev["claims"][1].Attempt, "a worker ended by a watchdog loses its attempt")

			stderr, err := os.ReadFile(filepath.Join(dir, engine.StateDir, "jobs", "claims", "launch-1", "stderr"))
			require.NoError(t, err)
			child := spawned(t, string(stderr))
			var worker int
			for _, e := range h.starts(t) {
				if e.job == "claims" {
					worker = e.pid
					break
				}
			}
			require.Equal(t, first.Process.Pid, worker, "the first claims worker of the log is launch 1's")
			assert.False(t, alive(worker), "the worker %d survived drive", worker)
			assert.False(t, alive(child), "the child %d that ignores SIGTERM survived drive", child)
			assert.Zero(t, groupLive(worker), "processes of the worker's group %d survived drive", worker)
			assert.Empty(t, h.survivors(worker, child), "fake workers still run after drive ended")
		})
	}
}

// jsonLines requires that every line of stdout is a JSON object, and
// returns them: events, then the last step's outcome.
func jsonLines(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	require.True(t, strings.HasSuffix(stdout, "\n"), "stdout does not end a line: %q", stdout)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &obj), "a line of stdout is not a JSON object: %q", line)
		require.NotNil(t, obj, "a line of stdout is not a JSON object: %q", line)
		out = append(out, obj)
	}
	return out
}

// jobStatus is what status --json says of a job.
type jobStatus struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Attempts int    `json:"attempts"`
}

// statusJobs returns what status --json says of every job of the run.
func statusJobs(t *testing.T, dir string) map[string]jobStatus {
	t.Helper()
	return statusJobsWith(t, binary, dir)
}

// statusJobsWith is statusJobs with the build bin.
func statusJobsWith(t *testing.T, bin, dir string) map[string]jobStatus {
	t.Helper()
	var st struct {
		Jobs []jobStatus `json:"jobs"`
	}
	r := run(t, bin, nil, "status", dir, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
	out := map[string]jobStatus{}
	for _, j := range st.Jobs {
		out[j.Name] = j
	}
	return out
}

func TestDriveUsageLimit(t *testing.T) {
	t.Parallel()
	for _, profile := range profiles {
		t.Run(profile, func(t *testing.T) {
			t.Parallel()
			dir := trialRun(t, "clean")
			h := newHarness(t, map[string][]string{"claims": {"usage-limit:2", "valid"}})
			// The codex text names a minute, which drive waits out to its
			// end: --max-wait keeps the pause short.
			const maxWait = 3 * time.Second
			r := driveRun(t, binary, h, dir, profile, "--max-wait", maxWait.String(), "--json")
			require.Equal(t, 0, r.code, "drive: stdout %q, stderr %s", r.stdout, r.stderr)
			lines := jsonLines(t, r.stdout)
			assert.Equal(t, map[string]any{"outcome": "done"}, lines[len(lines)-1])
			var kinds []string
			for _, l := range lines[:len(lines)-1] {
				kinds = append(kinds, fmt.Sprint(l["event"]))
				if l["event"] == "paused" {
					assert.Equal(t, "claims", l["job"], "the job that paused the round")
				}
			}
			paused, resumed := slices.Index(kinds, "paused"), slices.Index(kinds, "resumed")
			assert.GreaterOrEqual(t, paused, 0, "no paused event: %v", kinds)
			assert.Greater(t, resumed, paused, "no resumed event after the pause: %v", kinds)

			ev := checkEvidence(t, dir, profile, h, map[string]int{"assumptions": 1, "claims": 2, "reconcile": 1})
			limited, again := ev["claims"][0], ev["claims"][1]
			assert.Equal(t, "usage-limited", limited.Outcome, "claims launch 1")
			require.NotNil(t, limited.UsageLimit, "claims launch 1 records no usage limit")
			assert.NotEmpty(t, limited.UsageLimit.Message)
			assert.Equal(t, "finished", again.Outcome, "claims launch 2")
			assert.Equal(t, 1, limited.Attempt, "claims launch 1")
			assert.Equal(t, 1, again.Attempt, "the relaunch after a usage limit is the same attempt")
			assert.Equal(t, limited.Command, again.Command, "the relaunch is the same command, with the same prompt file")
			assert.True(t, slices.ContainsFunc(again.Command, func(a string) bool { return strings.Contains(a, "prompt-1.md") }),
				"the relaunch is given prompt-1.md: %q", again.Command)
			assert.NoFileExists(t, filepath.Join(dir, engine.StateDir, "jobs", "claims", "prompt-2.md"))
			ended, err := time.Parse(time.RFC3339Nano, limited.EndedAt)
			require.NoError(t, err)
			began, err := time.Parse(time.RFC3339Nano, again.StartedAt)
			require.NoError(t, err)
			assert.False(t, began.Before(ended), "the relaunch began (%s) before the limited launch ended (%s)", began, ended)
			if limited.UsageLimit.Known {
				// drive waits for the reset, or --max-wait, whichever comes first.
				resets, err := time.Parse(time.RFC3339, limited.UsageLimit.Resets)
				require.NoError(t, err)
				lifts := ended.Add(maxWait)
				if resets.Before(lifts) {
					lifts = resets
				}
				assert.False(t, began.Before(lifts), "the relaunch began (%s) before the limit lifted (%s)", began, lifts)
			}

			claims := statusJobs(t, dir)["claims"]
			assert.Equal(t, "accepted", claims.State)
			assert.Equal(t, 1, claims.Attempts, "a usage-limited launch consumed an attempt")
			assert.Contains(t, ok(t, "log", dir), "usage-limited", "the usage limit was not reported")
		})
	}
}

// waitLeased waits until the round in flight of the run in dir has n
// workers leased, and the workers' log n starts.
func waitLeased(t *testing.T, dir string, h *harness, n int) {
	t.Helper()
	path := filepath.Join(dir, engine.StateDir, "round.json")
	waitFor(t, fmt.Sprintf("%d workers leased and started", n), func() bool {
		data, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		var rd engine.Round
		if json.Unmarshal(data, &rd) != nil {
			return false
		}
		return len(rd.Workers) == n && len(h.starts(t)) == n
	})
}

func TestDriveInterrupt(t *testing.T) {
	t.Parallel()
	dir := trialRun(t, "clean")
	h := newHarness(t, map[string][]string{"claims": {"hang", "valid"}, "assumptions": {"hang", "valid"}})
	d := startDrive(t, h, dir, "exec", "--grace", "500ms")
	waitLeased(t, dir, h, 2)
	var pids []int
	for _, e := range h.starts(t) {
		pids = append(pids, e.pid)
	}
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
	r := d.wait(t)
	require.Equal(t, 12, r.code, "drive: stdout %q, stderr %s", r.stdout, r.stderr)
	assert.Equal(t, firstLaunch(dir), r.stdout, "drive prints the last step's output")
	assert.Empty(t, h.survivors(pids...), "workers survived the interrupted drive")
	ev := evidence(t, dir)
	for _, job := range []string{"assumptions", "claims"} {
		require.Len(t, ev[job], 1, "launches of %s", job)
		assert.Equal(t, engine.LaunchInterrupted, ev[job][0].Outcome, "%s launch 1", job)
	}

	r = driveRun(t, binary, h, dir, "exec")
	require.Equal(t, 0, r.code, "the drive after the interrupt: stdout %q, stderr %s", r.stdout, r.stderr)
	assert.Equal(t, "done\n", r.stdout)
	ev = evidence(t, dir)
	assert.Equal(t, map[string]int{"assumptions": 2, "claims": 2, "reconcile": 1}, launchCounts(ev))
	for _, job := range []string{"assumptions", "claims"} {
		if assert.Len(t, ev[job], 2) {
			assert.Equal(t, "finished", ev[job][1].Outcome, "%s launch 2", job)
			assert.Equal(t, 1, ev[job][1].Attempt, "%s was charged for the worker drive ended", job)
		}
		assert.Equal(t, 1, statusJobs(t, dir)[job].Attempts, job)
	}
	assert.Contains(t, ok(t, "log", dir), "not charged: claims, attempt 1, has no output and no worker attempted it (ended by an interrupt)")
	assert.Empty(t, h.survivors(pids...))
}

func TestDriveRefusesLiveWorkersAndReclaims(t *testing.T) {
	t.Parallel()
	dir := trialRun(t, "clean")
	h := newHarness(t, map[string][]string{"claims": {"hang", "valid"}, "assumptions": {"hang", "valid"}})
	d := startDrive(t, h, dir, "exec", "--grace", "500ms")
	waitLeased(t, dir, h, 2)
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGKILL))
	<-d.done
	starts := h.starts(t)
	var pids []int
	for _, e := range starts {
		pids = append(pids, e.pid)
		require.True(t, alive(e.pid), "worker %s (pid %d) ended with its drive: nothing to refuse", e.job, e.pid)
	}

	r := driveRun(t, binary, h, dir, "exec")
	assert.Equal(t, 3, r.code, "a second drive: stdout %q, stderr %s", r.stdout, r.stderr)
	assert.Empty(t, r.stdout)
	for _, e := range starts {
		assert.Contains(t, r.stderr, fmt.Sprintf("%s (pid %d)", e.job, e.pid), "the refusal names the worker")
	}
	step := run(t, binary, nil, "step", dir)
	assert.Equal(t, 3, step.code, "step: stdout %q, stderr %s", step.stdout, step.stderr)
	assert.Empty(t, step.stdout)
	for _, e := range starts {
		assert.Contains(t, step.stderr, fmt.Sprintf("%s (pid %d)", e.job, e.pid), "step's refusal names the worker")
	}
	assert.Empty(t, evidence(t, dir), "a refused command recorded a launch")
	for _, pid := range pids {
		require.True(t, alive(pid), "worker %d ended while refused commands ran", pid)
	}

	r = driveRun(t, binary, h, dir, "exec", "--reclaim", "--grace", "500ms")
	require.Equal(t, 0, r.code, "drive --reclaim: stdout %q, stderr %s", r.stdout, r.stderr)
	assert.Equal(t, "done\n", r.stdout)
	assert.Empty(t, h.survivors(pids...), "workers survived drive --reclaim")
	ev := evidence(t, dir)
	assert.Equal(t, map[string]int{"assumptions": 2, "claims": 2, "reconcile": 1}, launchCounts(ev))
	for _, e := range starts {
		if assert.NotEmpty(t, ev[e.job]) {
			l := ev[e.job][0]
			assert.Equal(t, engine.LaunchReclaimed, l.Outcome, "%s launch 1", e.job)
			assert.Equal(t, e.pid, l.Process.Pid, "%s launch 1", e.job)
			assert.Equal(t, 1, ev[e.job][1].Attempt, "%s was charged for the worker the reclaim ended", e.job)
		}
	}
}

// A reclaim records a worker that had already ended on its own as found
// ended, with the time it found it, and keeps what its evidence holds; the
// worker's attempt is its own.
func TestDriveReclaimOfAWorkerThatEnded(t *testing.T) {
	t.Parallel()
	dir := trialRun(t, "clean")
	h := newHarness(t, map[string][]string{"claims": {"hang", "valid"}, "assumptions": {"hang", "valid"}})
	d := startDrive(t, h, dir, "exec", "--grace", "500ms")
	waitLeased(t, dir, h, 2)
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGKILL))
	<-d.done
	starts := h.starts(t)
	var pids []int
	for _, e := range starts {
		pids = append(pids, e.pid)
		require.NoError(t, syscall.Kill(-e.pid, syscall.SIGKILL))
	}
	waitFor(t, "the workers to end", func() bool { return len(h.survivors(pids...)) == 0 })
	// What the drive that died left of one worker's evidence is kept.
	kept := filepath.Join(dir, engine.StateDir, "jobs", "claims", "launch-1", "stdout")
	require.NoError(t, os.MkdirAll(filepath.Dir(kept), 0o755))
	require.NoError(t, os.WriteFile(kept, []byte("what the worker said\n"), 0o644))

	r := driveRun(t, binary, h, dir, "exec", "--reclaim")
	require.Equal(t, 0, r.code, "drive --reclaim: stdout %q, stderr %s", r.stdout, r.stderr)
	ev := evidence(t, dir)
	for _, e := range starts {
		l := ev[e.job][0]
		assert.Equal(t, engine.LaunchFoundEnded, l.Outcome, "%s launch 1", e.job)
		assert.Contains(t, l.Message, "found ended at ", "%s launch 1", e.job)
		assert.NotContains(t, l.Message, "ended by drive --reclaim")
		assert.Equal(t, 2, ev[e.job][1].Attempt, "%s: the worker that ended on its own is its attempt", e.job)
	}
	data, err := os.ReadFile(kept)
	require.NoError(t, err)
	assert.Equal(t, "what the worker said\n", string(data), "the reclaim lost the evidence the drive left")
}

func TestDriveJSON(t *testing.T) {
	tests := []struct {
		scenario string
		code     int
		kind     engine.Kind
	}{
		{"clean", 0, engine.KindDone},
		{"stop-only", 10, engine.KindBlocked},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			dir := trialRun(t, tt.scenario)
			h := newHarness(t, nil)
			r := driveRun(t, binary, h, dir, "claude", "--json")
			require.Equal(t, tt.code, r.code, "drive: stdout %q, stderr %s", r.stdout, r.stderr)
			lines := jsonLines(t, r.stdout)
			events := map[string]int{}
			for _, l := range lines[:len(lines)-1] {
				assert.Contains(t, l, "event", "a line before the last is not an event: %v", l)
				assert.Contains(t, l, "time", "an event without its time: %v", l)
				events[fmt.Sprint(l["event"])]++
			}
			for _, kind := range []string{"round", "launched", "output", "ended", "step"} {
				assert.Positive(t, events[kind], "no %s event: %v", kind, events)
			}
			all := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			last := all[len(all)-1]
			var out engine.Outcome
			require.NoError(t, out.UnmarshalJSON([]byte(last)), "the last line is not an outcome: %q", last)
			assert.Equal(t, tt.kind, out.Kind)
			assert.Equal(t, last+"\n", ok(t, "step", dir, "--json"), "the last line against step --json after drive")
		})
	}
}

func TestDriveUnmappableLaunchParameter(t *testing.T) {
	tests := []struct {
		name    string
		variant string // the build of testdata/variant that drives a notes run; "" for a trial run
		launch  string // the trial run's launch parameter, KEY=VALUE
		profile string
		job     string // the job that cannot be launched
		param   string
		want    map[string]int
	}{
		{"exec with a definition's parameter", "launch", "", "exec", "risks", "model", map[string]int{"summary": 1, "risks": 1}},
		{"exec", "", "model=small", "exec", "claims", "model", map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}},
		{"claude", "", "sandbox=read-only", "claude", "claims", "sandbox", map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}},
		{"codex", "", "tools=Bash", "codex", "claims", "tools", map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bin := binary
			var dir string
			if tt.variant != "" {
				bin = variantBinaries[tt.variant]
				dir = redefStart(t, tt.variant)
			} else {
				dir = trialRun(t, "parameters", "--launch", tt.launch)
			}
			h := newHarness(t, nil)
			// A launch set-up that cannot work fails before anything is
			// spent: exit 2, naming the job and its parameter; nothing
			// launched, nothing reported, the round left handed out.
			r := driveRun(t, bin, h, dir, tt.profile)
			require.Equal(t, 2, r.code, "drive: stdout %q, stderr %s", r.stdout, r.stderr)
			assert.Contains(t, r.stderr, tt.job+": launch parameter \""+tt.param+"\"")
			assert.Contains(t, r.stderr, "nothing was launched or reported")
			assert.Empty(t, evidence(t, dir)[tt.job], "a launch of %s was made", tt.job)
			for _, e := range h.starts(t) {
				assert.NotEqual(t, tt.job, e.job, "a worker of %s started without its launch parameter", tt.job)
			}
			log := run(t, bin, nil, "log", dir).stdout
			assert.NotContains(t, log, "report ", "drive reported")

			// The set-up corrected: every job launched once, at attempt 1.
			command := "'" + fakeworker + "' {prompt} --" + tt.param + "={param:" + tt.param + "?}"
			r = run(t, bin, h.env, "drive", dir, "--worker", "exec", "--command", command)
			require.Equal(t, 0, r.code, "the corrected drive: stdout %q, stderr %s", r.stdout, r.stderr)
			ev := evidence(t, dir)
			assert.Equal(t, tt.want, launchCounts(ev))
			for job, ls := range ev {
				for _, l := range ls {
					assert.Equal(t, 1, l.Attempt, "%s launch %d", job, l.Launch)
				}
			}
		})
	}
}
