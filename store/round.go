package store

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/custodian-run/custodian/internal/names"
)

// RoundFormat is the format of round.json this version reads and writes.
// Format 2 added the workflow that holds a run and each lease's host and
// expiry (custodian-temporal); a round of format 1 is read as one without
// them.
const RoundFormat = 2

// olderRounds are the formats of round.json this version reads besides its
// own, with the fields, by struct type, that each lacks.
var olderRounds = older{1: {
	reflect.TypeFor[Round](): {"workflow"},
	reflect.TypeFor[Lease](): {"host", "expires"},
}}

// Round is round.json: the round of workers that custodian drive has in
// flight. Drive records each worker as soon as it starts, so that no
// worker is ever left running unseen: a step that finds a recorded worker
// still alive refuses, and a drive after a crash can end it (--reclaim).
type Round struct {
	Format int    `json:"format"`
	Run    string `json:"run"`
	// Step is the step whose hand-outs the round launches.
	Step int `json:"step"`
	// Host is the machine the workers run on: only there can they be seen.
	Host   string  `json:"host"`
	Driver Process `json:"driver"`
	// Workflow is the Temporal workflow that holds the run while
	// custodian-temporal drives it; nil otherwise. A workflow outlives the
	// processes that carry it, so it is named, not a process.
	Workflow *Workflow `json:"workflow"`
	Workers  []Lease   `json:"workers"`
}

// Workflow names a Temporal workflow: where its server is, its namespace
// and its ID.
type Workflow struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
	Address   string `json:"address"`
}

// Process names one process: its pid, and its start time, which tells it
// from a later process given the same pid.
type Process struct {
	Pid   int    `json:"pid"`
	Start string `json:"start"`
}

// Lease is one worker of a round.
type Lease struct {
	Job     string  `json:"job"`
	Attempt int     `json:"attempt"` // the hand-out it works on
	Launch  int     `json:"launch"`  // its launch of the job: jobs/<job>/launch-<n>/
	Process Process `json:"process"`
	// Host is the machine the worker runs on when it is not the round's: a
	// worker host of custodian-temporal. Empty: the round's host.
	Host string `json:"host"`
	// Expires is when the worker can no longer write, whatever became of
	// its host, in RFC 3339: past it, the lease is over. Empty: the lease
	// lasts while the worker's process runs.
	Expires string `json:"expires"`
}

// Where returns the host the worker runs on.
func (l Lease) Where(rd *Round) string {
	if l.Host != "" {
		return l.Host
	}
	return rd.Host
}

// Expired says whether the lease has an expiry, and it has passed at now.
func (l Lease) Expired(now time.Time) bool {
	t, err := time.Parse(time.RFC3339Nano, l.Expires)
	return l.Expires != "" && err == nil && now.After(t)
}

// LoadRound reads round.json, or returns nil when there is none.
func (r *Run) LoadRound() (*Round, error) {
	rel := statePath("round.json")
	var rd Round
	found, err := r.readRecordOf(rel, &rd, RoundFormat, func() int { return rd.Format }, olderRounds)
	if err != nil || !found {
		return nil, err
	}
	if err := rd.check(r.Record.ID); err != nil {
		return nil, &RecordError{Path: r.abs(rel), Err: err}
	}
	return &rd, nil
}

func (rd *Round) check(run string) error {
	switch {
	case rd.Run != run:
		return fmt.Errorf("it belongs to run %s, not to this run (%s)", rd.Run, run)
	case rd.Step < 0 || rd.Driver.Pid < 0:
		return fmt.Errorf("a number is negative")
	case strings.ContainsFunc(rd.Host, isControl):
		return fmt.Errorf("host %q holds a control character", rd.Host)
	}
	if w := rd.Workflow; w != nil && (w.ID == "" || strings.ContainsFunc(w.ID+w.Namespace+w.Address, isControl)) {
		return fmt.Errorf("workflow %q is not a workflow's name", w.ID)
	}
	for i, l := range rd.Workers {
		if !names.Valid(l.Job) || l.Attempt < 1 || l.Launch < 1 || l.Process.Pid < 1 {
			return fmt.Errorf("workers[%d] is not a worker: job %q, attempt %d, launch %d, pid %d", i, l.Job, l.Attempt, l.Launch, l.Process.Pid)
		}
		if strings.ContainsFunc(l.Host, isControl) {
			return fmt.Errorf("workers[%d]: host %q holds a control character", i, l.Host)
		}
		if _, err := time.Parse(time.RFC3339Nano, l.Expires); l.Expires != "" && err != nil {
			return fmt.Errorf("workers[%d]: expires %q is not a time", i, l.Expires)
		}
	}
	return nil
}

// SaveRound replaces round.json. label names the write point.
func (r *Run) SaveRound(label string, rd *Round) error {
	rd.Format, rd.Run = RoundFormat, r.Record.ID
	if rd.Workers == nil {
		rd.Workers = []Lease{}
	}
	return r.writeRecord(label, statePath("round.json"), rd)
}

// LaunchFormat is the format of a launch.json this version writes.
const LaunchFormat = 1

