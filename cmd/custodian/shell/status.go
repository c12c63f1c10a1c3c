package shell

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
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
// line per job and per effect with what stands in their way, and what each
// party may do now. Paths are absolute, as step prints them.
func printStatus(w io.Writer, s workflow.Status) error {
	var b strings.Builder
	fmt.Fprintf(&b, "run: %s\n", s.Run)
	fmt.Fprintf(&b, "definition: %s (%s)\n", s.Definition, s.Params)
	if s.Last == nil {
		fmt.Fprintln(&b, "last step: none")
	} else {
		fmt.Fprintf(&b, "last step: %d, %s, at %s\n", s.Last.Step, s.Last.Outcome.Kind, s.Last.At)
	}
	settled := map[string]bool{}
	for _, subject := range s.Settled {
		settled[subject] = true
	}
	// What the last outcome says of subjects that are not jobs, unless the
	// operator settled it since.
	var others []workflow.Block
	effectBlocks := map[string]workflow.Block{}
	uncertain := map[string]string{}
	if s.Last != nil {
		for _, blk := range s.Last.Outcome.Blocks {
			_, isJob := jobNamed(s, blk.Subject)
			name, isEffect := strings.CutPrefix(blk.Subject, "effect ")
			switch {
			case isJob || settled[blk.Subject] || blk.Subject == "workflow" && s.Workflow != nil:
			case isEffect && effectNamed(s, name):
				effectBlocks[name] = blk
			default:
				others = append(others, blk)
			}
		}
		for _, e := range s.Last.Outcome.Effects {
			if !settled["effect "+e.Name] {
				uncertain[e.Name] = e.Detail
			}
		}
	}
	// An uncertain effect has a journal; one without is shown all the same.
	var unlisted []string
	for name := range uncertain {
		if !effectNamed(s, name) {
			unlisted = append(unlisted, name)
		}
	}

	if len(s.Jobs) > 0 {
		fmt.Fprintln(&b, "jobs:")
	}
	for _, j := range s.Jobs {
		fmt.Fprintf(&b, "- %s: %s, %s\n", j.Name, j.State, attempts(j.Attempts))
		if len(j.Changed) > 0 {
			fmt.Fprintf(&b, "  changed since accepted: %s\n", strings.Join(j.Changed, ", "))
		}
		f := j.LastFailure
		if f != nil && j.State != workflow.JobAccepted && (j.Block == nil || f.Reason != j.Block.Reason || f.Kind != string(j.Block.Kind)) {
			fmt.Fprintf(&b, "  last failure: %s (%s)\n", f.Reason, f.Kind)
		}
		if blk := j.Block; blk != nil {
			printStatusBlock(&b, "  block: ", *blk)
		}
	}
	if blk := s.Workflow; blk != nil {
		printStatusBlock(&b, "workflow: stopped: ", *blk)
	}
	for _, blk := range others {
		printStatusBlock(&b, blk.Subject+": blocked: ", blk)
	}
	sort.Strings(unlisted)
	for _, name := range unlisted {
		fmt.Fprintf(&b, "effect %s: uncertain: %s\n", name, uncertain[name])
	}
	if len(s.Effects) > 0 {
		fmt.Fprintln(&b, "effects:")
	}
	for _, e := range s.Effects {
		fmt.Fprintf(&b, "- %s: %s, %s, by %s at %s\n", e.Name, e.Status, runs(e.Runs), e.By, e.At)
		if len(e.Changed) > 0 {
			fmt.Fprintf(&b, "  inputs changed since: %s\n", strings.Join(e.Changed, ", "))
		}
		if e.Interrupted {
			fmt.Fprintln(&b, "  interrupted: its start is journaled and its end is not; a step is inside it, or a process ended inside it")
		}
		if detail, ok := uncertain[e.Name]; ok {
			fmt.Fprintf(&b, "  uncertain: %s\n", detail)
		}
		if blk, ok := effectBlocks[e.Name]; ok {
			printStatusBlock(&b, "  block: ", blk)
		}
	}
	if len(s.Settled) > 0 && s.Last != nil {
		fmt.Fprintf(&b, "since step %d: the operator %s\n", s.Last.Step, workflow.SettledText(s.Settled))
	}
	fmt.Fprintf(&b, "agent orchestrator: %s\n", s.Agent)
	fmt.Fprintf(&b, "operator: %s\n", s.Operator)
	_, err := io.WriteString(w, b.String())
	return err
}

// printStatusBlock writes a block as two lines: why and what it permits, then
// where its record is.
func printStatusBlock(b *strings.Builder, prefix string, blk workflow.Block) {
	permits := "permits a repair"
	if blk.Permitted == workflow.PermitStop {
		permits = "permits only stopping"
	}
	indent := "  "
	if strings.HasPrefix(prefix, "  ") {
		indent = "    "
	}
	fmt.Fprintf(b, "%s%s (%s); %s\n", prefix, blk.Reason, blk.Kind, permits)
	fmt.Fprintf(b, "%srecord: %s\n", indent, blk.Record)
}

func jobNamed(s workflow.Status, name string) (workflow.JobStatus, bool) {
	for _, j := range s.Jobs {
		if j.Name == name {
			return j, true
		}
	}
	return workflow.JobStatus{}, false
}

func effectNamed(s workflow.Status, name string) bool {
	for _, e := range s.Effects {
		if e.Name == name {
			return true
		}
	}
	return false
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

func runs(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}
