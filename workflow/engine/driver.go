package engine

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/custodian-run/custodian/internal/proc"
	"github.com/custodian-run/custodian/store"
)

// The round's records, as the driver hands them to the engine.
type (
	// Round is the round of workers a drive has in flight.
	Round = store.Round
	// Lease is one worker of a round.
	Lease = store.Lease
	// Process names a process by its pid and start time.
	Process = store.Process
	// Launch is the evidence of one launch of a worker.
	Launch = store.Launch
	// UsageLimit is an account's usage limit a worker hit.
	UsageLimit = store.UsageLimit
	// OutputRecord says what of a worker's output stream is kept.
	OutputRecord = store.OutputRecord
	// Workflow names the Temporal workflow that holds a run.
	Workflow = store.Workflow
)

// ReportUsageLimited is the report of a launch that ended at the account's
// usage limit: the job is not at fault, and the launch is not charged as
// an attempt, up to MaxUsageLimited times per job.
const ReportUsageLimited = "usage-limited"

// MaxUsageLimited is how many launches of one job may end at a usage limit
// in a run without being charged; past it, such a launch is a failed
// attempt like any other.
const MaxUsageLimited = 5

// The outcomes of a launch that custodian drive records besides the
// worker's own (finished, failed-to-start, timed-out, idle, usage-limited,
// killed): what ended it, and a hand-out it never launched.
const (
	// LaunchInterrupted: drive ended the worker at an interrupt.
	LaunchInterrupted = "interrupted"
	// LaunchReclaimed: drive --reclaim ended a worker an earlier drive left.
	LaunchReclaimed = "reclaimed"
	// LaunchFoundEnded: drive --reclaim found the worker an earlier drive
	// left already ended, its end not recorded.
	LaunchFoundEnded = "found-ended"
	// LaunchNotLaunched: drive launched no worker for the hand-out: it was
	// queued when drive stopped.
	LaunchNotLaunched = "not-launched"
	// LaunchLost: the worker was lost with its host (custodian-temporal),
	// and its lease has ended: it can write no more.
	LaunchLost = "lost"
)

// bookkeeping is how long a drive's records of its round wait for a lock
// another command holds: an operator's command at the same instant must
// not end a round and lose a finished worker's evidence.
const bookkeeping = 2 * time.Second

// launchEnd says what a launch's end tells of its hand-out: worked, a
// worker ended on its own, so a missing output is its failed attempt; or
// spare, why no worker's attempt is to be charged; and how it ended, in
// words.
func launchEnd(l *Launch) (text string, worked bool, spare string) {
	text = l.Outcome
	switch l.Outcome {
	case "failed-to-start", LaunchNotLaunched, LaunchLost:
	default:
		status := fmt.Sprintf("exit %d", l.ExitStatus)
		if l.Signal != "" {
			status = "signal " + l.Signal
		}
		text += ", " + status
	}
	switch l.Outcome {
	case "finished", "timed-out", "idle", LaunchFoundEnded:
		return text, true, ""
	case "failed-to-start":
		return text, false, "its launch failed"
	case LaunchNotLaunched:
		return text, false, "not launched"
	case LaunchInterrupted:
		return text, false, "ended by an interrupt"
	case LaunchReclaimed:
		return text, false, "ended by drive --reclaim"
	case "killed":
		return text, false, "ended by custodian drive"
	case LaunchLost:
		return text, false, "its worker was lost with its host"
	}
	return text, false, "" // usage-limited: launched again, free, up to a bound
}

// WorkersAliveError is a command refused because a recorded round has
// workers that still run, or that cannot be seen from this host.
type WorkersAliveError struct {
	Run       string
	Host      string  // the host the workers run on
	Workers   []Lease // the workers alive, or not to be seen from here
	Elsewhere bool    // the round runs on another host
}

func (e *WorkersAliveError) Error() string {
	names := make([]string, len(e.Workers))
	for i, w := range e.Workers {
		names[i] = fmt.Sprintf("%s (pid %d)", w.Job, w.Process.Pid)
	}
	where := "still run"
	if e.Elsewhere {
		where = "run on host " + e.Host + ", where this custodian cannot see whether they still run"
	}
	return fmt.Sprintf("run %s: workers a drive launched %s: %s", e.Run, where, strings.Join(names, ", "))
}

