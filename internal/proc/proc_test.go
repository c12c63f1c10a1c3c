//go:build linux

package proc_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/internal/proc"
)

func TestStartTime(t *testing.T) {
	start, err := proc.StartTime(os.Getpid())
	require.NoError(t, err)
	again, err := proc.StartTime(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, start, again)
	assert.NotEmpty(t, start)

	other, err := proc.StartTime(os.Getppid())
	require.NoError(t, err)
	assert.NotEqual(t, start, other)

	_, err = proc.StartTime(1 << 30)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestAlive(t *testing.T) {
	self, err := proc.StartTime(os.Getpid())
	require.NoError(t, err)
	assert.True(t, proc.Alive(os.Getpid(), self))
	assert.False(t, proc.Alive(os.Getpid(), self+"0"), "another start time is another process: the pid was reused")
	assert.False(t, proc.Alive(1<<30, self))

	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Run())
	assert.False(t, proc.Alive(cmd.Process.Pid, "whatever"), "an ended worker with an empty group")
}
