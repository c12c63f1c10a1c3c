package shell

import (
	"errors"
	"unicode/utf8"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func checkCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "say what the next step would change in the run, and why; writes no record",
		ArgsUsage: "RUN [--json] [--map OLD=NEW]...",
		Description: "The first line is unchanged or changed; then one line per job or effect whose standing the next\n" +
			"step would change, and last the outcome the next step would give. Check replays the run twice with\n" +
			"this binary's definition, runs no effect, takes no lock and writes no record (the definition's own\n" +
			"mechanical code runs, writes included); a definition that names other jobs from one replay to the\n" +
			"next is reported as non-deterministic. Both answers exit 0.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the check as one JSON object"},
			&cli.StringSliceFlag{Name: "map", Usage: "files outside the run recorded under OLD are found under NEW, `OLD=NEW`; repeat for more", KeepSpace: true},
		},
		Action: withRun(reg, nil, func(c *cli.Context, _ []string) (func(*engine.Run) error, error) {
			var maps []engine.Map
			for _, s := range c.StringSlice("map") {
				if !utf8.ValidString(s) {
					return nil, &engine.UsageError{Message: "check: --map is not UTF-8 text", Hint: "give two absolute directories as UTF-8 text: --map /where/it/was=/where/it/is"}
				}
				m, err := engine.ParseMap(s)
				var bad *engine.UsageError
				if errors.As(err, &bad) {
					return nil, &engine.UsageError{Message: "check: " + bad.Message, Hint: bad.Hint}
				}
				maps = append(maps, m)
			}
			return func(o *engine.Run) error {
				check, err := o.Check(maps...)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c, check)
				}
				return check.WriteText(c.App.Writer)
			}, nil
		}),
	}
}