// Unwrap returns ErrBusy: another process is at work on the run.
func (e *WorkersAliveError) Unwrap() error { return ErrBusy }

// Hint says how to go on.
func (e *WorkersAliveError) Hint() string {
	if e.Elsewhere {
		return "drive the run on host " + e.Host + ", or make sure its workers have ended there; do not step it here meanwhile"
	}
	return "wait for them to end, or end them and record them with custodian drive RUN --reclaim; do not step the run meanwhile"
}

// hostname is this machine's name, as a round records it.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

// liveWorkers returns the recorded workers that may still write: on this
// host, those Alive says run; on another host, those whose lease has not
// expired, since their processes cannot be seen from here. elsewhere says
// some of them run on another host, the first of which is host.
func liveWorkers(rd *store.Round) (alive []Lease, host string, elsewhere bool) {
	if rd == nil || len(rd.Workers) == 0 {
		return nil, "", false
	}
	here, now := hostname(), time.Now()
	for _, w := range rd.Workers {
		switch where := w.Where(rd); {
		case where == here:
			if proc.Alive(w.Process.Pid, w.Process.Start) {
				alive = append(alive, w)
			}
		case !w.Expired(now):
			alive = append(alive, w)
			if !elsewhere {
				host, elsewhere = where, true
			}
		}
	}
	if !elsewhere {
		host = rd.Host
	}
	return alive, host, elsewhere
}

// DriverAliveError is a command refused because a custodian drive that
// still runs drives the run: a second loop beside it would hand the same
// jobs to two workers, or judge a round before its workers have ended.
type DriverAliveError struct {
	Run       string
	Host      string
	Driver    Process
	Elsewhere bool // it runs on another host, where this custodian cannot see it
}

func (e *DriverAliveError) Error() string {
	if e.Elsewhere {
		return fmt.Sprintf("run %s is driven by custodian drive (pid %d) on host %s, where this custodian cannot see whether it still runs",
			e.Run, e.Driver.Pid, e.Host)
	}
	return fmt.Sprintf("run %s is driven by custodian drive (pid %d), which still runs", e.Run, e.Driver.Pid)
}

// Unwrap returns ErrBusy: another process is at work on the run.
func (e *DriverAliveError) Unwrap() error { return ErrBusy }

// Hint says how to go on.
func (e *DriverAliveError) Hint() string {
	if e.Elsewhere {
		return "let that drive finish on host " + e.Host + "; do not step or drive the run here meanwhile"
	}
	return fmt.Sprintf("let it finish, or stop it with Ctrl-C or kill -INT %d (it ends its workers and records them); do not start a second loop", e.Driver.Pid)
}

// WorkflowHoldsError is a command refused because a Temporal workflow
// holds the run: custodian-temporal drives it, and its workers may run on
// any host.
type WorkflowHoldsError struct {
	Run      string
	Workflow store.Workflow
}

func (e *WorkflowHoldsError) Error() string {
	return fmt.Sprintf("run %s is driven by Temporal workflow %s (namespace %s at %s)",
		e.Run, e.Workflow.ID, e.Workflow.Namespace, e.Workflow.Address)
}

// Unwrap returns ErrBusy: another loop is at work on the run.
func (e *WorkflowHoldsError) Unwrap() error { return ErrBusy }

// Hint says how to go on.
func (e *WorkflowHoldsError) Hint() string {
	return "let it finish, or stop it with Ctrl-C on its custodian-temporal drive; " +
		"a workflow that was terminated is taken up again by custodian-temporal drive RUN (docs/temporal.md); do not step the run meanwhile"
}

// Holder is what drives a run: the process of a custodian drive, or a
// Temporal workflow that custodian-temporal carries. The zero Holder is a
// command of no drive.
type Holder struct {
	Process  Process
	Workflow *store.Workflow
}

// none says the holder is no drive.
func (h Holder) none() bool { return h.Process.Pid == 0 && h.Workflow == nil }

// liveDriver says whether the drive a round records still runs: on this
// host, as Alive says; on another, it cannot be told, and counts as alive.
func liveDriver(rd *store.Round) (alive, elsewhere bool) {
	if rd == nil || rd.Driver.Pid == 0 {
		return false, false
	}
	if rd.Host != hostname() {
		return true, true
	}
	return proc.Running(rd.Driver.Pid, rd.Driver.Start), false
}

