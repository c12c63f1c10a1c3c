package relay

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/workflow/engine"
)

// defaultHeartbeat is the heartbeat timeout of a launch when the drive
// sets no idle timeout: a worker host that dies is still noticed.
const defaultHeartbeat = time.Minute

// Loop is the workflow of one run: custodian drive's loop, without its
// round barrier, with each step an activity of the run's host and each
// worker an activity of a worker host. It holds the run from its first
// activity to its last; it launches at most Params.MaxParallel workers at
// once; a worker's end is followed, after drive.Settle, by a step that
// leaves the workers still running alone. On blocked, uncertain, a step
// ended inside an effect, a fault, or a cancellation (the drive's
// interrupt), it launches nothing more, lets every worker end and records
// it, reports the stop as drive does, frees the run and ends with drive's
// exit status.
//
// Its code is replayed from its history by whichever coordinator carries
// it, so it does what Temporal's workflows must: it reads no clock, file or
// map order of its own.
func Loop(ctx workflow.Context, p Params) (Result, error) {
	l := &loop{p: p, running: map[string]Job{}, leases: map[string]engine.Lease{}, ends: workflow.NewChannel(ctx)}
	return l.run(ctx)
}

// loop is the workflow's state.
type loop struct {
	p       Params
	step    int                     // the run's last step, as the workflow took it
	running map[string]Job          // launched: the job's worker runs, or its end is being recorded
	leases  map[string]engine.Lease // the leases given for the launches in flight, by job
	queue   []Job                   // handed out, waiting for a place
	again   []Job                   // a usage limit's relaunch that a stop held back
	ends    workflow.Channel
	owed    bool            // a step is owed
	settle  workflow.Future // while ends settle before the step they owe
	pause   workflow.Future // while a usage limit is waited out
	stopped *StepResult     // the step that stops launching: blocked, uncertain or in-effect
	fault   *Fault          // what keeps the workflow from going on once its workers end
	done    bool            // a step gave done
	// cancelled: the drive was interrupted; every worker is ended.
	cancelled bool
	// renewing: the history has grown past Params.RenewAt; once the
	// workers in flight end, the workflow goes on as a new execution.
	renewing bool
}

// ended is a launch's end, as its coroutine recorded it.
type ended struct {
	Job   Job
	Again bool
	Until time.Time
	Fault *Fault
}

// host returns ctx for an activity of the run's host: it waits for a
// coordinator to serve the run's queue, and is tried again until it
// answers, so that a coordinator that dies mid-activity is replaced.
func (l *loop) host(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           l.p.RunQueue,
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    HostHeartbeat,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second},
	})
}

// work returns ctx for a launch on a worker host: tried once (a hand-out
// is launched once; a lost one is handed out again by a step), bounded by
// the worker's wall clock, watched by heartbeat, and, when cancelled,
// waited for until the worker host has ended its worker.
func (l *loop) work(ctx workflow.Context) workflow.Context {
	heartbeat := l.p.Idle
	if heartbeat <= 0 {
		heartbeat = defaultHeartbeat
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           l.p.WorkerQueue,
		StartToCloseTimeout: LeaseBound(l.p.Timeout, l.p.Grace),
		HeartbeatTimeout:    heartbeat,
		WaitForCancellation: true,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}

// disconnected returns a context that a cancellation does not reach: for
// the records a cancelled workflow still makes.
func disconnected(ctx workflow.Context) workflow.Context {
	d, _ := workflow.NewDisconnectedContext(ctx)
	return d
}

func (l *loop) run(ctx workflow.Context) (Result, error) {
	var begin BeginResult
	if err := workflow.ExecuteActivity(l.host(ctx), activityBegin, BeginInput{Settings: l.p.settings()}).Get(ctx, &begin); err != nil {
		if temporal.IsCanceledError(err) {
			l.cancelled = true
			return l.finish(ctx)
		}
		return Result{}, err
	}
	if begin.Fault != nil {
		// The hold may have been taken before the fault: it is given back.
		l.fault = begin.Fault
		return l.finish(ctx)
	}
	l.step, l.queue = begin.Steps, begin.Unlaunched
	l.owed = len(l.queue) == 0
	leased := workflow.GetSignalChannel(ctx, LeasedSignal)
	for {
		if l.owed && !l.stopping() && !l.renewing {
			l.owed = false
			l.takeStep(ctx)
		}
		l.launch(ctx)
		if len(l.running) == 0 {
			switch {
			case l.renewing && !l.stopping():
				return l.renew(ctx)
			case l.stopping():
				return l.finish(ctx)
			case l.settle != nil || l.owed:
				// Every worker has ended: nothing is left to settle.
				l.settle, l.owed = nil, true
				continue
			case l.pause == nil:
				l.fault = &Fault{Status: engine.ExitFailed, Message: "the workflow has nothing in flight and the run is not done: a defect in custodian"}
				return l.finish(ctx)
			}
		}
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(l.ends, func(c workflow.ReceiveChannel, _ bool) {
			var e ended
			c.Receive(ctx, &e)
			l.end(ctx, e)
		})
		sel.AddReceive(leased, func(c workflow.ReceiveChannel, _ bool) {
			var lease engine.Lease
			c.Receive(ctx, &lease)
			l.lease(ctx, lease)
		})
		if l.settle != nil {
			sel.AddFuture(l.settle, func(workflow.Future) { l.settle, l.owed = nil, true })
		}
		if l.pause != nil {
			sel.AddFuture(l.pause, func(workflow.Future) { l.pause = nil })
		}
		if !l.cancelled {
			sel.AddReceive(ctx.Done(), func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(ctx, nil)
				l.cancelled = true
			})
		}
		sel.Select(ctx)
		if limit := cmp.Or(l.p.RenewAt, DefaultRenewAt); workflow.GetInfo(ctx).GetCurrentHistorySize() > limit {
			l.renewing = true
		}
	}
}

