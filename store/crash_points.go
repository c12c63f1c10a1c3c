//go:build crashpoints

package store

import (
	"fmt"
	"os"
	"strconv"
)

// CrashStatus is the exit status of a process ended at a crash point.
const CrashStatus = 86

// In a binary built with the crashpoints tag, CUSTODIAN_CRASH_AT=N ends the
// process just before its N-th write (counting from 1), as if the power had
// gone, and CUSTODIAN_CRASH_LOG names a file that gets one line per write
// point reached. Crash tests use the log to count a command's writes and
// then end it before each of them in turn.
var (
	crashAt  = crashAtFromEnv()
	crashLog = os.Getenv("CUSTODIAN_CRASH_LOG")
	reached  int
)

func crashAtFromEnv() int {
	n, err := strconv.Atoi(os.Getenv("CUSTODIAN_CRASH_AT"))
	if err != nil {
		return 0
	}
	return n
}

func crashPoint(label string) {
	reached++
	if crashLog != "" {
		f, err := os.OpenFile(crashLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, label)
			f.Close()
		}
	}
	if reached == crashAt {
		fmt.Fprintf(os.Stderr, "custodian: crash test: ended before write %d (%s)\n", reached, label)
		os.Exit(CrashStatus)
	}
}
