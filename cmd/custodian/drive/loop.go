package drive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/custodian-run/custodian/internal/proc"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// The exit statuses of drive beyond the table every command shares
// (workflow.ExitStatuses): how the loop ended.
const (
	// ExitDone: the run is done.
	ExitDone = 0
	// ExitBlocked: a step blocked; drive reported the stop and never repairs.
	ExitBlocked = 10
	// ExitUncertain: an effect's fate is uncertain, or a step ended inside
	// an effect; drive reported the stop.
	ExitUncertain = 11
	// ExitInterrupted: a signal stopped the drive; every worker it started
	// has ended and is recorded, and the run is resumable.
	ExitInterrupted = 12
)

// Config says how a drive runs.
type Config struct {
	// Binary is the custodian binary that takes each step, in a process of
	// its own, as an agent orchestrator would: a step that ends inside an
	// effect ends that process, not the drive.
	Binary      string
	Profile     *Profile
	MaxParallel int           // workers at once; zero: every job handed out
	Timeout     time.Duration // a worker's wall clock; zero for none
	Idle        time.Duration // a worker's silence on stdout and stderr; zero for none
	Grace       time.Duration // between SIGTERM and SIGKILL when a worker is ended
	MaxWait     time.Duration // the longest wait for a usage limit to lift
	// Reclaim ends the workers of a round an earlier drive left running,
	// and records them as killed, instead of refusing the run.
	Reclaim bool
	// JSON prints one JSON object per event on Stdout, and the last step's
	// outcome in step --json's shape last.
	JSON   bool
	Stdout io.Writer
	// Stderr gets what a step printed on stderr when it ended inside an
	// effect.
	Stderr io.Writer
	// Progress shows what happens; nil shows nothing.
	Progress Sink
	// Interrupts are the signals that stop the drive: the first ends the
	// workers with their grace, the second at once.
	Interrupts <-chan os.Signal
}

// Drive carries the agent orchestrator's loop (docs/loop.md) in code, on
// the run o, without its round barrier: it steps; on launch, it launches
// one worker per hand-out, applying every launch parameter or reporting the
// launch failed, at most MaxParallel at once; when a worker ends it steps
// again, leaving the hand-outs whose workers still run (or wait for a
// place) alone, and launches what that step hands out. On blocked or
// uncertain it launches nothing more, lets the running workers end,
// reports the stop and ends; on done it ends. It never repairs. The last
// step's output is printed on Stdout exactly as step printed it. It
// returns the exit status of the drive, or an error that maps to one with
// workflow.ExitCode.
func Drive(o *engine.Run, opts Config) (int, error) {
	d := &driver{o: o, opts: opts, sink: opts.Progress}
	if d.sink == nil {
		d.sink = NewPlain(io.Discard)
	}
	if d.opts.Interrupts == nil {
		d.opts.Interrupts = make(chan os.Signal)
	}
	self, _ := proc.StartTime(os.Getpid())
	d.self = engine.Process{Pid: os.Getpid(), Start: self}
	d.held = o.Driver(d.self)
	if err := d.reclaim(); err != nil {
		return 0, err
	}
	if err := d.held.Begin(); err != nil {
		return 0, err
	}
	defer func() {
		// The run is free for any loop again; a failure to say so leaves a
		// record that the next command finds ended, and clears.
		_ = d.held.End()
	}()
	return d.drive()
}

// check maps every hand-out of a round through the profile before any is
// launched: a launch set-up that cannot launch one of them (a launch
// parameter no placeholder maps, a program that is not there) fails the
// drive at once, with exit status 2, naming each job and parameter, and
// nothing is launched or reported: the round stays handed out for the
// next drive, which launches it.
func (d *driver) check(jobs []engine.Handout) error {
	program, err := check(d.opts.Profile, jobs, d.o.Dir())
	if err != nil {
		return err
	}
	if _, err := exec.LookPath(program); program != "" && err != nil {
		return &engine.UsageError{
			Message: fmt.Sprintf("drive: the worker's program %s cannot be run: %v; nothing was launched or reported", program, err),
			Hint:    "install it, or name it in --command, then drive again: the round stays handed out",
		}
	}
	return nil
}

