package drive_test

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A kept worker dies with the process that started it, its whole group
// with it, however that process ends: a worker that outlived the process
// watching it could write after its attempt was counted lost.
func TestKeeper_aWorkerDiesWithItsParent(t *testing.T) {
	parent := exec.Command(os.Args[0], "start-kept")
	parent.Stderr = os.Stderr
	out, err := parent.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, parent.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	pgid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return groupMembers(pgid) >= 3 }, 5*time.Second, 10*time.Millisecond,
		"the worker, its sleeps and its keeper do not all run")

	require.NoError(t, parent.Process.Signal(syscall.SIGKILL))
	_ = parent.Wait()
	assert.Eventually(t, func() bool { return groupGone(pgid) }, 5*time.Second, 10*time.Millisecond,
		"the worker's group outlived the process that started it")
}

// A kept worker's group asked to end has its grace period: the keeper
// does not take SIGTERM for its parent's death, and ends with the group.
func TestKeeper_aKeptWorkerEndsAsAnyOther(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	script := "trap 'echo bye; exit 0' TERM; echo up; while :; do sleep 0.05; done"
	w, err := drive.Start(&drive.Command{Job: "a", Args: []string{"/bin/sh", "-c", script}, Dir: t.TempDir(), Env: os.Environ()},
		drive.Options{Keeper: []string{self, "keep-group"}, Grace: 5 * time.Second})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return groupMembers(w.Pid()) >= 2 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	// The keeper's signal, sent by someone else: its parent lives, so the
	// keeper ends nothing.
	require.NoError(t, syscall.Kill(-w.Pid(), syscall.SIGWINCH))
	time.Sleep(200 * time.Millisecond)
	require.GreaterOrEqual(t, groupMembers(w.Pid()), 2, "a stray signal ended the kept group")
	w.Kill()
	r := w.Wait()
	assert.Contains(t, string(r.Stdout.Data), "bye", "the worker was not given its grace period")
	assert.True(t, groupGone(w.Pid()), "the keeper outlived its group")
}