// renew goes on as a new execution of the workflow, with an empty
// history, once no worker runs. What was queued is recorded not launched
// (a usage limit's relaunch among it), and handed out again, not charged,
// by the new execution's first step.
func (l *loop) renew(ctx workflow.Context) (Result, error) {
	l.dropQueue(ctx)
	return Result{}, workflow.NewContinueAsNewError(ctx, WorkflowName, l.p)
}

// stopping says whether the workflow launches nothing more.
func (l *loop) stopping() bool {
	return l.stopped != nil || l.fault != nil || l.cancelled || l.done
}

// held returns the hand-outs the workflow holds, for a step to leave
// alone: each launched, and each waiting for a place.
func (l *loop) held() map[string]int {
	held := map[string]int{}
	for name, j := range l.running {
		held[name] = j.Handout.Attempt
	}
	for _, j := range append(slices.Clone(l.queue), l.again...) {
		held[j.Handout.Name] = j.Handout.Attempt
	}
	return held
}

// takeStep takes the run's next step and takes in what it decided.
func (l *loop) takeStep(ctx workflow.Context) {
	var r StepResult
	err := workflow.ExecuteActivity(l.host(ctx), activityStep, StepInput{Number: l.step + 1, Held: l.held(), Settings: l.p.settings()}).Get(ctx, &r)
	switch {
	case temporal.IsCanceledError(err):
		// The step may have been taken: the run's records say, and the
		// next workflow begins from them.
		l.cancelled = true
		return
	case err != nil:
		r.Fault = &Fault{Status: engine.ExitFailed, Message: "take a step: " + err.Error()}
	}
	if r.Fault != nil {
		l.fault = r.Fault
		l.dropQueue(ctx)
		return
	}
	l.step++
	switch engine.Kind(r.Kind) {
	case engine.KindDone:
		if len(l.running) > 0 || len(l.queue) > 0 {
			l.fault = &Fault{Status: engine.ExitFailed, Message: "a step gave done while the workflow's workers ran: a defect in custodian"}
			return
		}
		l.done = true
	case engine.KindLaunch:
		l.queue = append(l.queue, r.Fresh...)
	default:
		l.stopped = &r
		l.dropQueue(ctx)
	}
}

// launch starts the queued hand-outs' workers while there is a place for
// them, each carried by a coroutine of its own from launch to record.
func (l *loop) launch(ctx workflow.Context) {
	for len(l.queue) > 0 && l.pause == nil && !l.stopping() && !l.renewing && (l.p.MaxParallel <= 0 || len(l.running) < l.p.MaxParallel) {
		j := l.queue[0]
		l.queue = l.queue[1:]
		l.running[j.Handout.Name] = j
		workflow.Go(ctx, func(ctx workflow.Context) {
			e := l.carry(ctx, j)
			l.ends.Send(disconnected(ctx), e)
		})
	}
}

