package shell

import (
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func abandonCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "abandon",
		Usage:     "the operator's: end a run for good",
		ArgsUsage: "RUN --text TEXT",
		Description: "The history records why. Every later command but status, log and check refuses the run;\n" +
			"nothing under it is moved or deleted. Prints nothing.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "text", Usage: "why the run ends, in a sentence"},
		},
		Action: withRun(reg, nil, func(c *cli.Context, _ []string) (func(*engine.Run) error, error) {
			why, err := text(c, "text")
			if err != nil {
				return nil, err
			}
			if why == "" {
				return nil, usagef(c, "--text is required: say why the run ends")
			}
			return func(o *engine.Run) error { return o.Abandon(why) }, nil
		}),
	}
}
