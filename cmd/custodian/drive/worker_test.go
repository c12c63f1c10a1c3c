//go:build linux

package drive_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/internal/proc"
)

// profiles are the three profiles, each running the fake worker.
var profiles = []struct{ worker, command string }{
	{"claude", ""},
	{"codex", ""},
	{"exec", "FAKE {prompt}"},
}

// profileCommand is fakeCommand for one of profiles, with the exec
// profile's FAKE standing for the fake worker.
func profileCommand(t *testing.T, worker, command, job, launch string, env ...string) (*drive.Command, string) {
	t.Helper()
	dir := t.TempDir()
	h := newHandout(t, dir, job, launch)
	return fakeCommand(t, worker, strings.ReplaceAll(command, "FAKE", fakeworker), h, dir, env...), h.Output
}

func TestWorkerOfEachProfileFinishes(t *testing.T) {
	for _, p := range profiles {
		t.Run(p.worker, func(t *testing.T) {
			// A worker that inherited it would fail loudly.
			t.Setenv("CLAUDECODE", "1")
			c, output := profileCommand(t, p.worker, p.command, "claims", "")
			var mu sync.Mutex
			var lines []string
			r := runWorker(t, c, drive.Options{Timeout: 10 * time.Second, OnLine: func(text string) {
				mu.Lock()
				defer mu.Unlock()
				lines = append(lines, text)
			}})
			require.Equal(t, drive.Finished, r.Outcome, "stderr: %s", r.Stderr.Data)
			assert.Equal(t, 0, r.ExitCode)
			assert.Empty(t, r.Signal)
			assert.Equal(t, "exit 0", r.Status())
			assert.Nil(t, r.Limit)
			assert.False(t, r.Ended.Before(r.Started))
			data, err := os.ReadFile(output)
			require.NoError(t, err)
			assert.Equal(t, "# claims\n\n- a point\n- another point\n", string(data))

			wrote := "Wrote `" + output + "`."
			require.NotEmpty(t, lines)
			assert.Equal(t, wrote, lines[len(lines)-1])
			if p.worker == "exec" {
				assert.Empty(t, r.SessionID, "a plain worker names no session")
				assert.Empty(t, r.Message)
				return
			}
			assert.NotEmpty(t, r.SessionID)
			assert.Equal(t, wrote, r.Message)
			assert.Contains(t, string(r.Stdout.Data), r.SessionID)
		})
	}
}

func TestWorkerLaunchParametersReachTheFake(t *testing.T) {
	tests := []struct{ worker, command, launch string }{
		{"claude", "", `{"model":"opus","effort":"max","tools":["Read","Edit"]}`},
		{"codex", "", `{"model":"gpt-5-codex","sandbox":"workspace-write","effort":"high"}`},
		{"exec", `sh -c 'echo "model=$1"' sh {param:model}`, `{"model":"small"}`},
	}
	for _, tt := range tests {
		t.Run(tt.worker, func(t *testing.T) {
			c, _ := profileCommand(t, tt.worker, tt.command, "claims", tt.launch)
			r := runWorker(t, c, drive.Options{})
			require.Equal(t, 0, r.ExitCode, "the fake parses the flags as the real CLI does; stderr: %s", r.Stderr.Data)
			switch tt.worker {
			case "exec":
				assert.Equal(t, "model=small\n", string(r.Stdout.Data))
			case "claude":
				assert.Contains(t, string(r.Stdout.Data), `"model":"opus"`)
				assert.Contains(t, string(r.Stdout.Data), `"allowedTools":["Read,Edit"]`)
				assert.Contains(t, string(r.Stdout.Data), `"permissionMode":"acceptEdits"`)
			}
		})
	}
}

