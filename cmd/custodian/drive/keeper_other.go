//go:build unix && !linux

package drive

import (
	"errors"
	"os/exec"
)

var errNoKeeper = errors.New("a worker that dies with its parent needs Linux's parent-death signal")

func diesWithParent(*exec.Cmd) error { return errNoKeeper }

func startKeeper([]string, int) error { return errNoKeeper }

func startKept(*exec.Cmd) error { return errNoKeeper }

// KeepGroup is a keeper, which needs Linux.
func KeepGroup(int, int) error { return errNoKeeper }
