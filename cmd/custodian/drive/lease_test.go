//go:build linux

package drive_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/internal/proc"
)

// startGroup starts a process group whose leader and child both ignore
// SIGTERM (the fake worker's sleeper, which spawns nothing; sh running it
// and waiting), as a worker of a driver that died would be left. It
// returns the leader; the test reaps it.
func startGroup(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", `trap "" TERM; "$0" & wait`, fakeworker)
	cmd.Env = append(os.Environ(), "FAKEWORKER_SLEEPER=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	return cmd
}

func TestEndGroup(t *testing.T) {
	t.Run("ends a group that ignores SIGTERM", func(t *testing.T) {
		cmd := startGroup(t)
		pid := cmd.Process.Pid
		start, err := proc.StartTime(pid)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return groupMembers(pid) == 2 }, 5*time.Second, 10*time.Millisecond)
		require.True(t, proc.Alive(pid, start))
		require.NoError(t, drive.EndGroup(pid, start, 200*time.Millisecond))
		assert.False(t, proc.Alive(pid, start))
		assert.True(t, groupGone(pid))
	})
	t.Run("leaves alone a process that took a recorded pid", func(t *testing.T) {
		cmd := startGroup(t)
		pid := cmd.Process.Pid
		require.NoError(t, drive.EndGroup(pid, "an earlier start", 200*time.Millisecond))
		assert.False(t, groupGone(pid))
	})
	t.Run("ends what the worker left in its group", func(t *testing.T) {
		cmd := startGroup(t)
		pid := cmd.Process.Pid
		start, err := proc.StartTime(pid)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return groupMembers(pid) == 2 }, 5*time.Second, 10*time.Millisecond)
		// The leader dies; its child lives on in the group.
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		require.Eventually(t, func() bool { return groupMembers(pid) == 1 }, 5*time.Second, 10*time.Millisecond)
		require.True(t, proc.Alive(pid, start), "a group whose leader has gone still runs")
		require.NoError(t, drive.EndGroup(pid, start, 200*time.Millisecond))
		assert.True(t, groupGone(pid))
	})
}
