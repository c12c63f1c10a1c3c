// Package servertest drives runs through a real Temporal server, started
// in the test process (temporaltest), with custodian-temporal's drive and
// worker as processes of their own and drive's fake worker as the CLI
// they launch. It is a package of its own so that only these tests build
// the server.
package servertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/server/temporaltest"

	"github.com/custodian-run/custodian/workflow/engine"
)

var (
	// bin is custodian-temporal with the fanout definition
	// (testdata/fanout); fakeworker is drive's fake worker, and fakeBin the
	// directory where claude and codex are links to it.
	bin, fakeworker, fakeBin string
	// address and namespace are the test server's.
	address, namespace string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "servertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "custodian-temporal")
	fakeworker = filepath.Join(dir, "fakeworker")
	fakeBin = filepath.Join(dir, "bin")
	for _, args := range [][]string{
		{"build", "-o", bin, "./testdata/fanout"},
		{"build", "-C", "../../..", "-o", fakeworker, "./cmd/custodian/drive/testdata/fakeworker"},
	} {
		build := exec.Command("go", args...)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "go %s: %v\n", strings.Join(args, " "), err)
			return 1
		}
	}
	if err := os.Mkdir(fakeBin, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, name := range []string{"claude", "codex"} {
		if err := os.Symlink(fakeworker, filepath.Join(fakeBin, name)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	server := temporaltest.NewServer()
	defer server.Stop()
	address, namespace = server.GetFrontendHostPort(), server.GetDefaultNamespace()
	return m.Run()
}

// harness is the fake workers of one test, and the task queue its worker
// processes serve.
type harness struct {
	script, log, queue string
	env                []string
}

var queueName = regexp.MustCompile(`[^A-Za-z0-9]+`)

// newHarness writes the fake workers' script (FAKEWORKER_SCRIPT's JSON)
// and returns the harness, with a task queue of the test's own.
func newHarness(t *testing.T, plan map[string][]string) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{script: filepath.Join(dir, "script.json"), log: filepath.Join(dir, "workers.log"),
		queue: "workers-" + queueName.ReplaceAllString(t.Name(), "-")}
	if plan == nil {
		plan = map[string][]string{}
	}
	data, err := json.Marshal(plan)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(h.script, data, 0o644))
	h.env = []string{
		"PATH=" + fakeBin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"FAKEWORKER_SCRIPT=" + h.script,
		"FAKEWORKER_LOG=" + h.log,
	}
	return h
}

// process is a custodian-temporal process in the background.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	done           chan struct{}
	code           int
}

// syncBuffer is a buffer that a process writes while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start starts bin with args in h's environment; the test's end kills it
// if it still runs.
func (h *harness) start(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.Env = append(os.Environ(), h.env...)
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() || testing.Verbose() {
			t.Logf("%s:\nstdout: %s\nstderr: %s", strings.Join(p.cmd.Args[:2], " "), p.stdout.String(), p.stderr.String())
		}
	})
	return p
}

// wait waits for p to end, at most limit, and returns its exit status.
func (p *process) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(limit):
		t.Fatalf("%s did not end within %s:\nstdout: %s\nstderr: %s", strings.Join(p.cmd.Args, " "), limit, p.stdout.String(), p.stderr.String())
		return 0
	}
}

// connect are the flags that reach the test server.
func connect() []string { return []string{"--address", address, "--namespace", namespace} }

// worker starts a worker process on h's task queue with the claude profile.
func (h *harness) worker(t *testing.T, args ...string) *process {
	t.Helper()
	return h.start(t, append(append(append([]string{"worker"}, connect()...), "--task-queue", h.queue, "--worker", "claude"), args...)...)
}

// drive starts custodian-temporal drive on the run dir, with h's task
// queue and the claude profile.
func (h *harness) drive(t *testing.T, dir string, args ...string) *process {
	t.Helper()
	full := append(append([]string{"drive", dir}, connect()...), "--task-queue", h.queue, "--worker", "claude",
		"--grace", "1s", "--timeout", "2m", "--idle-timeout", "5s")
	return h.start(t, append(full, args...)...)
}

// result is a command that ended.
type result struct {
	stdout, stderr string
	code           int
}

// run runs bin with args and waits for it.
func run(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// trialRun sets up a trial run of scenario and returns its directory.
func trialRun(t *testing.T, scenario string, flags ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	r := run(t, append([]string{"trial", "setup", scenario, "--run", dir}, flags...)...)
	require.Equal(t, 0, r.code, "trial setup: %s", r.stderr)
	return dir
}

// fanoutRun starts a fanout run of jobs jobs and returns its directory.
func fanoutRun(t *testing.T, jobs int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	r := run(t, "start", "fanout", "--run", dir, "--param", "jobs="+strconv.Itoa(jobs))
	require.Equal(t, 0, r.code, "start: %s", r.stderr)
	return dir
}

// workerEvent is a line of FAKEWORKER_LOG: a fake worker's start or end.
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

// starts counts the fake workers' starts by job.
func (h *harness) starts(t *testing.T) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, e := range h.events(t) {
		if e.what == "start" {
			n[e.job]++
		}
	}
	return n
}

// launches reads the evidence of every launch of the run dir, by job, in
// launch order.
func launches(t *testing.T, dir string) map[string][]engine.Launch {
	t.Helper()
	out := map[string][]engine.Launch{}
	jobs, err := os.ReadDir(filepath.Join(dir, engine.StateDir, "jobs"))
	require.NoError(t, err)
	for _, job := range jobs {
		for n := 1; ; n++ {
			data, err := os.ReadFile(filepath.Join(dir, engine.StateDir, "jobs", job.Name(), "launch-"+strconv.Itoa(n), "launch.json"))
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			require.NoError(t, err)
			var l engine.Launch
			require.NoError(t, json.Unmarshal(data, &l))
			out[job.Name()] = append(out[job.Name()], l)
		}
	}
	return out
}

// outcomes gives each job's launch outcomes, in order.
func outcomes(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for job, ls := range launches(t, dir) {
		for _, l := range ls {
			out[job] = append(out[job], l.Outcome)
		}
	}
	return out
}

// groupGone says whether no process of the group pgid runs.
func groupGone(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return true
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := bytes.Fields(data[bytes.LastIndexByte(data, ')')+1:])
		if len(f) > 2 && string(f[0]) != "Z" && string(f[2]) == strconv.Itoa(pgid) {
			return false
		}
	}
	return true
}

// untilStarted waits until the fake workers have started n times.
func (h *harness) untilStarted(t *testing.T, n int, limit time.Duration) []workerEvent {
	t.Helper()
	var starts []workerEvent
	require.Eventually(t, func() bool {
		starts = starts[:0]
		for _, e := range h.events(t) {
			if e.what == "start" {
				starts = append(starts, e)
			}
		}
		return len(starts) >= n
	}, limit, 20*time.Millisecond, "%d workers did not start", n)
	return starts
}
