package relay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/workflow/engine"
)

// Keep is how many bytes of each of a worker's output streams go back to
// the run's host: the evidence travels in the activity's result, and again
// in the record's input, in a workflow history that Temporal bounds (50 MB
// by default): at 64 KiB a stream, some 150 launches of full output fit.
const Keep = 64 << 10

// leaseSend bounds the wait for the workflow to take a worker's lease; a
// worker whose lease was not taken is ended, so that nothing writes that
// the run's host does not know of.
const leaseSend = 30 * time.Second

// Launcher is the activity of a worker host: it launches a worker for a
// hand-out with drive's launcher (its profile, scrubbed environment,
// process group, watchdogs, evidence and usage-limit reading), gives the
// workflow the worker's lease, heartbeats while the worker runs, and ends
// its group when the activity is cancelled. Its workers die with it.
type Launcher struct {
	Client  client.Client
	Profile *drive.Profile
	Host    string   // this host's name, as its leases give it
	Keeper  []string // the command line of a keeper (drive.KeepGroup)
	Sink    drive.Sink
}

// Launch launches one worker for in.Job and returns its evidence. A launch
// that could not be made is evidence too (failed-to-start). When the
// activity is cancelled the worker's group is ended, and the evidence
// comes back with the cancellation.
func (l *Launcher) Launch(ctx context.Context, in LaunchInput) (LaunchResult, error) {
	h, n := in.Job.Handout, in.Job.Launch
	started := time.Now()
	failed := func(cmd *drive.Command, cause error) (LaunchResult, error) {
		rec := &engine.Launch{Job: h.Name, Attempt: h.Attempt, Launch: n, Worker: l.Profile.Name(), Host: l.Host,
			StartedAt: started.UTC().Format(time.RFC3339Nano), EndedAt: time.Now().UTC().Format(time.RFC3339Nano),
			Outcome: string(drive.FailedToStart), ExitStatus: -1, Message: cause.Error()}
		if cmd != nil {
			rec.Command, rec.Env = cmd.Args, cmd.EnvNames()
		}
		l.Sink.Emit(drive.Event{Kind: drive.EventLaunchFailed, Job: h.Name, Text: cause.Error()})
		return LaunchResult{Launch: rec}, nil
	}
	if in.Profile != l.Profile.Name() {
		return failed(nil, fmt.Errorf("worker host %s serves profile %s, and the drive launches %s: start its worker with --worker %s",
			l.Host, l.Profile.Name(), in.Profile, in.Profile))
	}
	if fi, err := os.Stat(in.Dir); err != nil || !fi.IsDir() {
		return failed(nil, fmt.Errorf("the run directory %s is not mounted on worker host %s: every worker host mounts it at the same path", in.Dir, l.Host))
	}
	cmd, err := l.Profile.Command(h, in.Dir)
	if err != nil {
		return failed(nil, err)
	}
	w, err := drive.Start(cmd, drive.Options{Timeout: in.Timeout, Idle: in.Idle, Grace: in.Grace, Keep: Keep, Keeper: l.Keeper,
		OnLine: func(text string) { l.Sink.Emit(drive.Event{Kind: drive.EventOutput, Job: h.Name, Text: text}) }})
	var startErr *drive.StartError
	switch {
	case errors.As(err, &startErr):
		return failed(cmd, err)
	case err != nil:
		return LaunchResult{}, err
	}
	lease := engine.Lease{Job: h.Name, Attempt: h.Attempt, Launch: n, Host: l.Host,
		Process: engine.Process{Pid: w.Pid(), Start: w.ProcessStart()},
		Expires: w.Started().Add(LeaseBound(in.Timeout, in.Grace)).UTC().Format(time.RFC3339Nano)}
	info := activity.GetInfo(ctx)
	send, cancel := context.WithTimeout(ctx, leaseSend)
	err = l.Client.SignalWorkflow(send, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, LeasedSignal, lease)
	cancel()
	if err != nil {
		// Nothing may write that the run's host does not hold.
		w.Kill()
		w.Kill()
		w.Wait()
		return LaunchResult{}, fmt.Errorf("give the lease of worker %s (pid %d) to the workflow: %w; the worker was ended", h.Name, w.Pid(), err)
	}
	l.Sink.Emit(drive.Event{Kind: drive.EventLaunched, Job: h.Name, Attempt: h.Attempt, Pid: w.Pid()})
	ended := make(chan struct{})
	go func() {
		w.Wait()
		close(ended)
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	// The lease ends by the wall clock, the watchdog by the monotonic one,
	// which stands still while the host sleeps: a worker past its lease,
	// however it got there, is ended at once.
	expires := w.Started().Add(LeaseBound(in.Timeout, in.Grace) - leaseMargin/2).Round(0)
	// Cancelled, timed out, or this worker process stopping: the worker's
	// group ends, with its grace. Each channel is heard once: a closed one
	// would be heard for ever.
	cancelled := false
	stopping, done := activity.GetWorkerStopChannel(ctx), ctx.Done()
	end := func() {
		stopping, done = nil, nil
		if !cancelled {
			cancelled = true
			w.Kill()
		}
	}
	for over := false; !over; {
		select {
		case <-ended:
			over = true
		case <-tick.C:
			activity.RecordHeartbeat(ctx, lease)
			if time.Now().Round(0).After(expires) {
				w.Kill()
				w.Kill()
			}
		case <-stopping:
			end()
		case <-done:
			end()
		}
	}
	r := w.Wait()
	rec := drive.Evidence(h, n, l.Profile.Name(), cmd, w, r, l.Host, cancelled)
	l.Sink.Emit(drive.Event{Kind: drive.EventEnded, Job: h.Name, Outcome: rec.Outcome, Status: r.Status(), Duration: r.Ended.Sub(r.Started)})
	res := LaunchResult{Launch: rec, Stdout: r.Stdout.Data, Stderr: r.Stderr.Data}
	if ctx.Err() != nil {
		// Cancelled: the evidence comes back with the cancellation. A
		// worker process that stops completes its activities instead.
		return res, temporal.NewCanceledError(res)
	}
	return res, nil
}