// Check maps every hand-out of jobs through profile, for the run dir, as a
// drive does before it launches any: a launch set-up that cannot launch
// one of them is a *engine.UsageError that names each job and fault. It
// does not look for the worker's program, which a drive of several hosts
// runs elsewhere.
func Check(profile *Profile, jobs []engine.Handout, dir string) error {
	_, err := check(profile, jobs, dir)
	return err
}

// check is Check, which also returns the worker's program.
func check(profile *Profile, jobs []engine.Handout, dir string) (string, error) {
	var faults []string
	byFault := map[string][]string{}
	program := ""
	for _, h := range jobs {
		cmd, err := profile.Command(h, dir)
		var launchErr *LaunchError
		switch {
		case errors.As(err, &launchErr):
			fault := launchErr.Reason
			if launchErr.Param != "" {
				fault = fmt.Sprintf("launch parameter %q %s", launchErr.Param, launchErr.Reason)
			}
			if byFault[fault] == nil {
				faults = append(faults, fault)
			}
			byFault[fault] = append(byFault[fault], h.Name)
		case err != nil:
			return "", err
		default:
			program = cmd.Args[0]
		}
	}
	if len(faults) == 0 {
		return program, nil
	}
	lines := make([]string, len(faults))
	for i, f := range faults {
		lines[i] = fmt.Sprintf("%s: %s", listed(byFault[f]), f)
	}
	return "", &engine.UsageError{
		Message: "drive: the launch set-up cannot launch this round, so nothing was launched or reported: " + strings.Join(lines, "; "),
		Hint: "fix --command or the jobs' launch parameters, then drive again: the round stays handed out; " +
			"{param:KEY?} leaves its argument out when a job has no KEY, {param:KEY=DEFAULT} gives a default",
	}
}

