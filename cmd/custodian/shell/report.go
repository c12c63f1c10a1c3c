package shell

import (
	"fmt"
	"strings"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func reportCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "record what only the agent orchestrator can see",
		ArgsUsage: "RUN EVENT [--job NAME] [--text TEXT]",
		Description: "EVENT is one of: " + strings.Join(engine.ReportEvents, ", ") + ".\n" +
			"A report never advances the run; it appears in the block records.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "job", Usage: "the job the report is about, one that step has handed out"},
			&cli.StringFlag{Name: "text", Usage: "what happened, in a sentence"},
		},
		Action: withRun(reg, []string{"EVENT"}, func(c *cli.Context, args []string) (func(*engine.Run) error, error) {
			job, err := text(c, "job")
			if err != nil {
				return nil, err
			}
			what, err := text(c, "text")
			if err != nil {
				return nil, err
			}
			return func(o *engine.Run) error {
				rep, err := o.Report(args[0], job, what)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(c.App.Writer, "report %d recorded\n", rep.Number)
				return err
			}, nil
		}),
	}
}