func TestFakeWorkerFailsLoudlyWhenStartedCarelessly(t *testing.T) {
	dir := t.TempDir()
	h := newHandout(t, dir, "claims", "")
	run := func(stdin *os.File, env ...string) (int, string) {
		cmd := exec.Command(fakeworker, h.Prompt)
		cmd.Stdin = stdin
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		return exit.ExitCode(), stderr.String()
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	code, stderr := run(r)
	assert.Equal(t, 97, code)
	assert.Contains(t, stderr, "stdin is not /dev/null")

	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	code, stderr = run(null, "CLAUDECODE=1")
	assert.Equal(t, 97, code)
	assert.Contains(t, stderr, "CLAUDECODE=1 is set")
	assert.NoFileExists(t, h.Output)
}

func TestWorkerExitStatusIsEvidenceOnly(t *testing.T) {
	for _, p := range profiles {
		t.Run(p.worker, func(t *testing.T) {
			c, output := profileCommand(t, p.worker, p.command, "claims", "", writeScript(t, map[string][]string{"claims": {"exit:3"}}))
			r := runWorker(t, c, drive.Options{})
			assert.Equal(t, drive.Finished, r.Outcome)
			assert.Equal(t, 3, r.ExitCode)
			assert.Equal(t, "exit 3", r.Status())
			assert.NoFileExists(t, output)
		})
	}
}

func TestWorkerScriptGoesLaunchByLaunch(t *testing.T) {
	dir := t.TempDir()
	h := newHandout(t, dir, "claims", "")
	script := writeScript(t, map[string][]string{"claims": {"invalid", "problem", "valid"}})
	var got []string
	for range 4 {
		require.NoError(t, os.RemoveAll(h.Output))
		r := runWorker(t, fakeCommand(t, "codex", "", h, dir, script), drive.Options{})
		require.Equal(t, 0, r.ExitCode, "stderr: %s", r.Stderr.Data)
		out, _ := os.ReadFile(h.Output)
		problem, _ := os.ReadFile(h.Problem)
		got = append(got, string(out)+"|"+string(problem))
		require.NoError(t, os.RemoveAll(h.Problem))
	}
	valid := "# claims\n\n- a point\n- another point\n|"
	assert.Equal(t, []string{"a line without a heading\n|", "|# Problem\n\nThe input file cannot be read.\n", valid, valid}, got)
}

func TestWorkersRunAtOnceAndLogTheirCourse(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "log")
	var workers []*drive.Worker
	for _, job := range []string{"a", "b", "c", "d"} {
		c := fakeCommand(t, "claude", "", newHandout(t, dir, job, ""), dir, "FAKEWORKER_LOG="+log)
		w, err := drive.Start(c, drive.Options{})
		require.NoError(t, err)
		workers = append(workers, w)
	}
	pids := map[string]bool{}
	for _, w := range workers {
		require.Equal(t, drive.Finished, w.Wait().Outcome)
		pids[strconv.Itoa(w.Pid())] = true
	}
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 8)
	for _, line := range lines {
		f := strings.Fields(line)
		require.Len(t, f, 4, line)
		assert.Contains(t, []string{"start", "end"}, f[0])
		assert.Contains(t, []string{"a", "b", "c", "d"}, f[1])
		assert.True(t, pids[f[3]], "the line names the worker's pid: %s", line)
	}
}

