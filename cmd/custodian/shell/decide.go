package shell

import (
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func decideCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "decide",
		Usage:     "the operator's: record a choice on a question the definition asks",
		ArgsUsage: "RUN NAME CHOICE [--text WHY]",
		Description: "NAME is a question the last step blocked on (decision NAME, awaiting-decision); CHOICE is one of\n" +
			"the choices it offers, which its block record and status list. The choice and why are recorded in the\n" +
			"run's history; the next step's replay returns the choice to the definition. Only the operator decides:\n" +
			"an agent orchestrator stops at the block and reports it. Prints nothing.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "text", Usage: "why the operator chose so, for the history"},
		},
		Action: withRun(reg, []string{"NAME", "CHOICE"}, func(c *cli.Context, args []string) (func(*engine.Run) error, error) {
			return func(o *engine.Run) error { return o.Decide(args[0], args[1], c.String("text")) }, nil
		}),
	}
}
