package shell

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func trialDemoCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "demo",
		Usage:     "set up a trial run and drive it to its end with custodian drive and scripted workers",
		ArgsUsage: "[--scenario SCENARIO] [--run DIR] [--max-parallel N]",
		Description: "The demo runs custodian drive with the exec profile: every step in a process of its own,\n" +
			"every worker a process of its own (this binary's hidden command trial worker, which writes what the\n" +
			"scenario's script says), every launch's evidence kept. Where drive stops at a block that the\n" +
			"script can repair, the demo repairs it as a harness would, reports the repair, and drives again.\n" +
			"SCENARIO is one of: " + strings.Join(trial.Scenarios, ", ") + "; the default is clean.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scenario", Usage: "the course to show, `SCENARIO`", DefaultText: "clean"},
			&cli.StringFlag{Name: "run", Usage: "the run `DIR`, new or empty", TakesFile: true},
			&cli.IntFlag{Name: "max-parallel", Usage: "at most `N` workers at once (default: every job of the round)"},
		},
		Action: withArgs(nil, func(c *cli.Context, _ []string) error {
			binary, err := os.Executable()
			if err != nil {
				return fmt.Errorf("trial demo: find this binary: %w", err)
			}
			scenario := cmp.Or(c.String("scenario"), "clean")
			setup := trial.SetupOptions{Scenario: scenario, Dir: c.String("run"), Binary: binary}
			if scenario == "parameters" {
				setup.Launch = map[string]string{"model": "small"}
			}
			dir, err := trial.Setup(reg, setup)
			if err != nil {
				return err
			}
			interrupts := make(chan os.Signal, 2)
			signal.Notify(interrupts, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			defer signal.Stop(interrupts)
			return demo(c.App.Writer, reg, binary, dir, scenario, c.Int("max-parallel"), interrupts)
		}),
	}
}

// demo drives the trial run in dir with the scripted worker, printing what
// drive shows, and repairs what the scenario's script can repair between
// drives, as a harness would.
func demo(w io.Writer, reg *workflow.Registry, binary, dir, scenario string, parallel int, interrupts <-chan os.Signal) error {
	fmt.Fprintf(w, "run: %s\nscenario: %s\n", dir, scenario)
	// The model, when a job names one, is given as a harness would; a job
	// without one is launched without the argument.
	command := quoteWord(binary) + " trial worker {prompt} --model={param:model?}"
	fmt.Fprintf(w, "drive: custodian drive %s --worker exec --command %s\n", quoteWord(dir), quoteWord(command))
	profile, err := drive.NewProfile(drive.WorkerExec, command)
	if err != nil {
		return err
	}
	repairs := trial.ScenarioScript(scenario).Repairs
	for range trial.DefaultMaxRounds {
		o, err := engine.Open(reg, dir)
		if err != nil {
			return err
		}
		var last strings.Builder
		status, err := drive.Drive(o, drive.Config{
			Binary: binary, Profile: profile, MaxParallel: parallel,
			Timeout: 10 * time.Minute, Idle: 5 * time.Minute, Grace: 5 * time.Second, MaxWait: time.Minute,
			Stdout: &last, Stderr: w, Progress: drive.NewPlain(w), Interrupts: interrupts,
		})
		if err != nil {
			o.Close()
			return err
		}
		if last.Len() == 0 {
			fmt.Fprintf(w, "drive ended with exit status %d; no step printed an outcome\n", status)
		} else {
			fmt.Fprintf(w, "drive ended with exit status %d; the last step printed:\n%s", status, last.String())
		}
		if status != drive.ExitBlocked {
			o.Close()
			fmt.Fprintf(w, "final: %s\n", finalWord(status))
			return nil
		}
		repaired, err := repairAll(w, o, repairs)
		o.Close()
		if err != nil {
			return err
		}
		if !repaired {
			fmt.Fprintln(w, "final: blocked: the script repairs none of it, so the run waits for the operator")
			return nil
		}
	}
	return fmt.Errorf("trial demo: %w", trial.ErrMaxRounds)
}

// repairAll repairs every block of the last step the way the scripted
// harness can, and reports each repair. It repairs nothing, and says so,
// when a block permits only stopping or has no scripted repair.
func repairAll(w io.Writer, o *engine.Run, repairs map[string]trial.Repair) (bool, error) {
	s, err := o.Status()
	if err != nil {
		return false, err
	}
	if s.Last == nil || len(s.Last.Outcome.Blocks) == 0 {
		return false, errors.New("trial demo: drive stopped at a block that status does not show: a defect in custodian")
	}
	blocks := s.Last.Outcome.Blocks
	for _, b := range blocks {
		job, _ := b.Subject.Job()
		if b.Permitted != engine.PermitRepair || repairs[job] == nil {
			return false, nil
		}
	}
	for _, b := range blocks {
		job, _ := b.Subject.Job()
		changed, err := repairs[job](o.Dir(), b)
		if err != nil {
			return false, err
		}
		fmt.Fprintf(w, "repair %s: %s\n", job, changed)
		if _, err := o.Report(engine.ReportRepair, job, changed); err != nil {
			return false, err
		}
	}
	return true, nil
}

// finalWord names how a drive ended.
func finalWord(status int) string {
	switch status {
	case drive.ExitDone:
		return "done"
	case drive.ExitUncertain:
		return "uncertain: the operator establishes what took place"
	case drive.ExitInterrupted:
		return "interrupted: drive the run again to go on"
	}
	return fmt.Sprintf("exit status %d", status)
}

// quoteWord quotes s as one word for drive's --command, which splits words
// as a shell would.
func quoteWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`{}*?[]#~;&|<>()") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func trialWorkerCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "worker",
		Hidden:    true,
		Usage:     "the scripted worker of a trial run: do what the scenario says for the prompt file's job",
		ArgsUsage: "PROMPT [--model MODEL]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Usage: "the model the job's launch parameters name, as a real worker would take it"},
		},
		Action: withArgs([]string{"PROMPT"}, func(c *cli.Context, args []string) error {
			at, err := trial.LocatePrompt(args[0])
			if err != nil {
				return &engine.UsageError{Message: err.Error(), Hint: "custodian drive gives the worker its prompt file with {prompt}"}
			}
			o, err := engine.Open(reg, at.Run)
			if err != nil {
				return err
			}
			defer o.Close()
			did, err := trial.Work(at, args[0], o.Params()["scenario"])
			if err != nil {
				return fmt.Errorf("worker %s: %w", at.Job, err)
			}
			if m := c.String("model"); m != "" {
				did += " (as model " + m + ")"
			}
			_, err = fmt.Fprintf(c.App.Writer, "worker %s, attempt %d: %s\n", at.Job, at.Attempt, did)
			return err
		}),
	}
}
