// Command custodian-temporal is custodian with its loop carried on
// Temporal: `custodian-temporal drive RUN` drives a run as a Temporal
// workflow, its steps taken on the run's host and its workers launched on
// any host that runs `custodian-temporal worker`. Every other command is
// custodian's. See docs/temporal.md.
package main

import (
	"os"

	"github.com/custodian-run/custodian/cmd/custodian-temporal/command"
	"github.com/custodian-run/custodian/cmd/custodian/shell"
	"github.com/custodian-run/custodian/definitions"
)

func main() {
	reg := definitions.Builtin()
	os.Exit(shell.Main(reg, os.Args, os.Stdout, os.Stderr, command.Commands(reg)...))
}