// carry launches j's worker on a worker host and records its end on the
// run's: its evidence, or, when the worker host sent none back, that it
// was lost, once it can write no more.
func (l *loop) carry(ctx workflow.Context, j Job) ended {
	records := l.host(disconnected(ctx))
	var res LaunchResult
	in := LaunchInput{Job: j, Dir: l.p.Dir, Profile: l.p.Profile, Timeout: l.p.Timeout, Idle: l.p.Idle, Grace: l.p.Grace}
	err := workflow.ExecuteActivity(l.work(ctx), activityLaunch, in).Get(ctx, &res)
	var cancelled *temporal.CanceledError
	if errors.As(err, &cancelled) && cancelled.HasDetails() && cancelled.Details(&res) == nil {
		err = nil // ended at the cancellation, with its evidence
	}
	if err != nil || res.Launch == nil {
		why := "its worker host sent no evidence"
		if err != nil {
			why = err.Error()
		}
		for waited := false; ; waited = true {
			var lost LostResult
			in := LostInput{Job: j, Settings: l.p.settings(), Why: why, Waited: waited}
			if lease, ok := l.leases[j.Handout.Name]; ok && lease.Launch == j.Launch {
				in.Lease = &lease
			}
			if err := workflow.ExecuteActivity(records, activityLost, in).Get(records, &lost); err != nil {
				return ended{Job: j, Fault: &Fault{Status: engine.ExitFailed, Message: "record a lost worker: " + err.Error()}}
			}
			if lost.Fault != nil || lost.Wait <= 0 {
				return ended{Job: j, Fault: lost.Fault}
			}
			_ = workflow.Sleep(records, lost.Wait)
		}
	}
	var rec RecordResult
	if err := workflow.ExecuteActivity(records, activityRecord, RecordInput{Result: res, Settings: l.p.settings()}).Get(records, &rec); err != nil {
		return ended{Job: j, Fault: &Fault{Status: engine.ExitFailed, Message: "record a launch: " + err.Error()}}
	}
	return ended{Job: j, Again: rec.Again, Until: rec.Until, Fault: rec.Fault}
}

// lease has the run's host record the lease a worker host gave, while its
// launch is in flight; one that comes after the launch was recorded is
// not taken there either.
func (l *loop) lease(ctx workflow.Context, lease engine.Lease) {
	if j, ok := l.running[lease.Job]; !ok || j.Launch != lease.Launch {
		return
	}
	l.leases[lease.Job] = lease
	workflow.ExecuteActivity(l.host(disconnected(ctx)), activityLease, lease)
}

// end takes in a launch's end: a usage limit's relaunch is queued again
// and waits for the limit to lift; any other end owes a step, once the
// ends close to it have come too.
func (l *loop) end(ctx workflow.Context, e ended) {
	delete(l.running, e.Job.Handout.Name)
	delete(l.leases, e.Job.Handout.Name)
	next := Job{Handout: e.Job.Handout, Launch: e.Job.Launch + 1}
	switch {
	case e.Fault != nil:
		if l.fault == nil {
			l.fault = e.Fault
		}
		l.dropQueue(ctx)
	case e.Again && l.stopping():
		l.again = append(l.again, next)
	case e.Again:
		l.queue = append([]Job{next}, l.queue...)
		if l.pause == nil {
			l.pause = workflow.NewTimer(ctx, max(e.Until.Sub(workflow.Now(ctx)), time.Second))
		}
	case l.settle == nil && !l.stopping():
		l.settle = workflow.NewTimer(ctx, drive.Settle)
	}
}

// dropQueue records that the hand-outs waiting for a place are not
// launched: the next step hands them out again, not charged.
func (l *loop) dropQueue(ctx workflow.Context) {
	jobs := append(l.queue, l.again...)
	l.queue, l.again = nil, nil
	if len(jobs) == 0 {
		return
	}
	records := l.host(disconnected(ctx))
	if err := workflow.ExecuteActivity(records, activityNotLaunched, jobs).Get(records, nil); err != nil && l.fault == nil {
		l.fault = &Fault{Status: engine.ExitFailed, Message: "record what was not launched: " + err.Error()}
	}
}

// finish ends the workflow once no worker runs: the stop is reported as
// drive reports it, the run is freed, and the status is drive's.
func (l *loop) finish(ctx workflow.Context) (Result, error) {
	records := l.host(disconnected(ctx))
	l.dropQueue(ctx)
	var res Result
	report := func(job, why string) {
		if err := workflow.ExecuteActivity(records, activityReport, ReportInput{Job: job, Why: why}).Get(records, nil); err != nil {
			res.Fault = &Fault{Status: engine.ExitFailed, Message: "report the stop: " + err.Error()}
		}
	}
	switch {
	case l.stopped != nil && l.stopped.Kind == kindInEffect:
		report("", l.stopped.StopWhy)
		res.Status, res.InEffect = drive.ExitUncertain, true
	case l.fault != nil:
		res.Fault = l.fault
	case l.cancelled:
		res.Status = drive.ExitInterrupted
	case l.stopped != nil && engine.Kind(l.stopped.Kind) == engine.KindBlocked:
		report(l.stopped.StopJob, l.stopped.StopWhy)
		res.Status = drive.ExitBlocked
	case l.stopped != nil:
		report(l.stopped.StopJob, l.stopped.StopWhy)
		res.Status = drive.ExitUncertain
	}
	if err := workflow.ExecuteActivity(records, activityEnd).Get(records, nil); err != nil && res.Fault == nil {
		res.Fault = &Fault{Status: engine.ExitFailed, Message: "free the run: " + err.Error()}
	}
	return res, nil
}