// Launch is jobs/<job>/launch-<n>/launch.json: the evidence of one launch
// of a worker by custodian drive, beside the worker's stdout and stderr.
// The worker's exit status and final message are evidence only: the step
// judges the job by its output.
type Launch struct {
	Format  int      `json:"format"`
	Run     string   `json:"run"`
	Job     string   `json:"job"`
	Attempt int      `json:"attempt"` // the hand-out the worker worked on
	Launch  int      `json:"launch"`  // n: the job's n-th launch
	Worker  string   `json:"worker"`  // the profile: claude, codex or exec
	Command []string `json:"command"` // the command line, as run
	// Env names every environment variable passed to the worker; their
	// values are not kept.
	Env       []string `json:"env"`
	Host      string   `json:"host"`
	Process   Process  `json:"process"`
	StartedAt string   `json:"started_at"`
	EndedAt   string   `json:"ended_at"`
	// Outcome is how the launch ended: finished, failed-to-start,
	// timed-out, idle, usage-limited or killed.
	Outcome    string       `json:"outcome"`
	ExitStatus int          `json:"exit_status"` // -1 when a signal ended it or it never ran
	Signal     string       `json:"signal"`      // the signal that ended it, if any
	Session    string       `json:"session"`     // the worker's session or thread id, when it named one
	Message    string       `json:"message"`     // the worker's final message, or why it did not start
	UsageLimit *UsageLimit  `json:"usage_limit"` // when the account hit a usage limit
	Stdout     OutputRecord `json:"stdout"`
	Stderr     OutputRecord `json:"stderr"`
}

// UsageLimit is an account's usage limit a worker hit.
type UsageLimit struct {
	Known   bool   `json:"known"`   // whether the reset time was read
	Resets  string `json:"resets"`  // when it resets, RFC 3339; empty when unknown
	Message string `json:"message"` // what the worker said
}

// OutputRecord says what of a worker's output stream the evidence keeps.
type OutputRecord struct {
	Bytes int64 `json:"bytes"` // how many the worker wrote
	Kept  int   `json:"kept"`  // how many are kept: the last ones
}

// LaunchDir is where the evidence of a job's n-th launch is kept.
func LaunchDir(job string, n int) string {
	return path.Join(StateDir, "jobs", job, "launch-"+strconv.Itoa(n))
}

// NextLaunch returns the number of a job's next launch: one past the
// launches whose evidence is kept.
func (r *Run) NextLaunch(job string) (int, error) {
	kept, err := r.Launches(job)
	if err != nil || len(kept) == 0 {
		return 1, err
	}
	return kept[len(kept)-1] + 1, nil
}

// Launches returns the numbers of a job's launches whose evidence is kept,
// jobs/<job>/launch-<n>/, in order. A name beside them that is not
// launch-<n>, as LaunchDir spells it, is not a launch.
func (r *Run) Launches(job string) ([]int, error) {
	if !names.Valid(job) {
		return nil, fmt.Errorf("launches of %q: not a job's name", job)
	}
	dir := statePath("jobs", job)
	entries, err := r.tree.names(dir)
	if err != nil {
		return nil, r.readError(dir, err)
	}
	var kept []int
	for _, name := range entries {
		rest, ok := strings.CutPrefix(name, "launch-")
		if n, err := strconv.Atoi(rest); ok && err == nil && n >= 1 && strconv.Itoa(n) == rest {
			kept = append(kept, n)
		}
	}
	slices.Sort(kept)
	return kept, nil
}

// SaveLaunch keeps the evidence of a launch: the worker's stdout and
// stderr as kept, then launch.json, which names them. A nil stdout or
// stderr keeps what the evidence already holds (a drive that ended before
// it recorded its worker may have written it), or an empty file. It
// returns the evidence's directory, run-relative.
func (r *Run) SaveLaunch(l *Launch, stdout, stderr []byte) (string, error) {
	if !names.Valid(l.Job) || l.Launch < 1 {
		return "", fmt.Errorf("keep launch %d of %q: not a launch", l.Launch, l.Job)
	}
	l.Format, l.Run = LaunchFormat, r.Record.ID
	if l.Command == nil {
		l.Command = []string{}
	}
	if l.Env == nil {
		l.Env = []string{}
	}
	dir := LaunchDir(l.Job, l.Launch)
	for _, out := range []struct {
		name string
		data []byte
	}{{"stdout", stdout}, {"stderr", stderr}} {
		rel := path.Join(dir, out.name)
		if out.data == nil {
			info, err := r.Stat(rel)
			if err != nil {
				return "", err
			}
			if info.Kind != Missing {
				rec := &l.Stdout
				if out.name == "stderr" {
					rec = &l.Stderr
				}
				rec.Kept, rec.Bytes = int(info.Size), max(rec.Bytes, info.Size)
				continue
			}
		}
		if err := r.WriteText("launch-output", rel, out.data); err != nil {
			return "", err
		}
	}
	if err := r.SyncTexts(); err != nil {
		return "", err
	}
	return dir, r.writeRecord("launch", path.Join(dir, "launch.json"), l)
}

// LoadLaunch reads the evidence record of a launch.
func (r *Run) LoadLaunch(job string, n int) (*Launch, error) {
	rel := path.Join(LaunchDir(job, n), "launch.json")
	var l Launch
	found, err := r.readRecord(rel, &l, LaunchFormat, func() int { return l.Format })
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, untrusted(r.abs(rel), "it is missing")
	}
	// The record is untrusted input: one copied from another run, job or
	// launch would tell another launch's story as this one's.
	switch {
	case l.Run != r.Record.ID:
		return nil, untrusted(r.abs(rel), "it belongs to run %s, not to this run (%s)", l.Run, r.Record.ID)
	case l.Job != job || l.Launch != n:
		return nil, untrusted(r.abs(rel), "it records launch %d of job %s, not launch %d of job %s", l.Launch, l.Job, n, job)
	}
	return &l, nil
}
