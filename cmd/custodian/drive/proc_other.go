//go:build unix && !linux

package drive

import "os/exec"

// awaitExit waits for cmd's process to exit, and reaps it: without
// waitid's WNOWAIT there is no waiting without reaping.
func awaitExit(cmd *exec.Cmd) { _ = cmd.Wait() }

// reap does nothing: awaitExit has reaped.
func reap(*exec.Cmd) {}
