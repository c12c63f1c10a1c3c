// Package runlist finds the runs under directories and says where each
// stands, in a line's worth: what `custodian runs` lists. It reads each
// run as `custodian status` does, through engine.Open and Run.Status: no
// lock, no write, and a run being stepped or driven is seen as it was last
// committed.
//
// The walk follows no symbolic link below the directories it is given and
// does not look inside a run: a run's directory is its workers' ground,
// where anything may lie, a forged run or a tree of a million files
// included. So a run kept inside another run's directory is not listed,
// unless a directory inside the outer run is given.
package runlist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"golang.org/x/sys/unix"
)

// The words for where a run stands, an Entry's State. The first that
// applies is the run's.
const (
	// Abandoned: the operator ended the run for good.
	Abandoned = "abandoned"
	// DrivenNow: a custodian drive that still runs drives the run (one on
	// another host, which cannot be seen from here, counts as running).
	// The rest of the entry is the run as the drive last committed it.
	DrivenNow = "driven now"
	// Uncertain: the fate of an effect is unknown: the last step found it
	// uncertain and the operator has not resolved it, or an effect's start
	// is journaled and its end is not (a process ended inside it, or a
	// step is inside it now).
	Uncertain = "uncertain"
	// Blocked: a block of the last step stands that the agent orchestrator
	// repairs or the operator settles: a job blocked or stopped, the
	// workflow stopped, an effect blocked, a question asked.
	Blocked = "blocked"
	// Done: the last step found the run done.
	Done = "done"
	// InProgress: none of the others: never stepped, jobs handed out, or
	// the operator settled every block since the last step.
	InProgress = "in progress"
	// Unreadable: this binary cannot read the run: a record cannot be
	// trusted (what every command refuses with exit 4), the run's
	// definition is not one this binary carries, or a file cannot be read.
	// Entry.Reason says which.
	Unreadable = "unreadable"
)

// States are the words of an Entry's State, in the order the docs give
// them.
var States = []string{InProgress, Blocked, Uncertain, Done, Abandoned, DrivenNow, Unreadable}

// Entry is one run: where it stands, in a line's worth. An unreadable run
// has its path, its definition when run.json names one, and why.
type Entry struct {
	// Path is the run directory, absolute, as it was reached: links in
	// the directories given are kept, not resolved.
	Path string `json:"path"`
	// Definition is the definition the run records; "" when run.json
	// cannot be read.
	Definition string `json:"definition"`
	State      string `json:"state"` // one of States
	// Summary counts the jobs by state in words, engine.Status.Summary:
	// "31 jobs: 28 accepted, 2 awaited, 1 blocked"; "" for an unreadable run.
	Summary string    `json:"summary"`
	Jobs    JobCounts `json:"jobs"`
	// Last is the last step; nil before the first, and for an unreadable
	// run.
	Last *Last `json:"last"`
	// Lacks are the patches this binary's definition declares that the
	// run was started without: in the run, ctx.Patched says false for them.
	Lacks []string `json:"lacks"`
	// Reason and Hint say, for an unreadable run, why and what to do: the
	// message and hint the run's commands would end with.
	Reason string `json:"reason"`
	Hint   string `json:"hint"`
}

// JobCounts counts a run's jobs by their state in engine.Status.
type JobCounts struct {
	Total         int `json:"total"`
	Accepted      int `json:"accepted"`
	Awaited       int `json:"awaited"`
	Blocked       int `json:"blocked"`
	Stopped       int `json:"stopped"`
	Pending       int `json:"pending"`
	NoLongerNamed int `json:"no_longer_named"`
}

// Last is a run's last step: when it was taken, what it gave, and the
// build that took it.
type Last struct {
	Step    int          `json:"step"`
	At      string       `json:"at"`
	Outcome engine.Kind  `json:"outcome"`
	Build   engine.Build `json:"build"`
	// BuildText is Build in words, engine.BuildText, as `custodian
	// version` names a binary.
	BuildText string `json:"build_text"`
}

// Find returns every run under dirs, the working directory when none is
// given, sorted by path, each once. A directory that holds a .custodian
// entry of any kind is a run, and is not walked further; any other
// directory is walked, but no symbolic link below dirs is followed (dirs
// themselves may be links). A run that cannot be read, and a directory
// the walk cannot read, which may hold runs, are entries too, Unreadable,
// with why: none is left out silently. Find fails only for a directory
// given that does not exist, is not a directory, or cannot be opened.
func Find(reg *workflow.Registry, dirs ...string) ([]Entry, error) {
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	f := &finder{reg: reg, found: map[string]Entry{}}
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("runs %s: %w", dir, err)
		}
		// The directory given is the operator's word: a link is followed.
		fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil, &engine.RefusedError{Reason: abs + " does not exist", Hint: hint}
		case errors.Is(err, unix.ENOTDIR):
			return nil, &engine.RefusedError{Reason: abs + " is not a directory", Hint: hint}
		case err != nil:
			return nil, &store.IOError{Op: "open", Path: abs, Err: err}
		}
		f.visit(fd, abs)
	}
	out := make([]Entry, 0, len(f.found))
	for _, e := range f.found {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		switch {
		case a.Path < b.Path:
			return -1
		case a.Path > b.Path:
			return 1
		}
		return 0
	})
	return out, nil
}