func TestWorkerThatCannotStart(t *testing.T) {
	dir := t.TempDir()
	h := newHandout(t, dir, "claims", "")
	c := fakeCommand(t, "claude", "", h, dir, "PATH=/nonexistent")
	_, err := drive.Start(c, drive.Options{})
	var startErr *drive.StartError
	require.ErrorAs(t, err, &startErr)
	assert.Equal(t, "claims", startErr.Job)
	assert.Equal(t, "job claims: the worker did not start: claude is not on the worker's PATH: install it, or put its directory on PATH", err.Error())

	c = fakeCommand(t, "exec", "/nonexistent/worker {prompt}", h, dir)
	_, err = drive.Start(c, drive.Options{})
	require.ErrorAs(t, err, &startErr)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// spawnedPid returns the pid of the child the fake worker's spawn-and-hang
// started, which it names on stderr.
func spawnedPid(t *testing.T, r drive.Result) int {
	t.Helper()
	_, rest, ok := strings.Cut(string(r.Stderr.Data), "spawned ")
	require.True(t, ok, "stderr: %s", r.Stderr.Data)
	pid, err := strconv.Atoi(strings.TrimSpace(rest))
	require.NoError(t, err)
	return pid
}

func TestWatchdogsEndTheWholeGroup(t *testing.T) {
	tests := []struct {
		name    string
		opts    drive.Options
		outcome drive.Outcome
	}{
		{"timeout", drive.Options{Timeout: 300 * time.Millisecond, Grace: 200 * time.Millisecond}, drive.TimedOut},
		{"idle", drive.Options{Idle: 300 * time.Millisecond, Grace: 200 * time.Millisecond}, drive.Idle},
	}
	for _, tt := range tests {
		for _, p := range profiles {
			t.Run(tt.name+"/"+p.worker, func(t *testing.T) {
				c, _ := profileCommand(t, p.worker, p.command, "claims", "", writeScript(t, map[string][]string{"claims": {"spawn-and-hang"}}))
				w, err := drive.Start(c, tt.opts)
				require.NoError(t, err)
				r := w.Wait()
				assert.Equal(t, tt.outcome, r.Outcome)
				assert.Equal(t, "SIGTERM", r.Signal, "the leader ends at SIGTERM")
				assert.Equal(t, -1, r.ExitCode)
				assert.Equal(t, "signal SIGTERM", r.Status())
				child := spawnedPid(t, r)
				assert.True(t, groupGone(w.Pid()), "no process of the group survives, the child that ignores SIGTERM included")
				assert.False(t, proc.Alive(w.Pid(), w.ProcessStart()))
				st, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
				if err == nil {
					assert.Contains(t, string(st), ") Z ", "the child is gone, or a zombie")
				}
			})
		}
	}
}

func TestIdleWatchdogSparesAWorkerThatWrites(t *testing.T) {
	dir := t.TempDir()
	h := newHandout(t, dir, "claims", "")
	c := fakeCommand(t, "exec", `sh -c 'for i in 1 2 3 4 5 6 7 8; do echo "line $i"; sleep 0.1; done'`, h, dir)
	r := runWorker(t, c, drive.Options{Idle: 400 * time.Millisecond, Grace: 100 * time.Millisecond})
	assert.Equal(t, drive.Finished, r.Outcome)
	assert.Equal(t, 0, r.ExitCode)
}

func TestHangAfterOutputGoesIdle(t *testing.T) {
	c, output := profileCommand(t, "claude", "", "claims", "", writeScript(t, map[string][]string{"claims": {"hang-after-output"}}))
	r := runWorker(t, c, drive.Options{Idle: 300 * time.Millisecond, Grace: 100 * time.Millisecond})
	assert.Equal(t, drive.Idle, r.Outcome)
	assert.FileExists(t, output, "the output stays for the step to judge")
}

func TestKill(t *testing.T) {
	t.Run("ends the group at the caller's request", func(t *testing.T) {
		c, _ := profileCommand(t, "codex", "", "claims", "", writeScript(t, map[string][]string{"claims": {"hang"}}))
		w, err := drive.Start(c, drive.Options{Grace: 200 * time.Millisecond})
		require.NoError(t, err)
		assert.True(t, proc.Alive(w.Pid(), w.ProcessStart()))
		w.Kill()
		r := w.Wait()
		assert.Equal(t, drive.Killed, r.Outcome)
		assert.Equal(t, "SIGTERM", r.Signal)
		assert.True(t, groupGone(w.Pid()))
	})
	// A group that ignores SIGTERM, as a worker busy in a tool call may.
	deaf := `sh -c 'trap "" TERM; echo started; sleep 30 & wait'`
	t.Run("SIGKILL follows SIGTERM after the grace period", func(t *testing.T) {
		dir := t.TempDir()
		w, err := drive.Start(fakeCommand(t, "exec", deaf, newHandout(t, dir, "claims", ""), dir), drive.Options{Grace: 300 * time.Millisecond})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return w.LastLine() == "started" }, 5*time.Second, 10*time.Millisecond)
		start := time.Now()
		w.Kill()
		r := w.Wait()
		assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
		assert.Equal(t, drive.Killed, r.Outcome)
		assert.Equal(t, "SIGKILL", r.Signal)
		assert.True(t, groupGone(w.Pid()))
	})
	t.Run("a second kill does not wait out the grace period", func(t *testing.T) {
		dir := t.TempDir()
		w, err := drive.Start(fakeCommand(t, "exec", deaf, newHandout(t, dir, "claims", ""), dir), drive.Options{Grace: time.Hour})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return w.LastLine() == "started" }, 5*time.Second, 10*time.Millisecond)
		w.Kill()
		w.Kill()
		done := make(chan drive.Result)
		go func() { done <- w.Wait() }()
		select {
		case r := <-done:
			assert.Equal(t, drive.Killed, r.Outcome)
			assert.Equal(t, "SIGKILL", r.Signal)
			assert.True(t, groupGone(w.Pid()))
		case <-time.After(10 * time.Second):
			t.Fatal("the worker outlived a second kill")
		}
	})
	t.Run("keeps the outcome of a worker that ended", func(t *testing.T) {
		c, _ := profileCommand(t, "claude", "", "claims", "")
		w, err := drive.Start(c, drive.Options{})
		require.NoError(t, err)
		r := w.Wait()
		w.Kill()
		w.Kill()
		w.Kill()
		assert.Equal(t, drive.Finished, r.Outcome)
		assert.Equal(t, r, w.Wait())
	})
}