// heldElsewhere refuses a command of self while another loop holds the
// run: a Temporal workflow, or a live drive, other than self.
func (run *Run) heldElsewhere(rd *store.Round, self Holder) error {
	if rd == nil {
		return nil
	}
	if w := rd.Workflow; w != nil {
		// A step names its workflow by ID alone; a workflow that begins
		// names its server and namespace too, so that a workflow of the
		// same run on another cluster is a rival, not the holder.
		mine := self.Workflow
		if mine == nil || mine.ID != w.ID ||
			mine.Namespace != "" && mine.Namespace != w.Namespace || mine.Address != "" && mine.Address != w.Address {
			return &WorkflowHoldsError{Run: run.records.Dir, Workflow: *w}
		}
		return nil
	}
	if alive, elsewhere := liveDriver(rd); alive && rd.Driver != self.Process {
		return &DriverAliveError{Run: run.records.Dir, Host: rd.Host, Driver: rd.Driver, Elsewhere: elsewhere}
	}
	return nil
}

// clearRound refuses while another loop holds the run, or while a
// recorded round has workers that may write, and clears what a drive that
// ended without seeing its workers end left: its workers, and itself.
func (run *Run) clearRound(rec *loaded, self Holder) error {
	rd := rec.round
	if rd == nil || len(rd.Workers) == 0 && rd.Driver.Pid == 0 && rd.Workflow == nil {
		return nil
	}
	if err := run.heldElsewhere(rd, self); err != nil {
		return err
	}
	if workers, host, elsewhere := liveWorkers(rd); len(workers) > 0 {
		return &WorkersAliveError{Run: run.records.Dir, Host: host, Workers: workers, Elsewhere: elsewhere}
	}
	if alive, _ := liveDriver(rd); alive || rd.Workflow != nil || len(rd.Workers) == 0 && rd.Driver.Pid == 0 {
		if len(rd.Workers) == 0 {
			return nil
		}
		rd.Workers = nil
		return run.records.SaveRound("round", rd)
	}
	// The drive has ended and its workers with it.
	return run.records.SaveRound("round", &store.Round{Step: rd.Step, Host: rd.Host})
}

// keepRound lets the drive self step beside the workers of its round that
// may still write: each must work on a hand-out the drive holds (running),
// or the step is refused as any step beside live workers is. The round
// stays as it is.
func (run *Run) keepRound(rec *loaded, self Holder, running map[string]int) error {
	rd := rec.round
	if rd == nil {
		return nil
	}
	if err := run.heldElsewhere(rd, self); err != nil {
		return err
	}
	workers, _, _ := liveWorkers(rd)
	var loose []Lease
	host, elsewhere := rd.Host, false
	for _, w := range workers {
		if a, ok := running[w.Job]; !ok || a != w.Attempt {
			loose = append(loose, w)
			if where := w.Where(rd); where != hostname() && !elsewhere {
				host, elsewhere = where, true
			}
		}
	}
	if len(loose) > 0 {
		return &WorkersAliveError{Run: run.records.Dir, Host: host, Workers: loose, Elsewhere: elsewhere}
	}
	return nil
}

// Driver is a run as the custodian drive that drives it holds it: the
// drive's own steps, launches and records go through, and every other
// loop's steps and drives are refused while the drive lives. It keeps the
// round the drive has in flight (round.json) and the evidence of every
// launch, so that no worker is ever left running unseen and every attempt
// leaves evidence.
type Driver struct {
	run  *Run
	self Holder
}

// Driver returns the run as held by the custodian drive self, a process
// of this host.
func (run *Run) Driver(self Process) *Driver { return &Driver{run: run, self: Holder{Process: self}} }

// WorkflowDriver returns the run as held by the Temporal workflow w, which
// custodian-temporal carries: a workflow outlives the processes that take
// its steps, so it holds the run by its ID.
func (run *Run) WorkflowDriver(w store.Workflow) *Driver {
	return &Driver{run: run, self: Holder{Workflow: &w}}
}

// HolderDriver returns the run as held by h, as a drive's step names it.
func (run *Run) HolderDriver(h Holder) *Driver { return &Driver{run: run, self: h} }

// Step is Run.Step, taken by the drive: a round the drive has in flight
// does not refuse it.
func (d *Driver) Step() (Outcome, error) { return d.run.step(d.self, 0, nil) }

