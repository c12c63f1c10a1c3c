package drive

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// keeperSignal is the keeper's parent-death signal. It is not SIGTERM,
// which a worker's whole group gets when it is asked to end, and which the
// keeper must not take for its parent's death: that would cut the
// worker's grace period short. It is one whose default action is to be
// ignored: one that came before the keeper could catch it would otherwise
// end the keeper, and leave the group unkept. The keeper then looks for
// its parent, so a stray one ends nothing.
const keeperSignal = syscall.SIGWINCH

// diesWithParent gives a worker's leader a parent-death signal: it is
// killed when the process that started it dies.
func diesWithParent(cmd *exec.Cmd) error {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return nil
}

// spawner is a goroutine on an OS thread of its own for good, which starts
// every process that gets a parent-death signal: Linux sends that signal
// when the thread that forked the process ends, not the process, and the
// Go runtime may end a thread another goroutine locked.
var spawner = sync.OnceValue(func() chan func() {
	starts := make(chan func())
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the process
		for start := range starts {
			start()
		}
	}()
	return starts
})

// startKept starts cmd from the spawner's thread.
func startKept(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	spawner() <- func() { done <- cmd.Start() }
	return <-done
}

// startKeeper starts a keeper in the group pgid, which ends that group
// when this process dies. It is reaped when it ends, so that a keeper
// killed with its group never lingers as a zombie.
func startKeeper(keeper []string, pgid int) error {
	args := append(keeper[1:len(keeper):len(keeper)], strconv.Itoa(pgid), strconv.Itoa(os.Getpid()))
	cmd := exec.Command(keeper[0], args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: keeperSignal}
	if err := startKept(cmd); err != nil {
		return fmt.Errorf("start the keeper of the worker's group: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// KeepGroup is a keeper: it waits, in the worker group pgid, for the
// death of parent, the process that started the worker, and then kills
// the whole group. A group that ends in the ordinary way kills the keeper
// with it. It returns only when it cannot keep the group.
func KeepGroup(pgid, parent int) error {
	if pgid < 2 || parent < 2 {
		return fmt.Errorf("keep group %d of process %d: not a group and a process", pgid, parent)
	}
	// The group is asked to end with SIGTERM and Ctrl-C; only SIGKILL, or
	// the parent's death, ends the keeper.
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	died := make(chan os.Signal, 1)
	signal.Notify(died, keeperSignal)
	// Before the signal was caught, the parent may have died already.
	for os.Getppid() == parent {
		<-died
	}
	return unix.Kill(-pgid, syscall.SIGKILL)
}
