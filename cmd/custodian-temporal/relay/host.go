package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/internal/proc"
	"github.com/custodian-run/custodian/workflow/engine"
)

// beatEvery is how often an activity of the run's host heartbeats: far
// inside HostHeartbeat, so that a coordinator that dies mid-activity is
// noticed in seconds and its activity given to the next one.
const beatEvery = 2 * time.Second

// HostHeartbeat is the heartbeat timeout of the run host's activities.
const HostHeartbeat = 15 * time.Second

// Host is the activities of the run's host: everything that reads or
// writes the run's records, in the process of custodian-temporal drive
// that holds the run directory. They are idempotent by the run's records,
// so that an activity retried after its process died changes nothing
// twice.
type Host struct {
	Run      *engine.Run
	Workflow engine.Workflow
	// Binary is custodian-temporal, which takes each step in a process of
	// its own: a step that ends inside an effect ends that process.
	Binary string
	Sink   drive.Sink
	Stderr io.Writer // gets what a step printed when it ended inside an effect

	// mu keeps one activity at a time at the run's records: the run's lock
	// is a lock between processes, not between the goroutines of one.
	mu sync.Mutex
	// told are the launches whose start has been shown, job/launch: a
	// launch's end can come before its lease.
	told map[string]bool
}

// tell shows that the launch of l started, once.
func (h *Host) tell(job string, attempt, launch, pid int, host string) {
	key := fmt.Sprintf("%s/%d", job, launch)
	if h.told[key] {
		return
	}
	if h.told == nil {
		h.told = map[string]bool{}
	}
	h.told[key] = true
	h.Sink.Emit(drive.Event{Kind: drive.EventLaunched, Job: job, Attempt: attempt, Pid: pid, Text: "on host " + host})
}

// held returns the run as the workflow holds it.
func (h *Host) held() *engine.Driver { return h.Run.WorkflowDriver(h.Workflow) }

// beat heartbeats for ctx's activity until the returned func is called.
func beat(ctx context.Context) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(beatEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// faultOf is the fault an error of the run's records is: the exit status
// it maps to, and its hint.
func faultOf(err error) *Fault {
	return &Fault{Status: engine.ExitCode(err), Message: err.Error(), Hint: engine.Hint(err)}
}

// passing says whether err passes, and the activity is to be tried again:
// a worker of an earlier workflow, on another host, may still write, until
// its lease expires; or another command holds the run's lock a moment (a
// step an earlier coordinator started, which outlived it). Anything else
// is a fault the drive reports.
func passing(err error) bool {
	var workers *engine.WorkersAliveError
	return errors.As(err, &workers) || lockBusy(err)
}

// lockBusy says whether err is the run's lock held by another command, not
// the run held by another loop.
func lockBusy(err error) bool {
	var holds *engine.WorkflowHoldsError
	var driver *engine.DriverAliveError
	var workers *engine.WorkersAliveError
	return errors.Is(err, engine.ErrBusy) && !errors.As(err, &holds) && !errors.As(err, &driver) && !errors.As(err, &workers)
}

// failed is the error an activity ends with: one that passes is tried
// again; any other ends the activity for good, so that a record that
// cannot be trusted stops the workflow rather than be tried for ever.
func failed(err error) error {
	if err == nil || passing(err) {
		return err
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), "custodian", err)
}

// Begin holds the run for the workflow, and says where it stands: its
// steps, and the hand-outs out that no worker was launched for, which the
// workflow launches before it steps.
func (h *Host) Begin(ctx context.Context, in BeginInput) (BeginResult, error) {
	defer beat(ctx)()
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.held()
	if err := d.Begin(); err != nil {
		// A run busy at the start is refused, as custodian drive refuses
		// it (exit 3): another loop may be at work.
		var workers *engine.WorkersAliveError
		if errors.As(err, &workers) {
			return BeginResult{}, err
		}
		return BeginResult{Fault: faultOf(err)}, nil
	}
	dec, err := d.Decisions()
	if err != nil {
		return BeginResult{Fault: faultOf(err)}, nil
	}
	unlaunched, err := d.Unlaunched()
	if err != nil {
		return BeginResult{Fault: faultOf(err)}, nil
	}
	jobs, fault := h.jobs(d, in.Settings, unlaunched)
	return BeginResult{Steps: dec.Step, Unlaunched: jobs, Fault: fault}, nil
}

