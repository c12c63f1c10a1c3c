package shell

import (
	"fmt"
	"os"
	"strings"

	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow"
	"github.com/urfave/cli/v2"
)

func trialCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "trial",
		Usage:     "try the agent orchestrator's loop on the trial definition",
		ArgsUsage: "COMMAND",
		Subcommands: []*cli.Command{
			trialSetupCommand(reg),
			trialDemoCommand(reg),
			trialWorkerCommand(reg),
		},
		Action: unknownCommand,
	}
}

func trialSetupCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "setup",
		Usage:     "create and start a run of the trial definition; prints run: DIR first",
		ArgsUsage: "SCENARIO [--run DIR] [--launch KEY=VALUE]... [--hold SECONDS]",
		Description: "SCENARIO is one of: " + strings.Join(trial.Scenarios, ", ") + ".\n" +
			"Without --run, the run gets a random name under runs/ that tells nothing of its scenario.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "run", Usage: "the run `DIR`, new or empty", TakesFile: true},
			&cli.StringSliceFlag{Name: "launch", Usage: "a launch parameter of the claims job, `KEY=VALUE` (scenario parameters)", KeepSpace: true},
			&cli.IntFlag{Name: "hold", Usage: "how long the background step holds the lock, in `SECONDS` (scenario busy)", DefaultText: fmt.Sprint(trial.DefaultHold)},
		},
		Action: withArgs([]string{"SCENARIO"}, func(c *cli.Context, args []string) error {
			launch, err := pairs(c, "launch")
			if err != nil {
				return err
			}
			if c.IsSet("hold") && c.Int("hold") < 1 {
				return usagef(c, "--hold %d is not a positive number of seconds", c.Int("hold"))
			}
			binary, err := os.Executable()
			if err != nil {
				return fmt.Errorf("trial setup: find this binary: %w", err)
			}
			dir, err := trial.Setup(reg, trial.SetupOptions{
				Scenario: args[0],
				Dir:      c.String("run"),
				Launch:   launch,
				Hold:     c.Int("hold"),
				Binary:   binary,
			})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.App.Writer, "run: %s\n", dir)
			return err
		}),
	}
}
