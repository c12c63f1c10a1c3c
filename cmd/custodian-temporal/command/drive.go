package command

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/custodian-run/custodian/cmd/custodian-temporal/relay"
	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/cmd/custodian/shell"
	wf "github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// defaultWorkerQueue is the workers' task queue when --task-queue does not
// name one.
const defaultWorkerQueue = "custodian-workers"

func driveCommand(reg *wf.Registry) *cli.Command {
	return &cli.Command{
		Name:  "drive",
		Usage: "drive the run as a Temporal workflow: its steps on this host, its workers on any host of a task queue",
		ArgsUsage: "RUN --address HOST:PORT [--namespace NS] --worker claude|codex|exec [--command CMD] [--task-queue Q]\n" +
			"       [--max-parallel N] [--timeout D] [--idle-timeout D] [--grace D] [--max-wait D] [--renew-at BYTES] [--json] [--tls ...]",
		Description: "Drive starts the run's workflow, or attaches to it when it runs, and serves the run's own task queue\n" +
			"while it lives: the workflow's steps and records, here where the run directory is. Workers run on the\n" +
			"hosts that serve --task-queue with custodian-temporal worker. Killed, drive leaves the workflow waiting;\n" +
			"drive the run again to take it up. Exit status: 0 done, 10 blocked, 11 uncertain, 12 interrupted; 1 to 5\n" +
			"as for step. docs/temporal.md describes the queues, the leases and what happens when a process dies.",
		Flags: append(connectFlags(),
			&cli.StringFlag{Name: "worker", Usage: "the worker profile: " + strings.Join(drive.Workers, ", ")},
			&cli.StringFlag{Name: "command", Usage: "exec's command line, `'PROGRAM ARGS...'`, as custodian drive takes it"},
			&cli.StringFlag{Name: "task-queue", Value: defaultWorkerQueue, Usage: "the workers' task queue, `Q`"},
			&cli.IntFlag{Name: "max-parallel", Usage: "at most `N` workers at once over every host (default: every hand-out)"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Hour, Usage: "end a worker that runs longer than `D`; also its activity's start-to-close timeout"},
			&cli.DurationFlag{Name: "idle-timeout", Value: 20 * time.Minute, Usage: "end a worker that writes nothing for `D`; also its activity's heartbeat timeout"},
			&cli.DurationFlag{Name: "grace", Value: 10 * time.Second, Usage: "between SIGTERM and SIGKILL when a worker is ended, `D`"},
			&cli.DurationFlag{Name: "max-wait", Value: 6 * time.Hour, Usage: "the longest wait for a usage limit to lift, `D`"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per event, the last step's outcome last"},
			&cli.IntFlag{Name: "renew-at", Value: relay.DefaultRenewAt, Usage: "go on as a new workflow execution once the history holds `BYTES`"},
		),
		Action: shell.WithRun(reg, func(c *cli.Context, _ []string) (func(*engine.Run) error, error) {
			if !c.IsSet("worker") {
				return nil, shell.Usagef(c, "--worker is required: one of %s", strings.Join(drive.Workers, ", "))
			}
			profile, err := drive.NewProfile(c.String("worker"), c.String("command"))
			if err != nil {
				return nil, err
			}
			if c.Int("max-parallel") < 0 {
				return nil, shell.Usagef(c, "--max-parallel %d is not a number of workers", c.Int("max-parallel"))
			}
			if c.Duration("timeout") <= 0 {
				return nil, shell.Usagef(c, "--timeout must be more than zero: it bounds how long a lost worker host's worker can write")
			}
			if c.Int("renew-at") < 1 {
				return nil, shell.Usagef(c, "--renew-at %d is not a size in bytes", c.Int("renew-at"))
			}
			for _, name := range []string{"idle-timeout", "grace", "max-wait"} {
				if c.Duration(name) < 0 {
					return nil, shell.Usagef(c, "--%s %s is negative", name, c.Duration(name))
				}
			}
			binary, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("drive: find this binary: %w", err)
			}
			cl, err := dial(c, c.App.ErrWriter)
			if err != nil {
				return nil, err
			}
			return func(o *engine.Run) error {
				defer cl.Close()
				return driveRun(c, cl, o, profile, binary)
			}, nil
		}),
	}
}

