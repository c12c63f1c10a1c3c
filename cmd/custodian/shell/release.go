package shell

import (
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func releaseCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "release",
		Usage:     "the operator's: let a stopped job or the workflow be tried again",
		ArgsUsage: "RUN SUBJECT",
		Description: "SUBJECT is a job of the run, or workflow. Its attempts and repairs start over;\n" +
			"accepted outputs of other jobs are untouched. Prints nothing.",
		Action: withArgs([]string{"RUN", "SUBJECT"}, func(c *cli.Context, args []string) error {
			o, err := engine.Open(reg, args[0])
			if err != nil {
				return err
			}
			defer o.Close()
			return o.Release(engine.Subject(args[1]))
		}),
	}
}
