package shell

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/custodian-run/custodian/runlist"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func runsCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "runs",
		Usage:     "list the runs under directories and where each stands; read-only",
		ArgsUsage: "[DIR...] [--json] [--definition NAME] [--state STATE]",
		Description: "One line per run under the directories (the working directory without one), sorted by path:\n" +
			"its path, definition, where it stands, its jobs by state, its last step and the build that took it,\n" +
			"and the patches this binary declares that it lacks. A run that cannot be read is listed with why.\n" +
			"It takes no lock, writes nothing and follows no symbolic link below the directories given, and it\n" +
			"does not look inside a run for more runs.\n" +
			"STATE is one of: " + strings.Join(runlist.States, ", ") + ".",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print each run as one JSON object, one a line"},
			&cli.StringFlag{Name: "definition", Usage: "list only the runs of the definition `NAME`"},
			&cli.StringFlag{Name: "state", Usage: "list only the runs that stand so, `STATE`: " + strings.Join(runlist.States, ", ")},
		},
		Action: withArgs([]string{"DIR..."}, func(c *cli.Context, dirs []string) error {
			definition, err := text(c, "definition")
			if err != nil {
				return err
			}
			if c.IsSet("definition") && definition == "" {
				return usagef(c, "--definition needs a definition's name")
			}
			state := c.String("state")
			if c.IsSet("state") && !slices.Contains(runlist.States, state) {
				return &engine.UsageError{
					Message: subject(c) + fmt.Sprintf("--state %q is not a state", state),
					Hint:    "give one of: " + strings.Join(runlist.States, ", ") + "; quote the words of two: --state 'in progress'",
				}
			}
			entries, err := runlist.Find(reg, dirs...)
			if err != nil {
				return err
			}
			var shown []runlist.Entry
			for _, e := range entries {
				if (definition == "" || e.Definition == definition) && (state == "" || e.State == state) {
					shown = append(shown, e)
				}
			}
			if c.Bool("json") {
				for _, e := range shown {
					if err := printJSON(c, e); err != nil {
						return err
					}
				}
				return nil
			}
			return printRuns(c.App.Writer, shown)
		}),
	}
}

// printRuns writes one line per run, its cells in aligned columns: path,
// definition, state, then the jobs, the last step and the patches it lacks,
// or why it cannot be read. Every cell is one line, whatever a directory's
// name holds.
func printRuns(w io.Writer, entries []runlist.Entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range entries {
		definition := e.Definition
		if definition == "" {
			definition = "-"
		}
		cells := []string{cell(e.Path), definition, e.State}
		if e.State == runlist.Unreadable {
			cells = append(cells, cell(e.Reason))
		} else {
			last := "never stepped"
			if l := e.Last; l != nil {
				last = fmt.Sprintf("step %d at %s by %s", l.Step, l.At, l.BuildText)
			}
			cells = append(cells, e.Summary, last)
			switch len(e.Lacks) {
			case 0:
			case 1:
				cells = append(cells, "lacks patch "+e.Lacks[0])
			default:
				cells = append(cells, "lacks patches "+strings.Join(e.Lacks, ", "))
			}
		}
		if _, err := io.WriteString(tw, strings.Join(cells, "\t")+"\n"); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// cell is s as one cell of a line: control characters escaped, and a
// string that is not UTF-8 (a directory's name may be any bytes) quoted,
// so that nothing in it can begin a line or break the columns.
func cell(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	return engine.OneLine(s)
}