// driveRun drives o as its workflow, and ends as custodian drive ends.
func driveRun(c *cli.Context, cl client.Client, o *engine.Run, profile *drive.Profile, binary string) error {
	hold := engine.Workflow{ID: relay.WorkflowID(o.ID()), Namespace: c.String("namespace"), Address: c.String("address")}
	queue := relay.RunQueue(o.ID())
	progress := drive.NewSink(c.App.ErrWriter, false)
	if c.Bool("json") {
		progress = drive.NewSink(c.App.Writer, true)
	}
	host := &relay.Host{Run: o, Workflow: hold, Binary: binary, Sink: progress, Stderr: c.App.ErrWriter}
	w := worker.New(cl, queue, worker.Options{
		// Inside relay.HostHeartbeat, with room for a slow call: a failed
		// heartbeat ends the activity, which is then tried again.
		DefaultHeartbeatThrottleInterval: 5 * time.Second,
		MaxHeartbeatThrottleInterval:     5 * time.Second,
	})
	w.RegisterWorkflowWithOptions(relay.Loop, workflow.RegisterOptions{Name: relay.WorkflowName})
	w.RegisterActivityWithOptions(host, activity.RegisterOptions{})
	if err := w.Start(); err != nil {
		return fmt.Errorf("serve the run's task queue %s: %w", queue, err)
	}
	defer w.Stop()

	ctx := context.Background()
	attached := false
	if d, err := cl.DescribeWorkflowExecution(ctx, hold.ID, ""); err == nil &&
		d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		attached = true
	}
	params := relay.Params{Workflow: hold, Dir: o.Dir(), RunQueue: queue, WorkerQueue: c.String("task-queue"), Profile: profile.Name(),
		Command:     c.String("command"),
		MaxParallel: c.Int("max-parallel"), Timeout: c.Duration("timeout"), Idle: c.Duration("idle-timeout"),
		Grace: c.Duration("grace"), MaxWait: c.Duration("max-wait"), RenewAt: c.Int("renew-at")}
	run, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       hold.ID,
		TaskQueue:                queue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, relay.WorkflowName, params)
	if err != nil {
		return fmt.Errorf("start the run's workflow %s: %w", hold.ID, err)
	}
	how := "started"
	if attached {
		how = "attached to; the settings it was started with apply"
	}
	fmt.Fprintf(c.App.ErrWriter, "custodian-temporal: workflow %s (run %s), %s; workers on task queue %s\n",
		hold.ID, run.GetRunID(), how, params.WorkerQueue)

	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(interrupts)
	result := make(chan error, 1)
	var res relay.Result
	go func() { result <- run.Get(ctx, &res) }()
wait:
	for {
		select {
		case <-interrupts:
			// The workflow ends every worker, records it, and ends; drive
			// waits for that. The cancellation goes to the workflow's
			// current execution: it may have gone on as new.
			progress.Emit(drive.Event{Kind: drive.EventInterrupted, Text: "ending every worker, then stopping"})
			if cerr := cl.CancelWorkflow(ctx, hold.ID, ""); cerr != nil {
				fmt.Fprintf(c.App.ErrWriter, "custodian-temporal: cancel workflow %s: %v\n", hold.ID, cerr)
			}
		case err = <-result:
			break wait
		}
	}
	if cerr := progress.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("drive the run's workflow %s: %w", hold.ID, err)
	}
	if f := res.Fault; f != nil {
		return faultError{f}
	}
	if !res.InEffect {
		// A step that ended inside an effect printed nothing: nor does drive.
		if err := printLast(c, o); err != nil {
			return err
		}
	}
	if res.Status != engine.ExitOK {
		return shell.ExitStatus(res.Status)
	}
	return nil
}

// printLast prints the last step's outcome, as step printed it.
func printLast(c *cli.Context, o *engine.Run) error {
	out, err := o.LastOutcome()
	if err != nil || out == nil {
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
	return out.WriteText(c.App.Writer)
}

// faultError is a fault the workflow ended with, as an error of its exit
// status, with its hint.
type faultError struct{ f *relay.Fault }

func (e faultError) Error() string { return e.f.Message }

// Hint says what the operator does next.
func (e faultError) Hint() string { return e.f.Hint }

// Unwrap returns the error class of the fault's status.
func (e faultError) Unwrap() error { return drive.StatusClass(e.f.Status) }