// jobs checks hand-outs through the profile the workflow was started with
// and numbers their launches.
func (h *Host) jobs(d *engine.Driver, s Settings, hs []engine.Handout) ([]Job, *Fault) {
	profile, err := drive.NewProfile(s.Profile, s.Command)
	if err != nil {
		return nil, faultOf(err)
	}
	if err := drive.Check(profile, hs, h.Run.Dir()); err != nil {
		return nil, faultOf(err)
	}
	jobs := make([]Job, len(hs))
	for i, hd := range hs {
		n, err := d.NextLaunch(hd.Name)
		if err != nil {
			return nil, faultOf(err)
		}
		jobs[i] = Job{Handout: hd, Launch: n}
	}
	return jobs, nil
}

// Step takes the run's step in.Number, beside the hand-outs the workflow
// holds, in a process of its own; once taken, asked again, it gives that
// step's outcome.
func (h *Host) Step(ctx context.Context, in StepInput) (StepResult, error) {
	defer beat(ctx)()
	h.mu.Lock()
	defer h.mu.Unlock()
	out, _, err := drive.Step(h.Binary, h.Run.Dir(), drive.WorkflowToken(h.Workflow.ID), in.Held, in.Number, true)
	var inEffect *drive.EndedInEffectError
	var stepErr *drive.StepError
	switch {
	case errors.As(err, &inEffect):
		if h.Stderr != nil {
			fmt.Fprintf(h.Stderr, "%scustodian: step ended with exit status %d, inside an effect\n", inEffect.Stderr, inEffect.Status)
		}
		return StepResult{Kind: kindInEffect, StopWhy: inEffect.Error()}, nil
	case errors.As(err, &stepErr) && stepErr.Status == engine.ExitBusy && strings.Contains(stepErr.Stderr, engine.ErrBusy.Error()):
		// Its lock held a moment, by a step an earlier coordinator began:
		// the step process says so in words, its status being shared.
		return StepResult{}, err
	case errors.As(err, &stepErr):
		return StepResult{Fault: &Fault{Status: stepErr.Status, Message: stepErr.Error(), Hint: stepErr.Hint()}}, nil
	case err != nil:
		return StepResult{Fault: faultOf(err)}, nil
	}
	d := h.held()
	dec, err := d.Decisions()
	if err != nil {
		return StepResult{Fault: faultOf(err)}, nil
	}
	h.Sink.Emit(drive.Event{Kind: drive.EventStep, Round: dec.Step, Outcome: string(out.Kind)})
	h.Sink.Emit(drive.Event{Kind: drive.EventDecided, Decided: &dec})
	r := StepResult{Kind: string(out.Kind)}
	switch out.Kind {
	case engine.KindBlocked, engine.KindUncertain:
		r.StopJob, r.StopWhy = drive.StopReason(out)
	case engine.KindLaunch:
		var fresh []engine.Handout
		for _, hd := range out.Jobs {
			if _, ok := in.Held[hd.Name]; !ok {
				fresh = append(fresh, hd)
			}
		}
		r.Fresh, r.Fault = h.jobs(d, in.Settings, fresh)
		if names := jobNames(r.Fresh); len(names) > 0 {
			h.Sink.Emit(drive.Event{Kind: drive.EventRound, Round: dec.Step, Jobs: names})
		}
	}
	return r, nil
}

func jobNames(jobs []Job) []string {
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.Handout.Name
	}
	return names
}

// Lease records the lease a worker host gave for its worker.
func (h *Host) Lease(ctx context.Context, l engine.Lease) error {
	defer beat(ctx)()
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.held()
	if d.Recorded(l.Job, l.Launch) {
		return nil // its end came first: the lease is over
	}
	if err := d.Lease(l); err != nil {
		return failed(err)
	}
	h.tell(l.Job, l.Attempt, l.Launch, l.Process.Pid, l.Host)
	return nil
}

