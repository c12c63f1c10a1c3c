package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// followWait bounds every wait on a following log: a safety net for a test
// that would otherwise hang, not a measure of speed.
const followWait = 30 * time.Second

// following is a `custodian log --follow` running in a process of its own.
type following struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string // what it prints, a line at a time
	stderr *bytes.Buffer
}

// follow starts `custodian log DIR --follow` with flags.
func follow(t *testing.T, dir string, flags ...string) *following {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"log", dir, "--follow"}, flags...)...)
	f := &following{t: t, cmd: cmd, lines: make(chan string, 1000), stderr: &bytes.Buffer{}}
	cmd.Stderr = f.stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		close(f.lines)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return f
}

// lineTime matches the time that begins every line of the log.
var lineTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z  `)

// next returns the next n lines the log printed, without their times.
func (f *following) next(n int) []string {
	f.t.Helper()
	var got []string
	deadline := time.After(followWait)
	for len(got) < n {
		select {
		case line, ok := <-f.lines:
			require.True(f.t, ok, "the log ended after %q; stderr %q", got, f.stderr.String())
			got = append(got, lineTime.ReplaceAllString(line, "TIME  "))
		case <-deadline:
			require.FailNow(f.t, "the log printed too little", "got %q; stderr %q", got, f.stderr.String())
		}
	}
	return got
}

// end waits for the log to end and returns its exit status and what it
// printed after the lines read.
func (f *following) end() (int, []string) {
	f.t.Helper()
	var rest []string
	deadline := time.After(followWait)
	for {
		select {
		case line, ok := <-f.lines:
			if ok {
				rest = append(rest, line)
				continue
			}
			err := f.cmd.Wait()
			var exit *exec.ExitError
			if err != nil && !assert.ErrorAs(f.t, err, &exit) {
				return -1, rest
			}
			return f.cmd.ProcessState.ExitCode(), rest
		case <-deadline:
			require.FailNow(f.t, "the log did not end")
		}
	}
}

// untimed drops the times of a log's lines.
func untimed(out string) []string {
	var lines []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		lines = append(lines, lineTime.ReplaceAllString(line, "TIME  "))
	}
	return lines
}

// log --follow prints the history, then each step's events as another
// process commits them, and ends with status 0 at SIGINT or SIGTERM.
func TestLogFollowPrintsCommitsUntilInterrupted(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := trialRun(t, "clean")
			ok(t, "step", dir)
			f := follow(t, dir)
			assert.Equal(t, untimed(ok(t, "log", dir)), f.next(4), "the history comes first")

			for _, name := range []string{"claims.md", "assumptions.md"} {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(validOutput), 0o644))
			}
			ok(t, "step", dir)
			assert.Equal(t, []string{
				"TIME  step 2    outcome: launch",
				"TIME  step 2    accepted claims, attempt 1",
				"TIME  step 2    accepted assumptions, attempt 1",
				"TIME  step 2    handed out reconcile, attempt 1: .custodian/jobs/reconcile/prompt-1.md",
			}, f.next(4))

			require.NoError(t, f.cmd.Process.Signal(sig))
			code, rest := f.end()
			assert.Equal(t, 0, code, "stderr %q", f.stderr.String())
			assert.Empty(t, rest)
			assert.Empty(t, f.stderr.String())
		})
	}
}

// A follower that ran through a whole run printed exactly what log prints
// at its end: no event twice and none lost, whatever the steps of another
// process committed while it looked. --job and --since hold for what
// follows.
func TestLogFollowMissesNothing(t *testing.T) {
	dir := trialRun(t, "retry")
	all := follow(t, dir)
	all.next(1)
	ok(t, "step", dir)
	for _, name := range []string{"claims.md", "assumptions.md"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(validOutput), 0o644))
	}
	ok(t, "step", dir)
	// A job can be followed once a step has named it.
	reconcile := follow(t, dir, "--job", "reconcile", "--since", "3")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "reconciled.md"), []byte(validOutput), 0o644))
	ok(t, "step", dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "reconciled.md"), []byte(validOutput+"\nChecked: yes\n"), 0o644))
	ok(t, "report", dir, "repair", "--job", "reconcile", "--text", "checked it")
	require.Equal(t, "done\n", ok(t, "step", dir))

	want := untimed(ok(t, "log", dir))
	assert.Equal(t, want[1:], all.next(len(want)-1))
	wantJob := untimed(ok(t, "log", dir, "--job", "reconcile", "--since", "3"))
	assert.Equal(t, wantJob, reconcile.next(len(wantJob)))
	for _, f := range []*following{all, reconcile} {
		require.NoError(t, f.cmd.Process.Signal(syscall.SIGINT))
		code, rest := f.end()
		assert.Equal(t, 0, code, "stderr %q", f.stderr.String())
		assert.Empty(t, rest, "printed more than the log holds")
	}
}

// A record that cannot be trusted ends the follower with exit 4, as it
// ends every command.
func TestLogFollowEndsAtAnUntrustedRecord(t *testing.T) {
	dir := trialRun(t, "clean")
	ok(t, "step", dir)
	f := follow(t, dir)
	f.next(4)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".custodian", "state.json"), []byte("garbage\n"), 0o644))
	code, rest := f.end()
	assert.Equal(t, 4, code)
	assert.Empty(t, rest)
	assert.Contains(t, f.stderr.String(), "custodian: record "+filepath.Join(dir, ".custodian", "state.json")+" cannot be trusted")
	assert.Contains(t, f.stderr.String(), "\ncustodian: hint: do not edit anything under .custodian/")
}
