//go:build !unix

package trial

import "os/exec"

// detachHold leaves cmd as it is: process groups are a Unix notion.
func detachHold(*exec.Cmd) {}