// listed names jobs, a few of them when there are many: "a, b, c and 27
// more".
func listed(jobs []string) string {
	const shown = 3
	if len(jobs) <= shown+1 {
		return strings.Join(jobs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(jobs[:shown], ", "), len(jobs)-shown)
}

// driver is one drive's state.
type driver struct {
	o           *engine.Run
	opts        Config
	sink        Sink
	self        engine.Process
	held        *engine.Driver // the run as this drive holds it
	last        []byte         // what the last step printed
	interrupted int            // interrupts received
}

// finish prints the last step's output and ends the drive with status.
func (d *driver) finish(status int) (int, error) {
	if err := d.sink.Close(); err != nil {
		return 0, err
	}
	if _, err := d.opts.Stdout.Write(d.last); err != nil {
		return 0, err
	}
	return status, nil
}

// step takes a step in a process of its own, beside the hand-outs the drive
// holds (held: job → attempt), and returns its outcome and what to print
// of it. A step that fails with a status of the table is passed through as
// that status's error (a StepError); one that ends with another status
// ended inside an effect (an EndedInEffectError).
func (d *driver) step(held map[string]int) (out engine.Outcome, printed []byte, err error) {
	return Step(d.opts.Binary, d.o.Dir(), DriverToken(d.self), held, 0, d.opts.JSON)
}

// Step takes a step of the run dir in a process of its own (binary step
// DIR --json), for the drive token names, beside the hand-outs it holds
// (held: job → attempt), as the run's step number when number is not
// zero, and returns its outcome and what to print of it: step --json's
// line when asJSON, its text otherwise. A step that fails with a status of
// the table is that status's error (a *StepError); one that ends with
// another status ended inside an effect (an *EndedInEffectError).
func Step(binary, dir, token string, held map[string]int, number int, asJSON bool) (out engine.Outcome, printed []byte, err error) {
	var stdout, stderr bytes.Buffer
	args := append([]string{"step", dir, "--json", "--driver", token}, RunningArgs(held)...)
	if number > 0 {
		args = append(args, "--number", strconv.Itoa(number))
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// In a group of its own: a Ctrl-C meant for drive must not cut a step
	// short; drive waits for it and then ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	runErr := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(runErr, &exit):
		code := exit.ExitCode()
		if engine.Named(code) {
			return out, nil, &StepError{Status: code, Stderr: stderr.String()}
		}
		// Any other status comes from a process that ended inside an
		// effect: its fate is for the operator to establish.
		return out, nil, &EndedInEffectError{Status: code, Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	case runErr != nil:
		return out, nil, fmt.Errorf("run a step of %s: %w", dir, runErr)
	}
	if err := out.UnmarshalJSON(bytes.TrimSpace(stdout.Bytes())); err != nil {
		return out, nil, fmt.Errorf("read what step printed: %w", err)
	}
	if asJSON {
		return out, stdout.Bytes(), nil
	}
	var text bytes.Buffer
	if err := out.WriteText(&text); err != nil {
		return out, nil, err
	}
	return out, text.Bytes(), nil
}

// EndedInEffectError is a step that ended with a status no command
// documents: inside an effect, whose fate the operator establishes. drive
// reports the stop and ends uncertain.
type EndedInEffectError struct {
	Status         int
	Stdout, Stderr []byte // what the step printed
}

func (e *EndedInEffectError) Error() string {
	return fmt.Sprintf("step ended with exit status %d, inside an effect: %s", e.Status, strings.TrimSpace(string(e.Stderr)))
}

// DriverToken names a drive to the steps it runs (step's hidden --driver
// flag), so that they are let through while it drives the run.
func DriverToken(p engine.Process) string { return fmt.Sprintf("%d,%s", p.Pid, p.Start) }

// workflowPrefix begins the token of a Temporal workflow.
const workflowPrefix = "temporal:"

// WorkflowToken names a Temporal workflow, by its ID, to the steps it has
// taken (step's hidden --driver flag).
func WorkflowToken(id string) string { return workflowPrefix + id }

// RunningArgs names the hand-outs a drive holds to the step it runs
// (step's hidden --running flag): JOB:ATTEMPT, sorted.
func RunningArgs(running map[string]int) []string {
	var args []string
	for _, job := range slices.Sorted(maps.Keys(running)) {
		args = append(args, "--running", fmt.Sprintf("%s:%d", job, running[job]))
	}
	return args
}

// ParseRunning reads the hand-outs RunningArgs names.
func ParseRunning(args []string) (map[string]int, error) {
	running := map[string]int{}
	for _, a := range args {
		job, n, ok := strings.Cut(a, ":")
		attempt, err := strconv.Atoi(n)
		if !ok || err != nil || attempt < 1 || job == "" {
			return nil, fmt.Errorf("--running %q is not JOB:ATTEMPT", a)
		}
		running[job] = attempt
	}
	return running, nil
}

// ParseDriverToken reads what DriverToken or WorkflowToken wrote.
func ParseDriverToken(s string) (engine.Holder, error) {
	if id, ok := strings.CutPrefix(s, workflowPrefix); ok {
		if id == "" {
			return engine.Holder{}, fmt.Errorf("--driver %q names no workflow", s)
		}
		return engine.Holder{Workflow: &engine.Workflow{ID: id}}, nil
	}
	pid, start, ok := strings.Cut(s, ",")
	n, err := strconv.Atoi(pid)
	if !ok || err != nil || n < 1 {
		return engine.Holder{}, fmt.Errorf("--driver %q is not PID,START", s)
	}
	return engine.Holder{Process: engine.Process{Pid: n, Start: start}}, nil
}

// StepError is a step that failed with one of the statuses every command
// shares: drive passes it through, with what the step said.
type StepError struct {
	Status int
	Stderr string // what the step printed on stderr
}

// Error returns what the step said went wrong.
func (e *StepError) Error() string {
	for _, line := range strings.Split(e.Stderr, "\n") {
		if msg, ok := strings.CutPrefix(line, "custodian: "); ok && !strings.HasPrefix(msg, "hint: ") {
			return msg
		}
	}
	return fmt.Sprintf("step ended with exit status %d", e.Status)
}

// Hint returns the step's hint.
func (e *StepError) Hint() string {
	for _, line := range strings.Split(e.Stderr, "\n") {
		if hint, ok := strings.CutPrefix(line, "custodian: hint: "); ok {
			return hint
		}
	}
	return ""
}

// Unwrap returns the error class of the step's status, so that the drive
// exits with it.
func (e *StepError) Unwrap() error { return StatusClass(e.Status) }

// StatusClass returns the error class of an exit status of the table every
// command shares, so that an error carried as its status alone (through a
// process, or a Temporal workflow's result) exits with it again; nil for
// the statuses no class stands for.
func StatusClass(status int) error {
	switch status {
	case engine.ExitUsage:
		return engine.ErrUsage
	case engine.ExitBusy:
		return engine.ErrBusy
	case engine.ExitUntrusted:
		return engine.ErrUntrusted
	case engine.ExitDefinition:
		return workflow.ErrDefinition
	}
	return nil
}

// decided tells what the last step decided, its outcome and what it
// decided in an event each, and returns the step's number in the run.
func (d *driver) decided(out engine.Outcome) (int, error) {
	dec, err := d.held.Decisions()
	if err != nil {
		return 0, err
	}
	d.sink.Emit(Event{Kind: EventStep, Round: dec.Step, Outcome: string(out.Kind)})
	d.sink.Emit(Event{Kind: EventDecided, Decided: &dec})
	return dec.Step, nil
}

// stop reports that drive stops, as an agent orchestrator would: with
// --job when a block on that job caused the stop.
func (d *driver) stop(job, why string) error {
	_, err := d.held.Report(engine.ReportStop, job, why)
	return err
}

// stopBlocked reports a stop at a blocked outcome, naming the first
// blocked job, as the loop instruction says, and every block, alike ones
// once.
func (d *driver) stopBlocked(out engine.Outcome) error {
	return d.stop(StopReason(out))
}

// StopReason is the stop a drive reports at a blocked or uncertain
// outcome: the first blocked job, as the loop instruction says (--job),
// and why it stops, every block named, alike ones once.
func StopReason(out engine.Outcome) (job, why string) {
	if out.Kind == engine.KindUncertain {
		return "", uncertainReason(out)
	}
	for _, b := range out.Blocks {
		if name, ok := b.Subject.Job(); ok {
			job = name
			break
		}
	}
	return job, blockedReason(out)
}

func blockedReason(out engine.Outcome) string {
	var alike []string
	bySubjects := map[string][]string{}
	for _, b := range out.Blocks {
		what := fmt.Sprintf("%s (%s)", b.Reason, b.Kind)
		if bySubjects[what] == nil {
			alike = append(alike, what)
		}
		bySubjects[what] = append(bySubjects[what], b.Subject.String())
	}
	parts := make([]string, len(alike))
	for i, what := range alike {
		parts[i] = listed(bySubjects[what]) + ": " + what
	}
	return "blocked; drive never repairs: " + strings.Join(parts, "; ")
}

func uncertainReason(out engine.Outcome) string {
	names := make([]string, len(out.Effects))
	for i, e := range out.Effects {
		names[i] = engine.EffectSubject(e.Name).String()
	}
	return "uncertain: the fate of " + strings.Join(names, ", ") + " is for the operator to establish"
}

// reclaim deals with a round an earlier drive left: its workers that still
// run are refused, or, with Reclaim, ended and recorded as killed.
func (d *driver) reclaim() error {
	rd, err := d.held.InFlight()
	if err != nil || rd == nil || len(rd.Workers) == 0 {
		return err
	}
	host, _ := os.Hostname()
	if !d.opts.Reclaim || rd.Host != host || rd.Workflow != nil || proc.Running(rd.Driver.Pid, rd.Driver.Start) {
		// Refused while they run, or while the drive that launched them
		// still runs (it ends its own workers), or while a workflow holds
		// the run (its workers may run on any host), or when nothing here
		// can end them; a round of ended workers is cleared.
		return d.held.Begin()
	}
	for _, w := range rd.Workers {
		if w.Where(rd) != host {
			continue // not to be seen from here: the step refuses until its lease expires
		}
		now := time.Now().UTC().Format(time.RFC3339Nano)
		l := &engine.Launch{Job: w.Job, Attempt: w.Attempt, Launch: w.Launch, Worker: d.opts.Profile.Name(), Host: rd.Host,
			Process: w.Process, EndedAt: now, ExitStatus: -1}
		if proc.Alive(w.Process.Pid, w.Process.Start) {
			if err := EndGroup(w.Process.Pid, w.Process.Start, d.opts.Grace); err != nil {
				return err
			}
			l.Outcome = engine.LaunchReclaimed
			l.Message = fmt.Sprintf("ended by drive --reclaim (pid %d): the drive that started it had ended", d.self.Pid)
		} else {
			// It ended on its own, after the drive that watched it: when,
			// and how, no one recorded.
			l.Outcome = engine.LaunchFoundEnded
			l.Message = fmt.Sprintf("found ended at %s by drive --reclaim (pid %d); its end was not recorded: the drive that started it had ended", now, d.self.Pid)
		}
		if _, err := d.held.RecordLaunch(l, nil, nil); err != nil {
			return err
		}
	}
	return d.held.EndRound()
}

// launched is a worker of the round, or a launch that failed.
type launched struct {
	h       engine.Handout
	n       int // the job's launch number
	cmd     *Command
	w       *Worker
	started time.Time
}

// pollInterrupt takes a signal that has come, without waiting for one, and
// says whether drive has been interrupted. running are the workers to end.
func (d *driver) pollInterrupt(running map[string]*launched) bool {
	select {
	case <-d.opts.Interrupts:
		d.interrupt(running)
	default:
	}
	return d.interrupted > 0
}

// interrupt ends the running workers at a signal: the first gives each its
// grace period, the second kills at once.
func (d *driver) interrupt(running map[string]*launched) {
	d.interrupted++
	if d.interrupted == 1 {
		d.sink.Emit(Event{Kind: EventInterrupted, Text: "ending every worker, then stopping"})
	}
	for _, l := range running {
		l.w.Kill()
	}
}

// launch starts a worker for a hand-out and leases it, or records and
// reports a launch that failed (nil, nil).
func (d *driver) launch(h engine.Handout) (*launched, error) {
	n, err := d.held.NextLaunch(h.Name)
	if err != nil {
		return nil, err
	}
	l := &launched{h: h, n: n, started: time.Now()}
	cmd, err := d.opts.Profile.Command(h, d.o.Dir())
	if err == nil {
		l.cmd = cmd
		l.w, err = Start(cmd, Options{Timeout: d.opts.Timeout, Idle: d.opts.Idle, Grace: d.opts.Grace,
			OnLine: func(text string) { d.sink.Emit(Event{Kind: EventOutput, Job: h.Name, Text: text}) }})
	}
	var launchErr *LaunchError
	var startErr *StartError
	switch {
	case errors.As(err, &launchErr), errors.As(err, &startErr):
		return nil, d.failed(l, err)
	case err != nil:
		return nil, err
	}
	host, _ := os.Hostname()
	lease := engine.Lease{Job: h.Name, Attempt: h.Attempt, Launch: n, Process: engine.Process{Pid: l.w.Pid(), Start: l.w.ProcessStart()}}
	if err := d.held.Lease(lease); err != nil {
		// The worker runs, unrecorded: end it rather than leave it unseen.
		l.w.Kill()
		l.w.Wait()
		return nil, fmt.Errorf("lease worker %s on %s: %w", h.Name, host, err)
	}
	d.sink.Emit(Event{Kind: EventLaunched, Job: h.Name, Attempt: h.Attempt, Pid: l.w.Pid()})
	return l, nil
}

// Evidence is the record of a worker's launch n for the hand-out h, as
// profile's cmd, that ended with r on host: a worker killed while its
// drive was interrupted was ended by the drive, not by itself.
func Evidence(h engine.Handout, n int, profile string, cmd *Command, w *Worker, r Result, host string, interrupted bool) *engine.Launch {
	outcome := string(r.Outcome)
	if r.Outcome == Killed && interrupted {
		outcome = engine.LaunchInterrupted // ended by drive, not by itself
	}
	rec := &engine.Launch{Job: h.Name, Attempt: h.Attempt, Launch: n, Worker: profile,
		Command: cmd.Args, Env: cmd.EnvNames(), Host: host,
		Process:   engine.Process{Pid: w.Pid(), Start: w.ProcessStart()},
		StartedAt: r.Started.UTC().Format(time.RFC3339Nano), EndedAt: r.Ended.UTC().Format(time.RFC3339Nano),
		Outcome: outcome, ExitStatus: r.ExitCode, Signal: r.Signal, Session: r.SessionID, Message: r.Message,
		Stdout: engine.OutputRecord{Bytes: r.Stdout.Total, Kept: len(r.Stdout.Data)},
		Stderr: engine.OutputRecord{Bytes: r.Stderr.Total, Kept: len(r.Stderr.Data)}}
	if lim := r.Limit; lim != nil {
		rec.UsageLimit = &engine.UsageLimit{Known: lim.Known, Message: lim.Message}
		if lim.Known {
			rec.UsageLimit.Resets = lim.Resets.UTC().Format(time.RFC3339)
		}
	}
	return rec
}

// failed records and reports a launch that could not be made.
func (d *driver) failed(l *launched, cause error) error {
	host, _ := os.Hostname()
	rec := &engine.Launch{Job: l.h.Name, Attempt: l.h.Attempt, Launch: l.n, Worker: d.opts.Profile.Name(), Host: host,
		StartedAt: l.started.UTC().Format(time.RFC3339Nano), EndedAt: time.Now().UTC().Format(time.RFC3339Nano),
		Outcome: string(FailedToStart), ExitStatus: -1, Message: cause.Error()}
	if l.cmd != nil {
		rec.Command, rec.Env = l.cmd.Args, l.cmd.EnvNames()
	}
	if _, err := d.held.RecordLaunch(rec, nil, nil); err != nil {
		return err
	}
	d.sink.Emit(Event{Kind: EventLaunchFailed, Job: l.h.Name, Text: cause.Error()})
	_, err := d.held.Report(engine.ReportLaunchFailed, l.h.Name, cause.Error())
	return err
}

// ended records how a worker ended. again says the job is launched again
// with the same hand-out once the usage limit it hit lifts at until.
func (d *driver) ended(l *launched) (again bool, until time.Time, err error) {
	r := l.w.Wait()
	host, _ := os.Hostname()
	rec := Evidence(l.h, l.n, d.opts.Profile.Name(), l.cmd, l.w, r, host, d.interrupted > 0)
	outcome := rec.Outcome
	dir, err := d.held.RecordLaunch(rec, r.Stdout.Data, r.Stderr.Data)
	if err != nil {
		return false, time.Time{}, err
	}
	d.sink.Emit(Event{Kind: EventEnded, Job: l.h.Name, Outcome: outcome, Status: r.Status(),
		Duration: r.Ended.Sub(r.Started), Text: dir})
	if r.Outcome != UsageLimited {
		return false, time.Time{}, nil
	}
	msg := "the account hit a usage limit"
	if r.Limit != nil && r.Limit.Message != "" {
		msg = r.Limit.Message
	}
	_, free, err := d.held.ReportUsageLimited(l.h.Name, msg)
	if err != nil || !free {
		return false, time.Time{}, err
	}
	now := time.Now()
	until = r.Limit.Until(now)
	if d.opts.MaxWait > 0 && until.After(now.Add(d.opts.MaxWait)) {
		until = now.Add(d.opts.MaxWait)
	}
	return true, until, nil
}
