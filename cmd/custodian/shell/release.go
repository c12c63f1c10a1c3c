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
		Action: withRun(reg, []string{"SUBJECT"}, func(c *cli.Context, args []string) (func(*engine.Run) error, error) {
			return func(o *engine.Run) error { return o.Release(engine.Subject(args[0])) }, nil
		}),
	}
}
