package command

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/custodian-run/custodian/cmd/custodian-temporal/relay"
	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/cmd/custodian/shell"
)

// heartbeatEvery bounds how often a worker host heartbeats for a launch.
const heartbeatEvery = 10 * time.Second

func workerCommand() *cli.Command {
	return &cli.Command{
		Name:      "worker",
		Usage:     "launch the workers of every run driven on Temporal whose task queue this host serves",
		ArgsUsage: "--address HOST:PORT [--namespace NS] [--task-queue Q] --worker claude|codex|exec [--command CMD] [--max-parallel N] [--tls ...]",
		Description: "Worker serves the workers' task queue: each launch is a worker process started as custodian drive starts\n" +
			"it, in the run directory, which this host mounts at the same path as the run's host. Its workers die with it.\n" +
			"Ctrl-C stops it: the workers it runs are ended, and their jobs handed out again. docs/temporal.md says more.",
		Flags: append(connectFlags(),
			&cli.StringFlag{Name: "task-queue", Value: defaultWorkerQueue, Usage: "the workers' task queue, `Q`"},
			&cli.StringFlag{Name: "worker", Usage: "the worker profile: " + strings.Join(drive.Workers, ", ")},
			&cli.StringFlag{Name: "command", Usage: "exec's command line, `'PROGRAM ARGS...'`, as custodian drive takes it"},
			&cli.IntFlag{Name: "max-parallel", Value: 8, Usage: "at most `N` workers at once on this host"},
		),
		Action: func(c *cli.Context) error {
			if runtime.GOOS != "linux" {
				return fmt.Errorf("worker: a worker host runs Linux: its workers die with it by Linux's parent-death signal, which %s lacks", runtime.GOOS)
			}
			if c.NArg() > 0 {
				return shell.Usagef(c, "worker takes no run: it serves every run whose drive names its task queue")
			}
			if !c.IsSet("worker") {
				return shell.Usagef(c, "--worker is required: one of %s", strings.Join(drive.Workers, ", "))
			}
			profile, err := drive.NewProfile(c.String("worker"), c.String("command"))
			if err != nil {
				return err
			}
			if c.Int("max-parallel") < 1 {
				return shell.Usagef(c, "--max-parallel %d is not a number of workers", c.Int("max-parallel"))
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("worker: find this binary: %w", err)
			}
			host, err := os.Hostname()
			if err != nil {
				return fmt.Errorf("worker: name this host: %w", err)
			}
			cl, err := dial(c, c.App.ErrWriter)
			if err != nil {
				return err
			}
			defer cl.Close()
			progress := drive.NewSink(c.App.ErrWriter, false)
			defer progress.Close()
			launcher := &relay.Launcher{Client: cl, Profile: profile, Host: host, Keeper: []string{self, "keep-group"}, Sink: progress}
			w := worker.New(cl, c.String("task-queue"), worker.Options{
				MaxConcurrentActivityExecutionSize: c.Int("max-parallel"),
				// A heartbeat at most every 10 s (sooner under a short
				// heartbeat timeout): the SDK gives each call as long as the
				// interval, and ends the activity when a call fails, so a
				// one-second interval would end every worker at a blip of
				// the network. A cancellation comes with the next heartbeat.
				DefaultHeartbeatThrottleInterval: heartbeatEvery,
				MaxHeartbeatThrottleInterval:     heartbeatEvery,
				// A stopping worker process ends its workers, each with its
				// grace, and sends their evidence back before it exits.
				WorkerStopTimeout: time.Minute,
			})
			w.RegisterActivityWithOptions(launcher.Launch, activity.RegisterOptions{Name: "Launch"})
			stop := make(chan any)
			interrupts := make(chan os.Signal, 1)
			signal.Notify(interrupts, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			defer signal.Stop(interrupts)
			go func() {
				<-interrupts
				close(stop)
			}()
			fmt.Fprintf(c.App.ErrWriter, "custodian-temporal: worker on host %s serves task queue %s (%s, at most %d at once)\n",
				host, c.String("task-queue"), profile.Name(), c.Int("max-parallel"))
			if err := w.Run(stop); err != nil {
				return fmt.Errorf("serve task queue %s: %w", c.String("task-queue"), err)
			}
			return nil
		},
	}
}
