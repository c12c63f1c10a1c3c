package shell

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/custodian-run/custodian/workflow"
	"github.com/urfave/cli/v2"
)

func statusCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show where every job and effect of the run stands; read-only",
		ArgsUsage: "RUN [--json]",
		Description: "Status judges nothing, consumes no round, takes no lock and writes nothing.\n" +
			"It shows the last step's outcome and what the agent orchestrator and the operator may do now.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the status as one JSON object"},
		},
		Action: withArgs([]string{"RUN"}, func(c *cli.Context, args []string) error {
			o, err := workflow.Open(reg, args[0])
			if err != nil {
				return err
			}
			s, err := o.Status()
			if err != nil {
				return err
			}
			if c.Bool("json") {
				data, err := json.Marshal(s)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(c.App.Writer, "%s\n", data)
				return err
			}
			return printStatus(c.App.Writer, s)
		}),
	}
}

// printStatus writes a status for a person: the run, the last outcome, a
// line per job and per effect, and what each party may do now.
func printStatus(w io.Writer, s workflow.Status) error {
	var b strings.Builder
	fmt.Fprintf(&b, "run: %s\n", s.Run)
	fmt.Fprintf(&b, "definition: %s %s\n", s.Definition, params(s.Params))
	if s.Last == nil {
		fmt.Fprintln(&b, "last step: none")
	} else {
		fmt.Fprintf(&b, "last step: %d, %s, at %s\n", s.Last.Step, s.Last.Outcome.Kind, s.Last.At)
	}
	if len(s.Jobs) > 0 {
		fmt.Fprintln(&b, "jobs:")
	}
	for _, j := range s.Jobs {
		fmt.Fprintf(&b, "- %s: %s, %s\n", j.Name, j.State, attempts(j.Attempts))
		if len(j.Changed) > 0 {
			fmt.Fprintf(&b, "  changed since accepted: %s\n", strings.Join(j.Changed, ", "))
		}
		if f := j.LastFailure; f != nil && j.State != workflow.JobAccepted {
			fmt.Fprintf(&b, "  last failure: %s (%s)\n", f.Reason, f.Kind)
		}
		if blk := j.Block; blk != nil {
			fmt.Fprintf(&b, "  block: %s (%s), permits %s\n", blk.Reason, blk.Kind, blk.Permitted)
			fmt.Fprintf(&b, "  record: %s\n", blk.Record)
		}
	}
	if blk := s.Workflow; blk != nil {
		fmt.Fprintf(&b, "workflow: stopped: %s (%s)\n  record: %s\n", blk.Reason, blk.Kind, blk.Record)
	}
	if len(s.Effects) > 0 {
		fmt.Fprintln(&b, "effects:")
	}
	for _, e := range s.Effects {
		fmt.Fprintf(&b, "- %s: %s (run %d, by %s at %s)\n", e.Name, e.Status, e.Runs, e.By, e.At)
		if len(e.Changed) > 0 {
			fmt.Fprintf(&b, "  inputs changed since: %s\n", strings.Join(e.Changed, ", "))
		}
	}
	if s.Last != nil {
		for _, blk := range s.Last.Outcome.Blocks {
			if _, isJob := jobNamed(s, blk.Subject); !isJob && blk.Subject != "workflow" {
				fmt.Fprintf(&b, "%s: %s (%s), permits %s\n  record: %s\n", blk.Subject, blk.Reason, blk.Kind, blk.Permitted, blk.Record)
			}
		}
		for _, e := range s.Last.Outcome.Effects {
			fmt.Fprintf(&b, "effect %s is uncertain: %s\n", e.Name, e.Detail)
		}
	}
	fmt.Fprintf(&b, "agent orchestrator: %s\n", strings.ReplaceAll(s.Agent, "RUN", s.Run))
	fmt.Fprintf(&b, "operator: %s\n", strings.ReplaceAll(s.Operator, "RUN", s.Run))
	_, err := io.WriteString(w, b.String())
	return err
}

func jobNamed(s workflow.Status, name string) (workflow.JobStatus, bool) {
	for _, j := range s.Jobs {
		if j.Name == name {
			return j, true
		}
	}
	return workflow.JobStatus{}, false
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

func params(p workflow.Params) string {
	if len(p) == 0 {
		return "(no parameters)"
	}
	data, err := json.Marshal(p)
	if err != nil {
		return ""
	}
	return string(data)
}
