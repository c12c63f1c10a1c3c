// Package command is the commands custodian-temporal adds to custodian's
// shell: drive, which drives a run as a Temporal workflow, worker, which
// launches its workers on any host, and the hidden keep-group, the keeper
// of each worker's process group. An author's binary adds them to its own
// registry's shell as custodian-temporal's main does.
package command

import (
	"github.com/urfave/cli/v2"

	"github.com/custodian-run/custodian/workflow"
)

// Commands returns the commands for the definitions in reg; drive takes
// the place of the shell's own.
func Commands(reg *workflow.Registry) []*cli.Command {
	return []*cli.Command{driveCommand(reg), workerCommand(), keepGroupCommand()}
}
