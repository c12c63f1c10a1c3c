package shell

import (
	"fmt"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func startCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "start",
		Usage:     "start a run of a definition; prints the run directory",
		ArgsUsage: "DEFINITION [--run DIR] [--param KEY=VALUE]...",
		Description: "Without --run, the run gets a fresh directory under runs/ in the working directory,\n" +
			"named by the definition and the time, so that names sort by start.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "run", Usage: "the run `DIR`; it may exist, but may not hold a run", TakesFile: true},
			&cli.StringSliceFlag{Name: "param", Usage: "a parameter of the run, `KEY=VALUE`; repeat for more", KeepSpace: true},
		},
		Action: withArgs([]string{"DEFINITION"}, func(c *cli.Context, args []string) error {
			params, err := pairs(c, "param")
			if err != nil {
				return err
			}
			o, err := engine.Start(reg, args[0], c.String("run"), params)
			if err != nil {
				return err
			}
			defer o.Close()
			_, err = fmt.Fprintln(c.App.Writer, o.Dir())
			return err
		}),
	}
}
