package drive_test

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
)

// helperRole is the test binary as a keeper, or as the process that
// starts a kept worker, prints its group and waits to be killed.
func helperRole(role string, args []string) int {
	if role == "keep-group" {
		pgid, _ := strconv.Atoi(args[0])
		parent, _ := strconv.Atoi(args[1])
		if err := drive.KeepGroup(pgid, parent); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	self, _ := os.Executable()
	w, err := drive.Start(&drive.Command{Job: "a", Args: []string{"/bin/sh", "-c", "sleep 300 & sleep 300"}, Dir: os.TempDir(),
		Env: os.Environ()}, drive.Options{Keeper: []string{self, "keep-group"}, Grace: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(w.Pid())
	w.Wait()
	return 0
}
