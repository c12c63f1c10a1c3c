package shell

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/custodian-run/custodian/workflow"
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
		},
		Action: withArgs([]string{"RUN"}, func(c *cli.Context, args []string) error {
			o, err := workflow.Open(reg, args[0])
			if err != nil {
				return err
			}
			out, err := o.Step()
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
			return printOutcome(c.App.Writer, out)
		}),
	}
}

// printOutcome writes the lines of an outcome that docs/commands.md fixes:
// the outcome word, then what the agent orchestrator acts on. It points at
// records and never repeats a validator's message.
func printOutcome(w io.Writer, out workflow.Outcome) error {
	var b strings.Builder
	fmt.Fprintln(&b, out.Kind)
	switch out.Kind {
	case workflow.KindLaunch:
		for _, j := range out.Jobs {
			fmt.Fprintf(&b, "- %s: `%s`", j.Name, j.Prompt)
			if l := string(j.Launch); l != "" && l != "{}" {
				fmt.Fprintf(&b, " launch=%s", l)
			}
			fmt.Fprintln(&b)
		}
	case workflow.KindBlocked:
		for _, blk := range out.Blocks {
			printBlock(&b, "", blk)
			if blk.Permitted == workflow.PermitRepair {
				fmt.Fprintf(&b, "  permitted: repair within this scope: %s\n", blk.Scope)
			} else {
				fmt.Fprintln(&b, "  permitted: stop and report to the operator")
			}
		}
	case workflow.KindUncertain:
		for _, e := range out.Effects {
			fmt.Fprintf(&b, "- effect %s: %s\n", e.Name, e.Detail)
			fmt.Fprintln(&b, "  permitted: stop and report to the operator; the operator establishes what took place")
		}
		for _, blk := range out.Blocks {
			printBlock(&b, "also ", blk)
		}
	case workflow.KindDone:
	default:
		return fmt.Errorf("step gave an outcome this shell cannot print: %q", out.Kind)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func printBlock(b *strings.Builder, prefix string, blk workflow.Block) {
	fmt.Fprintf(b, "- %s%s: %s\n", prefix, blk.Subject, blk.Reason)
	fmt.Fprintf(b, "  record: %s\n", blk.Record)
}
