package shell

import (
	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func stepCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "step",
		Usage:     "replay the run's definition, judge every job and print one outcome",
		ArgsUsage: "RUN [--json]",
		Description: "The first line is the outcome: uncertain, blocked, launch or done.\n" +
			"Every outcome exits 0; the exit status tells busy, broken and defective runs apart.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the outcome as one JSON object"},
			// custodian drive names itself to the steps it runs, and the
			// hand-outs it holds, which the step leaves alone.
			&cli.StringFlag{Name: "driver", Hidden: true},
			&cli.StringSliceFlag{Name: "running", Hidden: true},
			// custodian-temporal asks for a step by its number: a retried
			// activity is given the outcome of the step it took.
			&cli.IntFlag{Name: "number", Hidden: true},
		},
		Action: withRun(reg, nil, func(c *cli.Context, _ []string) (func(*engine.Run) error, error) {
			var driver *engine.Holder
			if c.IsSet("driver") {
				p, err := drive.ParseDriverToken(c.String("driver"))
				if err != nil {
					return nil, usagef(c, "%v", err)
				}
				driver = &p
			}
			running, err := drive.ParseRunning(c.StringSlice("running"))
			if err != nil {
				return nil, usagef(c, "%v", err)
			}
			if (len(running) > 0 || c.IsSet("number")) && driver == nil {
				return nil, usagef(c, "--running and --number are custodian drive's, with --driver")
			}
			if c.Int("number") < 0 {
				return nil, usagef(c, "--number %d is not a step's number", c.Int("number"))
			}
			return func(o *engine.Run) error {
				step := o.Step
				if driver != nil {
					step = func() (engine.Outcome, error) { return o.HolderDriver(*driver).StepNumber(c.Int("number"), running) }
				}
				out, err := step()
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c, out)
				}
				return out.WriteText(c.App.Writer)
			}, nil
		}),
	}
}