// Record records the evidence of a launch that a worker host sent back,
// and drops its lease. A launch that hit the account's usage limit is
// reported; Again says it is launched again, not charged, once the limit
// lifts (at most MaxWait from now).
func (h *Host) Record(ctx context.Context, in RecordInput) (RecordResult, error) {
	defer beat(ctx)()
	h.mu.Lock()
	defer h.mu.Unlock()
	l := in.Result.Launch
	if l == nil {
		return RecordResult{Fault: &Fault{Status: engine.ExitFailed, Message: "a worker host sent a launch without its record: a defect in custodian"}}, nil
	}
	d := h.held()
	again := d.Recorded(l.Job, l.Launch)
	dir, err := d.RecordLaunch(l, in.Result.Stdout, in.Result.Stderr)
	if err != nil {
		if passing(err) {
			return RecordResult{}, err
		}
		return RecordResult{Fault: faultOf(err)}, nil
	}
	if !again && l.Outcome != string(drive.FailedToStart) {
		h.tell(l.Job, l.Attempt, l.Launch, l.Process.Pid, l.Host)
	}
	if !again {
		h.Sink.Emit(drive.Event{Kind: drive.EventEnded, Job: l.Job, Outcome: l.Outcome, Status: status(l), Duration: ran(l), Text: dir})
	}
	if l.Outcome == string(drive.FailedToStart) && !again {
		// Reported as drive reports it: the next step hands it out again.
		if _, err := d.Report(engine.ReportLaunchFailed, l.Job, l.Message); err != nil {
			return RecordResult{Fault: faultOf(err)}, nil
		}
	}
	if l.Outcome != string(drive.UsageLimited) {
		return RecordResult{}, nil
	}
	msg := "the account hit a usage limit"
	if l.UsageLimit != nil && l.UsageLimit.Message != "" {
		msg = l.UsageLimit.Message
	}
	free := false
	if again {
		// Recorded and reported by a try whose answer was lost: free as
		// that report found it, by the job's usage-limited launches.
		n, err := h.usageLimited(l.Job)
		if err != nil {
			return RecordResult{Fault: faultOf(err)}, nil
		}
		free = n <= engine.MaxUsageLimited
	} else if _, free, err = d.ReportUsageLimited(l.Job, msg); err != nil {
		if !passing(err) {
			return RecordResult{Fault: faultOf(err)}, nil
		}
		return RecordResult{}, err
	}
	if !free {
		return RecordResult{}, nil
	}
	until := limitLifts(l, in.Settings.MaxWait)
	if !again {
		h.Sink.Emit(drive.Event{Kind: drive.EventPaused, Job: l.Job, Until: until, Text: msg})
	}
	return RecordResult{Again: true, Until: until}, nil
}

// usageLimited counts the launches of job the run records as ended at a
// usage limit.
func (h *Host) usageLimited(job string) (int, error) {
	story, err := h.Run.Story(job)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ho := range story.Handouts {
		for _, l := range ho.Launches {
			if l.Outcome == string(drive.UsageLimited) {
				n++
			}
		}
	}
	return n, nil
}

// limitLifts is when the usage limit a launch hit lifts, as its record
// says, counted from the launch's end, and at most maxWait after it.
func limitLifts(l *engine.Launch, maxWait time.Duration) time.Time {
	ended, err := time.Parse(time.RFC3339Nano, l.EndedAt)
	if err != nil {
		ended = time.Now()
	}
	until := ended.Add(drive.UnknownResetWait)
	if lim := l.UsageLimit; lim != nil && lim.Known {
		if t, err := time.Parse(time.RFC3339, lim.Resets); err == nil {
			until = t
		}
	}
	if maxWait > 0 && until.After(ended.Add(maxWait)) {
		until = ended.Add(maxWait)
	}
	return until
}

// status says how a launch's process ended, as the drive's events do.
func status(l *engine.Launch) string {
	if l.Signal != "" {
		return "signal " + l.Signal
	}
	return fmt.Sprintf("exit %d", l.ExitStatus)
}

// ran is how long a launch's worker ran, as its record says.
func ran(l *engine.Launch) time.Duration {
	start, err1 := time.Parse(time.RFC3339Nano, l.StartedAt)
	end, err2 := time.Parse(time.RFC3339Nano, l.EndedAt)
	if err1 != nil || err2 != nil {
		return 0
	}
	return end.Sub(start)
}

