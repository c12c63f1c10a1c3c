package shell

import (
	"fmt"
	"io"
	"strings"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/urfave/cli/v2"
)

func logCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:        "log",
		Usage:       "print the run's history: every step, hand-out, verdict, block, report, resolve and release; read-only",
		ArgsUsage:   "RUN",
		Description: "Log reads the committed history and the reports; it takes no lock and writes nothing.",
		Action: withArgs([]string{"RUN"}, func(c *cli.Context, args []string) error {
			o, err := workflow.Open(reg, args[0])
			if err != nil {
				return err
			}
			events, err := o.Log()
			if err != nil {
				return err
			}
			return printLog(c.App.Writer, events)
		}),
	}
}

// printLog writes one line per event: its time, the step it belongs to,
// and what happened.
func printLog(w io.Writer, events []store.Event) error {
	var b strings.Builder
	for _, e := range events {
		step := "start   "
		if e.Type != "start" {
			step = fmt.Sprintf("step %-3d", e.Step)
		}
		fmt.Fprintf(&b, "%s  %s %s\n", e.At, step, describe(e))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// describe says what an event records, in words.
func describe(e store.Event) string {
	switch e.Type {
	case "start":
		return fmt.Sprintf("run of %s started (%s)", e.Subject, e.Text)
	case "step":
		return "outcome " + e.Text
	case "handout":
		return fmt.Sprintf("hand-out %s, attempt %d: %s", e.Subject, e.Attempt, e.Path)
	case "accept":
		return fmt.Sprintf("accepted %s, attempt %d", e.Subject, e.Attempt)
	case "refuse":
		return fmt.Sprintf("refused %s, attempt %d: %s (%s)", e.Subject, e.Attempt, e.Text, e.Kind)
	case "reopen":
		return fmt.Sprintf("reopened %s: %s", e.Subject, e.Text)
	case "keep":
		return fmt.Sprintf("kept %s of %s as %s", e.Text, e.Subject, e.Path)
	case "block":
		return fmt.Sprintf("blocked %s: %s [%s] record %s", e.Subject, e.Text, e.Kind, e.Path)
	case "effect":
		return fmt.Sprintf("effect %s %s, run %d, by %s", e.Subject, e.Text, e.Attempt, e.Kind)
	case "release":
		return "released " + e.Subject
	case "resolve":
		return fmt.Sprintf("resolved effect %s as %s", e.Subject, e.Text)
	case "report":
		on := ""
		if e.Subject != "" {
			on = " on " + e.Subject
		}
		return fmt.Sprintf("report %d, %s%s: %s", e.Attempt, e.Kind, on, e.Text)
	default:
		return e.Type + " " + e.Subject + " " + e.Text
	}
}
