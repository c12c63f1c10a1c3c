package workflow

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// custodian drive carries the agent orchestrator's loop in code: it steps,
// launches a worker process per hand-out, waits for the round, and steps
// again. The engine keeps its round in flight (round.json) and the
// evidence of every launch, so that no worker is ever left running unseen
// and every attempt leaves evidence.

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
)

// ReportUsageLimited is the report of a launch that ended at the account's
// usage limit: the job is not at fault, and the launch is not charged as
// an attempt, up to MaxUsageLimited times per job.
const ReportUsageLimited = "usage-limited"

// MaxUsageLimited is how many launches of one job may end at a usage limit
// in a run without being charged; past it, such a launch is a failed
// attempt like any other.
const MaxUsageLimited = 5

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

// liveWorkers returns the recorded workers that still run: on this host,
// those Alive says run; on another host, all, since none can be seen.
func liveWorkers(rd *store.Round) (alive []Lease, elsewhere bool) {
	if rd == nil || len(rd.Workers) == 0 {
		return nil, false
	}
	if rd.Host != hostname() {
		return rd.Workers, true
	}
	for _, w := range rd.Workers {
		if Alive(w.Process.Pid, w.Process.Start) {
			alive = append(alive, w)
		}
	}
	return alive, false
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

// DriveAs says that this orchestrator acts for the custodian drive p: the
// drive's own steps, launches and records are let through while p drives
// the run, and every other command's refused.
func (o *Orchestrator) DriveAs(p Process) { o.driver = p }

// liveDriver says whether the drive a round records still runs: on this
// host, as Alive says; on another, it cannot be told, and counts as alive.
func liveDriver(rd *store.Round) (alive, elsewhere bool) {
	if rd == nil || rd.Driver.Pid == 0 {
		return false, false
	}
	if rd.Host != hostname() {
		return true, true
	}
	return Running(rd.Driver.Pid, rd.Driver.Start), false
}

// clearRound refuses while another drive drives the run, or while a
// recorded round has workers that run, and clears what a drive that ended
// without seeing its workers end left: its workers, and itself.
func (o *Orchestrator) clearRound(rec *loaded) error {
	rd := rec.round
	if rd == nil || len(rd.Workers) == 0 && rd.Driver.Pid == 0 {
		return nil
	}
	alive, elsewhere := liveDriver(rd)
	if alive && rd.Driver != o.driver {
		return &DriverAliveError{Run: o.run.Dir, Host: rd.Host, Driver: rd.Driver, Elsewhere: elsewhere}
	}
	if workers, elsewhere := liveWorkers(rd); len(workers) > 0 {
		return &WorkersAliveError{Run: o.run.Dir, Host: rd.Host, Workers: workers, Elsewhere: elsewhere}
	}
	if alive || len(rd.Workers) == 0 && rd.Driver.Pid == 0 {
		if len(rd.Workers) == 0 {
			return nil
		}
		rd.Workers = nil
		return o.run.SaveRound("round", rd)
	}
	// The drive has ended and its workers with it.
	return o.run.SaveRound("round", &store.Round{Step: rd.Step, Host: rd.Host})
}

// BeginDrive records that the drive this orchestrator acts for (DriveAs)
// drives the run from now on: every command but the drive's own is refused
// until EndDrive, or until the drive has ended. It refuses while another
// drive drives the run, or while workers of an earlier one run.
func (o *Orchestrator) BeginDrive() error {
	if o.driver.Pid == 0 {
		return errors.New("begin a drive: the orchestrator acts for no drive (DriveAs): a defect in custodian")
	}
	return o.locked(func(rec *loaded) error {
		if err := o.clearRound(rec); err != nil {
			return err
		}
		return o.run.SaveRound("round", &store.Round{Step: rec.state.Steps, Host: hostname(), Driver: o.driver})
	})
}

// EndDrive records that the drive has ended: the run is free for any
// loop. It leaves a round whose workers still run as it is.
func (o *Orchestrator) EndDrive() error {
	return o.locked(func(rec *loaded) error {
		rd := rec.round
		if rd == nil || rd.Driver != o.driver || len(rd.Workers) > 0 {
			return nil
		}
		return o.run.SaveRound("round", &store.Round{Step: rd.Step, Host: rd.Host})
	})
}

// RoundInFlight returns the round a drive has in flight, or nil. It takes
// no lock and writes nothing.
func (o *Orchestrator) RoundInFlight() (*Round, error) {
	rec, err := o.read()
	if err != nil {
		return nil, err
	}
	return rec.round, nil
}

// BeginRound records that the drive this orchestrator acts for begins a
// round of launches for the hand-outs of the last step, with no worker
// yet: each is leased as it starts. It refuses while an earlier round has
// workers that run.
func (o *Orchestrator) BeginRound() error {
	return o.locked(func(rec *loaded) error {
		if err := o.clearRound(rec); err != nil {
			return err
		}
		return o.run.SaveRound("round", &store.Round{Step: rec.state.Steps, Host: hostname(), Driver: o.driver})
	})
}

// Lease records a worker of the round in flight as soon as it has
// started, before anything waits on it.
func (o *Orchestrator) Lease(l Lease) error {
	return o.locked(func(rec *loaded) error {
		rd := rec.round
		if rd == nil {
			return fmt.Errorf("lease worker %s of run %s: no round is in flight: a defect in custodian", l.Job, o.run.Dir)
		}
		rd.Workers = append(rd.Workers, l)
		return o.run.SaveRound("round", rd)
	})
}

// NextLaunch returns the number the next launch of job gets.
func (o *Orchestrator) NextLaunch(job string) (int, error) { return o.run.NextLaunch(job) }

// RecordLaunch keeps the evidence of a launch that ended, or that never
// started (its stdout and stderr as kept, and launch.json), drops its
// worker from the round in flight, and records the launch in the history.
// It returns where the evidence is, run-relative.
func (o *Orchestrator) RecordLaunch(l *Launch, stdout, stderr []byte) (string, error) {
	var dir string
	err := o.locked(func(rec *loaded) error {
		if rec.state.Jobs[l.Job] == nil {
			return fmt.Errorf("record a launch of %q: the run has no such job: a defect in custodian", l.Job)
		}
		var err error
		if dir, err = o.run.SaveLaunch(l, stdout, stderr); err != nil {
			return err
		}
		if rd := rec.round; rd != nil {
			n := len(rd.Workers)
			rd.Workers = slices.DeleteFunc(rd.Workers, func(w Lease) bool { return w.Job == l.Job && w.Launch == l.Launch })
			if len(rd.Workers) != n {
				if err := o.run.SaveRound("round", rd); err != nil {
					return err
				}
			}
		}
		text := l.Outcome
		if l.Outcome != "failed-to-start" {
			status := fmt.Sprintf("exit %d", l.ExitStatus)
			if l.Signal != "" {
				status = "signal " + l.Signal
			}
			text += ", " + status
		}
		events := sealHistory(rec.state, rec.effects, []store.Event{{Type: store.EventLaunch, Subject: l.Job, Attempt: l.Attempt,
			Kind: l.Outcome, Text: text, Path: dir}})
		return o.commit("launch-state", rec.state, events)
	})
	return dir, err
}

// EndRound records that the round in flight is over: every worker of it
// has ended and been recorded.
func (o *Orchestrator) EndRound() error {
	return o.locked(func(rec *loaded) error {
		if rec.round == nil {
			return nil
		}
		return o.clearRound(rec)
	})
}

// ReportUsageLimited records that a launch of job ended at the account's
// usage limit. The job is not at fault: free says the launch is not
// charged as an attempt and may be made again with the same hand-out,
// which holds for the first MaxUsageLimited such launches of a job in the
// run. Past them, the launch counts as a failed attempt like any other.
func (o *Orchestrator) ReportUsageLimited(job, text string) (rep Report, free bool, err error) {
	err = o.locked(func(rec *loaded) error {
		js := rec.state.Jobs[job]
		if js == nil {
			return refused("name a job that step has handed out", "job %q is not a job of run %s", job, o.run.Dir)
		}
		t := trouble(js)
		t.UsageLimited++
		free = t.UsageLimited <= MaxUsageLimited
		var err error
		rep, err = o.commitReport(rec, ReportUsageLimited, job, text)
		return err
	})
	return rep, free, err
}
