package shell

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func driveCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:  "drive",
		Usage: "carry the agent orchestrator's loop in code, launching a worker process per job",
		ArgsUsage: "RUN --worker claude|codex|exec [--command CMD] [--max-parallel N] [--timeout D] [--idle-timeout D]\n" +
			"       [--grace D] [--max-wait D] [--reclaim] [--json]",
		Description: "Drive steps the run, launches one worker per hand-out with the instruction\n" +
			"\"Read `PROMPT FILE` and follow it.\", waits for the round, and steps again, until the run is done,\n" +
			"blocked or uncertain; it reports the stop, never repairs, and prints the last step's output.\n" +
			"Exit status: 0 done, 10 blocked, 11 uncertain, 12 interrupted; 1 to 5 as for step.\n" +
			"docs/drive.md describes the profiles, the evidence, the leases and the statuses.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "worker", Usage: "the worker profile: " + strings.Join(drive.Workers, ", ")},
			&cli.StringFlag{Name: "command", Usage: "exec's command line, `'PROGRAM ARGS...'`, with {instruction}, {prompt}, {job}, {param:KEY}"},
			&cli.IntFlag{Name: "max-parallel", Usage: "at most `N` workers at once (default: every job of the round)"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Hour, Usage: "end a worker that runs longer than `D`"},
			&cli.DurationFlag{Name: "idle-timeout", Value: 20 * time.Minute, Usage: "end a worker that writes nothing for `D`"},
			&cli.DurationFlag{Name: "grace", Value: 10 * time.Second, Usage: "between SIGTERM and SIGKILL when a worker is ended, `D`"},
			&cli.DurationFlag{Name: "max-wait", Value: 6 * time.Hour, Usage: "the longest wait for a usage limit to lift, `D`"},
			&cli.BoolFlag{Name: "reclaim", Usage: "end the workers an earlier drive left running, record them as killed, and go on"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per event, the last step's outcome last"},
		},
		Action: withRun(reg, nil, func(c *cli.Context, _ []string) (func(*engine.Run) error, error) {
			if !c.IsSet("worker") {
				return nil, usagef(c, "--worker is required: one of %s", strings.Join(drive.Workers, ", "))
			}
			command, err := text(c, "command")
			if err != nil {
				return nil, err
			}
			profile, err := drive.NewProfile(c.String("worker"), command)
			if err != nil {
				return nil, err
			}
			if c.Int("max-parallel") < 0 {
				return nil, usagef(c, "--max-parallel %d is not a number of workers", c.Int("max-parallel"))
			}
			for _, name := range []string{"timeout", "idle-timeout", "grace", "max-wait"} {
				if c.Duration(name) < 0 {
					return nil, usagef(c, "--%s %s is negative", name, c.Duration(name))
				}
			}
			binary, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("drive: find this binary: %w", err)
			}
			return func(o *engine.Run) error {
				interrupts := make(chan os.Signal, 2)
				signal.Notify(interrupts, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
				defer signal.Stop(interrupts)
				progress := drive.NewSink(c.App.ErrWriter, false)
				if c.Bool("json") {
					progress = drive.NewSink(c.App.Writer, true)
				}
				status, err := drive.Drive(o, drive.Config{
					Binary:      binary,
					Profile:     profile,
					MaxParallel: c.Int("max-parallel"),
					Timeout:     c.Duration("timeout"),
					Idle:        c.Duration("idle-timeout"),
					Grace:       c.Duration("grace"),
					MaxWait:     c.Duration("max-wait"),
					Reclaim:     c.Bool("reclaim"),
					JSON:        c.Bool("json"),
					Stdout:      c.App.Writer,
					Stderr:      c.App.ErrWriter,
					Progress:    progress,
					Interrupts:  interrupts,
				})
				if err != nil {
					return err
				}
				if status != engine.ExitOK {
					return ExitStatus(status)
				}
				return nil
			}, nil
		}),
	}
}

// ExitStatus ends a command with a status of its own, having said all it
// had to: drive's 10, 11 and 12.
type ExitStatus int

func (s ExitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }
