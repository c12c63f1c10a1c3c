package shell

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func checkCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "say what the next step would change in the run, and why; writes no record",
		ArgsUsage: "RUN [--json] [--map OLD=NEW]... [--record DIR]",
		Description: "The first line is unchanged or changed; then one line per job or effect whose standing the next\n" +
			"step would change, and last the outcome the next step would give. Check replays the run twice with\n" +
			"this binary's definition, runs no effect, takes no lock and writes no record (the definition's own\n" +
			"mechanical code runs, writes included); a definition that names other jobs from one replay to the\n" +
			"next is reported as non-deterministic. Both answers exit 0.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the check as one JSON object"},
			&cli.StringSliceFlag{Name: "map", Usage: "files outside the run recorded under OLD are found under NEW, `OLD=NEW`; repeat for more", KeepSpace: true},
			&cli.StringFlag{Name: "record", Usage: "also copy the run into `DIR` as a fixture for workflowtest.Replay, stepped once when only a carry-over changes it; " +
				"DIR is missing, empty, or a fixture, which it replaces"},
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
			record := c.String("record")
			if c.IsSet("record") && record == "" {
				return nil, &engine.UsageError{Message: "check: --record needs a directory", Hint: "give the fixture's directory: --record testdata/runs/NAME"}
			}
			return func(o *engine.Run) error {
				var check engine.Check
				var skipped []string
				var err error
				if record == "" {
					check, err = o.Check(maps...)
				} else {
					check, skipped, err = o.Record(record, maps...)
				}
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c, check)
				}
				if err := check.WriteText(c.App.Writer); err != nil {
					return err
				}
				if record != "" {
					return printRecorded(c.App.Writer, record, skipped)
				}
				return nil
			}, nil
		}),
	}
}

// printRecorded says where the fixture is, and what of the run it could not
// hold.
func printRecorded(w io.Writer, dir string, skipped []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "recorded: %s\n", dir)
	for _, rel := range skipped {
		fmt.Fprintf(&b, "  left out: %s\n", rel)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