// StepLeaving is Step beside the drive's workers that still run: running
// are the hand-outs the drive holds (job → attempt), a worker of each
// running or waiting for a place under --max-parallel. The step leaves
// each alone: it is neither judged, nor charged, nor handed out again, and
// a path that waits on it ends there; the outputs of the workers that
// ended are judged and what became ready is handed out. The step's
// history says which hand-outs it left running, and its outcome lists
// them (Outcome.Running). A job that is no longer out at that attempt is
// judged as any other.
func (d *Driver) StepLeaving(running map[string]int) (Outcome, error) {
	return d.run.step(d.self, 0, running)
}

// StepNumber is StepLeaving, as the run's step number: once the run has
// taken that step, it is not taken again, and its outcome is given as the
// history recorded it. A drive whose steps may be asked for twice (a
// Temporal activity retried after its process died) steps so.
func (d *Driver) StepNumber(number int, running map[string]int) (Outcome, error) {
	return d.run.step(d.self, number, running)
}

// Report is Run.Report, made by the drive, which another loop's report is
// refused beside.
func (d *Driver) Report(event, job, text string) (Report, error) {
	return d.run.report(d.self, event, job, text)
}

// Unlaunched returns the hand-outs still out that no launch is recorded
// for and that have no output: a round that `custodian step` by hand, or a
// harness session that stopped, handed out, or hand-outs a drive that was
// killed had queued, which the drive launches before it steps rather than
// let the step charge them. Each is as the step that handed it out gave
// it, sorted by name. None while the last step's outcome is not launch:
// a blocked or uncertain run waits on a person. It takes no lock and
// writes nothing.
func (d *Driver) Unlaunched() ([]Handout, error) {
	rec, err := d.run.read()
	if err != nil {
		return nil, err
	}
	if last, err := d.run.lastOutcome(rec.state); err != nil || last == nil || last.Kind != KindLaunch {
		// A run that waits on a person (a block, an effect's fate) starts
		// no new work before a step says it may.
		return nil, err
	}
	want := map[string]int{}
	for name, js := range rec.state.Jobs {
		if o := js.Outstanding; o != nil && len(o.Launches) == 0 && o.Spare == "" {
			want[name] = attempt(js)
		}
	}
	if rd := rec.round; rd != nil {
		for _, w := range rd.Workers {
			if want[w.Job] == w.Attempt {
				delete(want, w.Job) // leased: a worker was launched for it
			}
		}
	}
	var out []Handout
	// A drive's steps hand out as workers end: a hand-out may be older
	// than the last step.
	for seq := rec.state.Seq; seq > 0 && len(want) > 0; seq-- {
		events, err := d.run.records.HistoryOf(seq)
		if err != nil {
			return nil, err
		}
		if len(events) == 0 || events[0].Type != store.EventStep {
			continue
		}
		step, err := d.run.eventOutcome(events[0])
		if err != nil {
			return nil, err
		}
		for _, h := range step.Jobs {
			if a, ok := want[h.Name]; !ok || a != h.Attempt {
				continue
			}
			delete(want, h.Name)
			info, err := d.run.records.Stat(d.run.records.Rel(h.Output))
			if err != nil {
				return nil, err
			}
			if info.Kind == store.Missing {
				out = append(out, h)
			}
		}
	}
	slices.SortFunc(out, func(a, b Handout) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// NotLaunched records that the drive launched no worker for the hand-outs
// hs, queued when it stopped: each is handed out again at the next step,
// not charged (up to MaxSpared times a job).
func (d *Driver) NotLaunched(hs []Handout) error {
	if len(hs) == 0 {
		return nil
	}
	return d.run.lockedWaiting(bookkeeping, func(rec *loaded) error {
		if err := d.run.heldElsewhere(rec.round, d.self); err != nil {
			return err
		}
		var events []store.Event
		for _, h := range hs {
			if js := rec.state.Jobs[h.Name]; js != nil && js.Outstanding != nil && attempt(js) == h.Attempt &&
				slices.Contains(js.Outstanding.Launches, LaunchNotLaunched) {
				continue // noted already, by a try whose answer was lost
			}
			l := &Launch{Job: h.Name, Attempt: h.Attempt, Outcome: LaunchNotLaunched}
			if noteLaunch(rec.state, l) {
				events = append(events, store.Event{Type: store.EventLaunch, Subject: h.Name, Attempt: h.Attempt,
					Kind: LaunchNotLaunched, Text: "not launched: drive stopped before it started a worker"})
			}
		}
		if len(events) == 0 {
			return nil
		}
		return d.run.commit("launch-state", rec.state, sealHistory(rec.state, rec.effects, events))
	})
}

// noteLaunch notes the end of a launch l on its hand-out, when that is
// still the job's outstanding one, and says whether it was.
func noteLaunch(st *store.State, l *Launch) bool {
	js := st.Jobs[l.Job]
	if js == nil || js.Outstanding == nil || attempt(js) != l.Attempt {
		return false
	}
	text, worked, spare := launchEnd(l)
	o := js.Outstanding
	o.Launches = append(o.Launches, text)
	o.Worked = o.Worked || worked
	if spare != "" {
		o.Spare = spare
	}
	return true
}

// Begin records that the drive drives the run from now on: every command
// but the drive's own is refused until End, or until the drive has ended.
// It refuses while another drive drives the run, or while workers of an
// earlier one run.
func (d *Driver) Begin() error {
	if d.self.none() {
		return errors.New("begin a drive: the drive names no process: a defect in custodian")
	}
	return d.run.locked(func(rec *loaded) error {
		if err := d.run.clearRound(rec, d.self); err != nil {
			return err
		}
		if len(rec.state.Moves) > 0 {
			// The last step committed and ended before its moves were
			// done: finish them, so that what the drive takes over and
			// its first step see the run as that step left it.
			if err := d.run.finishMoves(rec.state); err != nil {
				return err
			}
		}
		return d.run.records.SaveRound("round", d.round(rec))
	})
}

// round returns the round the drive begins, as it holds the run.
func (d *Driver) round(rec *loaded) *store.Round {
	return &store.Round{Step: rec.state.Steps, Host: hostname(), Driver: d.self.Process, Workflow: d.self.Workflow}
}

// holds says whether the drive is what rd records as holding the run.
func (d *Driver) holds(rd *store.Round) bool {
	if rd.Workflow != nil || d.self.Workflow != nil {
		return rd.Workflow != nil && d.self.Workflow != nil && rd.Workflow.ID == d.self.Workflow.ID
	}
	return rd.Driver == d.self.Process
}

// End records that the drive has ended: the run is free for any loop. It
// leaves a round whose workers still run as it is.
func (d *Driver) End() error {
	return d.run.lockedWaiting(bookkeeping, func(rec *loaded) error {
		rd := rec.round
		if rd == nil || !d.holds(rd) || len(rd.Workers) > 0 {
			return nil
		}
		return d.run.records.SaveRound("round", &store.Round{Step: rd.Step, Host: rd.Host})
	})
}

// InFlight returns the round a drive has in flight, or nil. It takes no
// lock and writes nothing.
func (d *Driver) InFlight() (*Round, error) {
	rec, err := d.run.read()
	if err != nil {
		return nil, err
	}
	return rec.round, nil
}

// BeginRound records that the drive begins a round of launches for the
// hand-outs of the last step, with no worker yet: each is leased as it
// starts. It refuses while an earlier round has workers that run.
func (d *Driver) BeginRound() error {
	return d.run.lockedWaiting(bookkeeping, func(rec *loaded) error {
		if err := d.run.clearRound(rec, d.self); err != nil {
			return err
		}
		return d.run.records.SaveRound("round", d.round(rec))
	})
}

// Lease records a worker of the round in flight as soon as it has
// started, before anything waits on it. A lease of a launch whose end is
// recorded already is not taken: a worker host's word that its worker
// started can come after the word that it ended. A lease given again
// replaces the one it repeats.
func (d *Driver) Lease(l Lease) error {
	return d.run.lockedWaiting(bookkeeping, func(rec *loaded) error {
		rd := rec.round
		if rd == nil {
			return fmt.Errorf("lease worker %s of run %s: no round is in flight: a defect in custodian", l.Job, d.run.records.Dir)
		}
		if err := d.run.heldElsewhere(rd, d.self); err != nil {
			return err
		}
		if _, err := d.run.records.LoadLaunch(l.Job, l.Launch); err == nil {
			return nil
		}
		rd.Workers = slices.DeleteFunc(rd.Workers, func(w Lease) bool { return w.Job == l.Job && w.Launch == l.Launch })
		rd.Workers = append(rd.Workers, l)
		// Without a round barrier, workers start after later steps too:
		// the round is as old as its newest worker's step.
		rd.Step = rec.state.Steps
		return d.run.records.SaveRound("round", rd)
	})
}

// LeaseOf returns the lease of a job's launch n in the round in flight, or
// nil. It takes no lock and writes nothing.
func (d *Driver) LeaseOf(job string, n int) (*Lease, error) {
	rd, err := d.InFlight()
	if err != nil || rd == nil {
		return nil, err
	}
	for _, w := range rd.Workers {
		if w.Job == job && w.Launch == n {
			if w.Host == "" {
				w.Host = rd.Host
			}
			return &w, nil
		}
	}
	return nil, nil
}

// Recorded says whether the evidence of a job's launch n is kept: its end
// has been recorded.
func (d *Driver) Recorded(job string, n int) bool {
	_, err := d.run.records.LoadLaunch(job, n)
	return err == nil
}

// NextLaunch returns the number the next launch of job gets.
func (d *Driver) NextLaunch(job string) (int, error) { return d.run.records.NextLaunch(job) }

// RecordLaunch keeps the evidence of a launch that ended, or that never
// started (its stdout and stderr as kept, and launch.json), drops its
// worker from the round in flight, and records the launch in the history.
// It returns where the evidence is, run-relative.
func (d *Driver) RecordLaunch(l *Launch, stdout, stderr []byte) (string, error) {
	var dir string
	err := d.run.lockedWaiting(bookkeeping, func(rec *loaded) error {
		if rec.state.Jobs[l.Job] == nil {
			return fmt.Errorf("record a launch of %q: the run has no such job: a defect in custodian", l.Job)
		}
		// Another loop's records are refused: a drive --reclaim beside a
		// workflow must not record the workflow's workers.
		if err := d.run.heldElsewhere(rec.round, d.self); err != nil {
			return err
		}
		kept, keptErr := d.run.records.LoadLaunch(l.Job, l.Launch)
		if l.Outcome == LaunchFoundEnded && keptErr == nil {
			// A drive that ended between keeping the evidence of its
			// worker's end and dropping the lease left the record whole:
			// it says more than that the worker was found ended.
			l = kept
		}
		committed, err := d.run.launchCommitted(rec.state, l.Job, l.Launch)
		if err != nil {
			return err
		}
		if committed {
			// The same launch given again (a retried activity whose first
			// try committed): it is recorded once.
			dir = store.LaunchDir(l.Job, l.Launch)
			return d.dropLease(rec, l)
		}
		if dir, err = d.run.records.SaveLaunch(l, stdout, stderr); err != nil {
			return err
		}
		if err := d.dropLease(rec, l); err != nil {
			return err
		}
		text, _, _ := launchEnd(l)
		noteLaunch(rec.state, l)
		events := sealHistory(rec.state, rec.effects, []store.Event{{Type: store.EventLaunch, Subject: l.Job, Attempt: l.Attempt,
			Kind: l.Outcome, Text: text, Path: dir}})
		return d.run.commit("launch-state", rec.state, events)
	})
	return dir, err
}

// launchCommitted says whether the history records the end of a job's
// launch n. It reads the history back from its end, which only a launch
// whose evidence was kept before (a retry, a drive that ended before its
// commit) asks for.
func (run *Run) launchCommitted(st *store.State, job string, n int) (bool, error) {
	if _, err := run.records.LoadLaunch(job, n); err != nil {
		return false, nil // no evidence kept: not recorded
	}
	dir := store.LaunchDir(job, n)
	for seq := st.Seq; seq > 0; seq-- {
		events, err := run.records.HistoryOf(seq)
		if err != nil {
			return false, err
		}
		for _, e := range events {
			if e.Type == store.EventLaunch && e.Subject == job && e.Path == dir {
				return true, nil
			}
		}
	}
	return false, nil
}

// dropLease drops the lease of the launch l from the round in flight.
func (d *Driver) dropLease(rec *loaded, l *Launch) error {
	if rd := rec.round; rd != nil {
		n := len(rd.Workers)
		rd.Workers = slices.DeleteFunc(rd.Workers, func(w Lease) bool { return w.Job == l.Job && w.Launch == l.Launch })
		if len(rd.Workers) != n {
			return d.run.records.SaveRound("round", rd)
		}
	}
	return nil
}

// EndRound records that the round in flight is over: every worker of it
// has ended and been recorded.
func (d *Driver) EndRound() error {
	return d.run.lockedWaiting(bookkeeping, func(rec *loaded) error {
		if rec.round == nil {
			return nil
		}
		return d.run.clearRound(rec, d.self)
	})
}

// ReportUsageLimited records that a launch of job ended at the account's
// usage limit. The job is not at fault: free says the launch is not
// charged as an attempt and may be made again with the same hand-out,
// which holds for the first MaxUsageLimited such launches of a job in the
// run. Past them, the launch counts as a failed attempt like any other.
func (d *Driver) ReportUsageLimited(job, text string) (rep Report, free bool, err error) {
	return d.run.reportUsageLimited(d.self, bookkeeping, job, text)
}

// reportUsageLimited is Driver.ReportUsageLimited, and the report
// usage-limited that the command line takes, for the drive self or for no
// drive, waiting up to wait for the lock.
func (run *Run) reportUsageLimited(self Holder, wait time.Duration, job, text string) (rep Report, free bool, err error) {
	err = run.lockedWaiting(wait, func(rec *loaded) error {
		if err := run.ownLoop(rec, self); err != nil {
			return err
		}
		js := rec.state.Jobs[job]
		if js == nil {
			return refused("name a job that step has handed out", "job %q is not a job of run %s", job, run.records.Dir)
		}
		t := trouble(js)
		t.UsageLimited++
		free = t.UsageLimited <= MaxUsageLimited
		var err error
		rep, err = run.commitReport(rec, ReportUsageLimited, job, text)
		return err
	})
	return rep, free, err
}

// Decisions is what one step decided, as its history says: for custodian
// drive to tell the operator after every step.
type Decisions struct {
	Step      int          `json:"step"`
	Outcome   Kind         `json:"outcome"`
	Accepted  []string     `json:"accepted"`
	Refused   []Refusal    `json:"refused"`
	Spared    []string     `json:"spared"` // hand-outs without an output that no worker attempted
	Reopened  []string     `json:"reopened"`
	HandedOut []string     `json:"handed_out"`
	Effects   []EffectRun  `json:"effects"`
	Blocks    []BlockBrief `json:"blocks"`
}

// Refusal is a job's attempt a step refused, and the kind of refusal.
type Refusal struct {
	Job  string    `json:"job"`
	Kind BlockKind `json:"kind"`
}

// EffectRun is what became of an effect in a step: started, completed or
// absent.
type EffectRun struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// BlockBrief is a block of a step's outcome: its subject and kind.
type BlockBrief struct {
	Subject Subject   `json:"subject"`
	Kind    BlockKind `json:"kind"`
}

// Decisions reads what the run's last step decided. It takes no lock and
// writes nothing.
func (d *Driver) Decisions() (Decisions, error) {
	rec, err := d.run.read()
	if err != nil {
		return Decisions{}, err
	}
	dec := Decisions{Accepted: []string{}, Refused: []Refusal{}, Spared: []string{}, Reopened: []string{},
		HandedOut: []string{}, Effects: []EffectRun{}, Blocks: []BlockBrief{}}
	for seq := rec.state.Seq; seq > 0; seq-- {
		events, err := d.run.records.HistoryOf(seq)
		if err != nil {
			return Decisions{}, err
		}
		if len(events) == 0 || events[0].Type != store.EventStep {
			continue
		}
		dec.Step, dec.Outcome = events[0].Step, Kind(events[0].Text)
		for _, e := range events[1:] {
			switch e.Type {
			case store.EventAccept:
				dec.Accepted = append(dec.Accepted, e.Subject)
			case store.EventRefuse:
				dec.Refused = append(dec.Refused, Refusal{Job: e.Subject, Kind: BlockKind(e.Kind)})
			case store.EventSpare:
				dec.Spared = append(dec.Spared, e.Subject)
			case store.EventReopen:
				dec.Reopened = append(dec.Reopened, e.Subject)
			case store.EventHandout:
				dec.HandedOut = append(dec.HandedOut, e.Subject)
			case store.EventEffect:
				dec.Effects = append(dec.Effects, EffectRun{Name: e.Subject, Status: e.Text})
			case store.EventBlock:
				dec.Blocks = append(dec.Blocks, BlockBrief{Subject: Subject(e.Subject), Kind: BlockKind(e.Kind)})
			}
		}
		break
	}
	return dec, nil
}