const hint = "check the path: custodian runs lists the runs under the directories it is given, or under the working directory"

// finder is one Find: the runs found so far, by path.
type finder struct {
	reg   *workflow.Registry
	found map[string]Entry
}

// visit lists the directory dir, open as fd, which it closes: as a run
// when it holds a .custodian entry, else by walking its subdirectories.
func (f *finder) visit(fd int, dir string) {
	dirFile := os.NewFile(uintptr(fd), dir)
	defer dirFile.Close()
	if _, seen := f.found[dir]; seen {
		return
	}
	var st unix.Stat_t
	switch err := unix.Fstatat(fd, store.StateDir, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		// A .custodian that is a file or a link is listed too: the run's
		// commands say what is wrong with it.
		f.found[dir] = f.entry(dir)
		return
	case !errors.Is(err, unix.ENOENT):
		f.found[dir] = unreadable(Entry{Path: dir}, &store.IOError{Op: "read", Path: dir, Err: err})
		return
	}
	children, err := dirFile.ReadDir(-1)
	if err != nil {
		f.found[dir] = unreadable(Entry{Path: dir}, &store.IOError{Op: "read", Path: dir, Err: err})
		return
	}
	for _, c := range children {
		// The entry's type is what lstat says: a link is not a directory.
		if !c.IsDir() {
			continue
		}
		child := filepath.Join(dir, c.Name())
		cfd, err := unix.Openat(fd, c.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ENOENT):
			// Replaced since it was listed, by a link or a file, or gone:
			// nothing to walk.
			continue
		case err != nil:
			f.found[child] = unreadable(Entry{Path: child}, &store.IOError{Op: "open", Path: child, Err: err})
			continue
		}
		f.visit(cfd, child)
	}
}

// entry reads the run in dir as status does.
func (f *finder) entry(dir string) Entry {
	e := Entry{Path: dir, Lacks: []string{}}
	o, err := engine.Open(f.reg, dir)
	if err != nil {
		// The definition is one this binary does not carry, or run.json
		// cannot be read; in the first case, run.json still names it.
		if r, err := store.Open(dir); err == nil {
			e.Definition = r.Record.Definition
			r.Close()
		}
		return unreadable(e, err)
	}
	defer o.Close()
	def := o.Definition()
	e.Definition = def.Name
	s, err := o.Status()
	if err != nil {
		return unreadable(e, err)
	}
	e.State = standing(s)
	e.Summary = s.Summary()
	e.Jobs = counts(s.Jobs)
	if s.Last != nil {
		e.Last = &Last{Step: s.Last.Step, At: s.Last.At, Outcome: s.Last.Outcome.Kind,
			Build: s.Builds.Stepped, BuildText: engine.BuildText(s.Builds.Stepped)}
	}
	for _, p := range def.Patches {
		if !slices.Contains(s.Patches, p) {
			e.Lacks = append(e.Lacks, p)
		}
	}
	return e
}

// unreadable is e, a run or a directory that cannot be read because of
// err.
func unreadable(e Entry, err error) Entry {
	e.State, e.Reason, e.Hint = Unreadable, err.Error(), engine.Hint(err)
	if e.Lacks == nil {
		e.Lacks = []string{}
	}
	return e
}

// standing is the word for where the run s stands: the first that applies
// of abandoned, driven now, uncertain, blocked, done and in progress. It
// reads the status as its advice does, so that the word agrees with what
// status tells the agent orchestrator: what the operator released or
// resolved since the last step no longer stands.
func standing(s engine.Status) string {
	switch {
	case s.Abandoned != nil:
		return Abandoned
	case s.Round != nil && (s.Round.Driver.Pid != 0 || s.Round.Workflow != nil):
		return DrivenNow
	case uncertain(s):
		return Uncertain
	case blocked(s):
		return Blocked
	case s.Last != nil && s.Last.Outcome.Kind == engine.KindDone:
		return Done
	}
	return InProgress
}

func uncertain(s engine.Status) bool {
	if len(s.Uncertain) > 0 {
		return true
	}
	return slices.ContainsFunc(s.Effects, func(e engine.EffectStatus) bool { return e.Uncertain != "" || e.Interrupted })
}

func blocked(s engine.Status) bool {
	return s.Workflow != nil || len(s.Blocks) > 0 || len(s.Questions) > 0 ||
		slices.ContainsFunc(s.Jobs, func(j engine.JobStatus) bool { return j.Block != nil }) ||
		slices.ContainsFunc(s.Effects, func(e engine.EffectStatus) bool { return e.Block != nil })
}

// counts counts jobs by state.
func counts(jobs []engine.JobStatus) JobCounts {
	c := JobCounts{Total: len(jobs)}
	for _, j := range jobs {
		switch j.State {
		case engine.JobAccepted:
			c.Accepted++
		case engine.JobAwaited:
			c.Awaited++
		case engine.JobBlocked:
			c.Blocked++
		case engine.JobStopped:
			c.Stopped++
		case engine.JobPending:
			c.Pending++
		case engine.JobNoLongerUsed:
			c.NoLongerNamed++
		}
	}
	return c
}