// Lost deals with a launch whose activity failed without its evidence: the
// worker host died, or stopped answering. The launch is recorded lost,
// and so handed out again, only once its worker can write no more: on this
// host, once its processes are gone (an orphan is ended here); on another,
// once its lease has expired. Until then Lost says how long to wait.
func (h *Host) Lost(ctx context.Context, in LostInput) (LostResult, error) {
	defer beat(ctx)()
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.held()
	j := in.Job
	if d.Recorded(j.Handout.Name, j.Launch) {
		return LostResult{}, nil
	}
	lease, err := d.LeaseOf(j.Handout.Name, j.Launch)
	if err != nil {
		return LostResult{Fault: faultOf(err)}, nil
	}
	if lease == nil && in.Lease != nil && in.Lease.Job == j.Handout.Name && in.Lease.Launch == j.Launch {
		lease = in.Lease // given to the workflow, not yet recorded here
	}
	here, _ := os.Hostname()
	rec := &engine.Launch{Job: j.Handout.Name, Attempt: j.Handout.Attempt, Launch: j.Launch, Worker: in.Settings.Profile,
		EndedAt: time.Now().UTC().Format(time.RFC3339Nano), Outcome: engine.LaunchLost, ExitStatus: -1}
	switch {
	case lease == nil && !in.Waited:
		// The worker host never said its worker ran: none did, or the
		// host ends it once it cannot say so (leaseSend, then its grace).
		// Wait that out once.
		return LostResult{Wait: leaseSend + in.Settings.Grace + leaseMargin/6}, nil
	case lease == nil:
		rec.Message = "lost before its worker host said it ran: " + in.Why
	case lease.Host == here:
		rec.Host, rec.Process = lease.Host, lease.Process
		rec.Message = "lost with its worker process: " + in.Why
		if proc.Alive(lease.Process.Pid, lease.Process.Start) {
			// An orphan: its worker process died and its keeper did not end it.
			if err := drive.EndGroup(lease.Process.Pid, lease.Process.Start, in.Settings.Grace); err != nil {
				return LostResult{}, failed(err)
			}
			rec.Message += fmt.Sprintf("; its group (pid %d) was still running, and was ended", lease.Process.Pid)
		}
	case !lease.Expired(time.Now()):
		expires, _ := time.Parse(time.RFC3339Nano, lease.Expires)
		return LostResult{Wait: time.Until(expires) + time.Second}, nil
	default:
		rec.Host, rec.Process = lease.Host, lease.Process
		rec.Message = fmt.Sprintf("lost with host %s: %s; its lease expired at %s", lease.Host, in.Why, lease.Expires)
	}
	if _, err := d.RecordLaunch(rec, nil, nil); err != nil {
		if passing(err) {
			return LostResult{}, err
		}
		return LostResult{Fault: faultOf(err)}, nil
	}
	h.Sink.Emit(drive.Event{Kind: drive.EventEnded, Job: rec.Job, Outcome: rec.Outcome, Status: "no evidence came back", Text: rec.Message})
	return LostResult{}, nil
}

// NotLaunched records that no worker was launched for jobs, queued when the
// workflow stopped launching: each is handed out again, not charged.
func (h *Host) NotLaunched(ctx context.Context, jobs []Job) error {
	defer beat(ctx)()
	h.mu.Lock()
	defer h.mu.Unlock()
	hs := make([]engine.Handout, len(jobs))
	for i, j := range jobs {
		hs[i] = j.Handout
	}
	return failed(h.held().NotLaunched(hs))
}

// Report reports the drive's stop, once.
func (h *Host) Report(ctx context.Context, in ReportInput) error {
	defer beat(ctx)()
	h.mu.Lock()
	defer h.mu.Unlock()
	s, err := h.Run.Status()
	if err != nil {
		return failed(err)
	}
	if r := s.StopReport; r != nil && r.Text == in.Why && r.Job == in.Job {
		return nil // made already, by a try whose answer was lost
	}
	_, err = h.held().Report(engine.ReportStop, in.Job, in.Why)
	return failed(err)
}

// End frees the run: the workflow has ended, and every worker with it.
func (h *Host) End(ctx context.Context) error {
	defer beat(ctx)()
	h.mu.Lock()
	defer h.mu.Unlock()
	return failed(h.held().End())
}
