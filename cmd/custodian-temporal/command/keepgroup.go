package command

import (
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/cmd/custodian/shell"
)

// keepGroupCommand is the keeper a worker host starts in each worker's
// process group: it ends the group when the worker process dies.
func keepGroupCommand() *cli.Command {
	return &cli.Command{
		Name:      "keep-group",
		Hidden:    true,
		Usage:     "end a worker's process group when the worker process that started it dies",
		ArgsUsage: "PGID PARENT",
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return shell.Usagef(c, "give the group and the parent's pid")
			}
			pgid, err1 := strconv.Atoi(c.Args().Get(0))
			parent, err2 := strconv.Atoi(c.Args().Get(1))
			if err1 != nil || err2 != nil {
				return shell.Usagef(c, "%q and %q are not pids", c.Args().Get(0), c.Args().Get(1))
			}
			return drive.KeepGroup(pgid, parent)
		},
	}
}