func TestWorkerLeavesNothingOfItsGroupWhenItExits(t *testing.T) {
	dir := t.TempDir()
	h := newHandout(t, dir, "claims", "")
	c := fakeCommand(t, "exec", `sh -c 'sleep 30 & echo "left $!"'`, h, dir)
	w, err := drive.Start(c, drive.Options{})
	require.NoError(t, err)
	r := w.Wait()
	assert.Equal(t, drive.Finished, r.Outcome)
	assert.Equal(t, 0, r.ExitCode)
	assert.Contains(t, string(r.Stdout.Data), "left ")
	assert.True(t, groupGone(w.Pid()), "the sleep it left in its group is ended with it")
}

func TestWorkerWaitDoesNotWaitForAProcessThatLeftTheGroup(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	h := newHandout(t, dir, "claims", "")
	// The pause lets setsid leave the group before the group is ended.
	c := fakeCommand(t, "exec", `sh -c 'setsid sleep 30 & sleep 0.2; echo "escaped $!"'`, h, dir)
	start := time.Now()
	r := runWorker(t, c, drive.Options{})
	_, pid, ok := strings.Cut(strings.TrimSpace(string(r.Stdout.Data)), "escaped ")
	require.True(t, ok, "stdout: %s", r.Stdout.Data)
	escaped, err := strconv.Atoi(pid)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) })
	assert.NoError(t, syscall.Kill(escaped, 0), "the process that left the group runs on, holding the streams")
	assert.Equal(t, drive.Finished, r.Outcome)
	assert.Less(t, time.Since(start), 10*time.Second, "the streams it holds open are not waited for beyond a bound")
}

func TestWorkerKeepsTheTailOfItsOutput(t *testing.T) {
	dir := t.TempDir()
	h := newHandout(t, dir, "claims", "")
	c := fakeCommand(t, "exec", `sh -c 'i=0; while [ $i -lt 5000 ]; do i=$((i+1)); echo "line $i"; done; echo short >&2'`, h, dir)
	w, err := drive.Start(c, drive.Options{Keep: 100})
	require.NoError(t, err)
	r := w.Wait()
	require.Equal(t, drive.Finished, r.Outcome)
	assert.Len(t, r.Stdout.Data, 100)
	assert.True(t, r.Stdout.Cut())
	assert.True(t, strings.HasSuffix(string(r.Stdout.Data), "line 4999\nline 5000\n"))
	var total int64
	for i := 1; i <= 5000; i++ {
		total += int64(len("line \n") + len(strconv.Itoa(i)))
	}
	assert.Equal(t, total, r.Stdout.Total)
	assert.Equal(t, "short\n", string(r.Stderr.Data))
	assert.False(t, r.Stderr.Cut())
	assert.Contains(t, []string{"line 5000", "short"}, w.LastLine())
}

func TestWorkerHitsAUsageLimit(t *testing.T) {
	for _, p := range profiles {
		t.Run(p.worker, func(t *testing.T) {
			c, output := profileCommand(t, p.worker, p.command, "claims", "", writeScript(t, map[string][]string{"claims": {"usage-limit:3600"}}))
			before := time.Now()
			r := runWorker(t, c, drive.Options{})
			assert.Equal(t, drive.UsageLimited, r.Outcome)
			assert.Equal(t, 1, r.ExitCode)
			assert.NoFileExists(t, output)
			require.NotNil(t, r.Limit)
			assert.True(t, r.Limit.Known)
			assert.Contains(t, r.Limit.Message, "hit your")
			want := before.Add(time.Hour)
			if p.worker == "claude" {
				// resetsAt, to the second.
				assert.WithinDuration(t, want, r.Limit.Resets, 2*time.Second)
				return
			}
			// The text's minute, waited out to its end.
			assert.WithinDuration(t, want, r.Limit.Resets, time.Minute+2*time.Second)
			assert.False(t, r.Limit.Resets.Before(want.Truncate(time.Minute)))
		})
	}
}

func TestKilledWorkerStaysKilledWhateverItSaid(t *testing.T) {
	dir := t.TempDir()
	h := newHandout(t, dir, "claims", "")
	c := fakeCommand(t, "exec", `sh -c 'echo "Claude AI usage limit reached|2000000000"; sleep 30'`, h, dir)
	w, err := drive.Start(c, drive.Options{Grace: 100 * time.Millisecond})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return w.LastLine() != "" }, 5*time.Second, 10*time.Millisecond)
	w.Kill()
	r := w.Wait()
	assert.Equal(t, drive.Killed, r.Outcome)
	require.NotNil(t, r.Limit, "the limit is still reported")
	assert.Equal(t, time.Unix(2000000000, 0), r.Limit.Resets)
}
