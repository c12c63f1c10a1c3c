package shell

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func logCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "log",
		Usage:     "print the run's history: every step, hand-out, verdict, block, report, resolve and release; read-only",
		ArgsUsage: "RUN [--job NAME] [--since STEP] [--follow]",
		Description: "Log reads the committed history and the reports; it takes no lock and writes nothing.\n" +
			"--job keeps the events about one job, --since the events of step STEP and later (the start is step 0).\n" +
			"--follow prints the history, then each command's events as it commits, until SIGINT or SIGTERM (exit 0).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "job", Usage: "only the events about the job `NAME`: hand-outs, verdicts, kept files, blocks, launches, releases, reports"},
			&cli.IntFlag{Name: "since", Usage: "only the events of step `STEP` and later; 0, the default, keeps the start"},
			&cli.BoolFlag{Name: "follow", Usage: "go on printing events as commands commit them, until interrupted"},
		},
		Action: withRun(reg, nil, func(c *cli.Context, _ []string) (func(*engine.Run) error, error) {
			f, err := logFilter(c)
			if err != nil {
				return nil, err
			}
			if c.Bool("follow") {
				return func(o *engine.Run) error {
					// An interrupt ends the following, not the process: the
					// line being printed is finished, and the status is 0.
					ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
					defer stop()
					return o.Follow(ctx, f, func(events []engine.Event) error { return printLog(c.App.Writer, events) })
				}, nil
			}
			return func(o *engine.Run) error {
				events, err := o.LogOf(f)
				if err != nil {
					return err
				}
				return printLog(c.App.Writer, events)
			}, nil
		}),
	}
}

// logFilter reads --job and --since.
func logFilter(c *cli.Context) (engine.LogFilter, error) {
	job, err := text(c, "job")
	if err != nil {
		return engine.LogFilter{}, err
	}
	if c.IsSet("job") && job == "" {
		return engine.LogFilter{}, usagef(c, "--job names no job")
	}
	if c.Int("since") < 0 {
		return engine.LogFilter{}, usagef(c, "--since %d is not a step", c.Int("since"))
	}
	return engine.LogFilter{Job: job, Since: c.Int("since")}, nil
}

// printLog writes one line per event: its time, the step it belongs to
// ("step 3" for the step itself and for what follows it until the next),
// and what happened. Paths are relative to the run directory.
func printLog(w io.Writer, events []engine.Event) error {
	var b strings.Builder
	for _, e := range events {
		b.WriteString(logLine(e))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// logLine is an event's line, as log prints it: "TIME  step N    text\n".
func logLine(e engine.Event) string {
	step := "start"
	if e.Type != engine.EventStart {
		step = fmt.Sprintf("step %d", e.Step)
	}
	return fmt.Sprintf("%s  %-8s  %s\n", engine.OneLine(e.At), step, engine.OneLine(describe(e)))
}

// describe says what an event records, in words.
func describe(e engine.Event) string {
	switch e.Type {
	case engine.EventStart:
		return fmt.Sprintf("run of %s started (%s)", e.Subject, e.Text)
	case engine.EventStep:
		return "outcome: " + e.Text + uncertainEffects(e) + leftRunning(e)
	case engine.EventHandout:
		return fmt.Sprintf("handed out %s, attempt %d: %s", e.Subject, e.Attempt, e.Path)
	case engine.EventAccept:
		return fmt.Sprintf("accepted %s, attempt %d", e.Subject, e.Attempt)
	case engine.EventRefuse:
		line := fmt.Sprintf("refused %s, attempt %d (%s): %s", e.Subject, e.Attempt, e.Kind, e.Text)
		if len(e.Messages) > 0 {
			line += " (" + strings.Join(e.Messages, "; ") + ")"
		}
		return line
	case engine.EventSpare:
		return fmt.Sprintf("not charged: %s, attempt %d, has no output and no worker attempted it (%s); it is handed out again", e.Subject, e.Attempt, e.Text)
	case engine.EventReopen:
		return fmt.Sprintf("reopened %s: %s", e.Subject, e.Text)
	case engine.EventKeep:
		return fmt.Sprintf("kept %s of %s as %s", e.Text, e.Subject, e.Path)
	case engine.EventBlock:
		return fmt.Sprintf("blocked %s (%s): %s; record %s", e.Subject, e.Kind, e.Text, e.Path)
	case engine.EventEffect:
		return fmt.Sprintf("effect %s %s, run %d, by %s", e.Subject, e.Text, e.Attempt, e.Kind)
	case engine.EventLaunch:
		line := fmt.Sprintf("launched %s, attempt %d: %s", e.Subject, e.Attempt, e.Text)
		if e.Path != "" { // a hand-out drive never launched has no evidence
			line += "; evidence " + e.Path
		}
		return line
	case engine.EventRelease:
		if e.Text != "" {
			return "released " + e.Subject + ": " + e.Text
		}
		return "released " + e.Subject
	case engine.EventAbandon:
		return "abandoned the run: " + e.Text
	case engine.EventCarry:
		return fmt.Sprintf("carried %s over from its former name %s", e.Subject, e.Text)
	case engine.EventResolve:
		return fmt.Sprintf("resolved effect %s as %s", e.Subject, e.Text)
	case engine.EventDecide:
		return fmt.Sprintf("the operator decided %s: %s", e.Subject, e.Text)
	case engine.EventReport:
		line := fmt.Sprintf("report %d, %s", e.Attempt, e.Kind)
		if e.Subject != "" {
			line += " on " + e.Subject
		}
		if e.Text != "" {
			line += ": " + e.Text
		}
		return line
	default:
		return strings.TrimSpace(strings.Join([]string{string(e.Type), e.Subject, e.Text}, " "))
	}
}

// leftRunning names, for a drive's step, the hand-outs it left to the
// workers that still ran.
func leftRunning(e engine.Event) string {
	var out engine.Outcome
	if e.Text != string(engine.KindLaunch) || json.Unmarshal(e.Outcome, &out) != nil || len(out.Running) == 0 {
		return ""
	}
	return " (left running: " + listedNames(out.Running) + ")"
}

// uncertainEffects names, for an uncertain step, the effects whose fate is
// open and why: no other event of the step says so.
func uncertainEffects(e engine.Event) string {
	var out engine.Outcome
	if e.Text != string(engine.KindUncertain) || json.Unmarshal(e.Outcome, &out) != nil {
		return ""
	}
	parts := make([]string, len(out.Effects))
	for i, eff := range out.Effects {
		parts[i] = "effect " + eff.Name + ": " + eff.Detail
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}
