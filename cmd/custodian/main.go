// Command custodian runs code-scheduled workflows of AI agents: each
// `custodian step RUN` replays a run's definition against its records,
// judges every job's output and prints what the agent orchestrator launches
// next. See docs/ for the loop instruction and the command reference.
package main

import (
	"os"

	"github.com/custodian-run/custodian/cmd/custodian/shell"
	"github.com/custodian-run/custodian/definitions"
)

func main() {
	os.Exit(shell.Main(definitions.Builtin(), os.Args, os.Stdout, os.Stderr))
}
