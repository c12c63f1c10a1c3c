package shell

import (
	"encoding/json"
	"fmt"

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
			// custodian drive names itself to the steps it runs.
			&cli.StringFlag{Name: "driver", Hidden: true},
		},
		Action: withArgs([]string{"RUN"}, func(c *cli.Context, args []string) error {
			o, err := engine.Open(reg, args[0])
			if err != nil {
				return err
			}
			defer o.Close()
			step := o.Step
			if c.IsSet("driver") {
				p, err := drive.ParseDriverToken(c.String("driver"))
				if err != nil {
					return usagef(c, "%v", err)
				}
				step = o.Driver(p).Step
			}
			out, err := step()
			if err != nil {
				return err
			}
			if c.Bool("json") {
				data, err := json.Marshal(out)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(c.App.Writer, "%s\n", data)
				return err
			}
			return out.WriteText(c.App.Writer)
		}),
	}
}
