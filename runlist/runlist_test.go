package runlist_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/custodian-run/custodian/internal/proc"
	"github.com/custodian-run/custodian/internal/snapshot"
	"github.com/custodian-run/custodian/runlist"
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// notes is a definition of one job, declaring patches: the listing's
// registry declares one that the runs were started without.
func notes(patches ...string) *workflow.Definition {
	return &workflow.Definition{
		Name:    "notes",
		Doc:     "summarizes notes.md",
		Patches: patches,
		Run: func(ctx *workflow.Context) error {
			ctx.Agent(workflow.Job{Name: "summary", Prompt: "Summarize the notes.", Output: "summary.md", Inputs: []string{"notes.md"}}).Wait()
			return nil
		},
	}
}

// registries returns the registry the tree's runs are started with, and
// the one they are listed with: the binary of today, whose notes declares
// the patch asks-for-owners and which no longer carries gone.
func registries(t *testing.T) (started, listed *workflow.Registry) {
	t.Helper()
	gone := &workflow.Definition{Name: "gone", Doc: "a definition since removed", Run: func(*workflow.Context) error { return nil }}
	started, err := workflow.NewRegistry(trial.Definition, notes(), gone)
	require.NoError(t, err)
	listed, err = workflow.NewRegistry(trial.Definition, notes("asks-for-owners"))
	require.NoError(t, err)
	return started, listed
}

// setup sets up a trial run of scenario at rel under root and opens it.
func setup(t *testing.T, reg *workflow.Registry, root, rel, scenario string) *engine.Run {
	t.Helper()
	dir, err := trial.Setup(reg, trial.SetupOptions{Scenario: scenario, Dir: filepath.Join(root, rel)})
	require.NoError(t, err)
	o, err := engine.Open(reg, dir)
	require.NoError(t, err)
	t.Cleanup(o.Close)
	return o
}

// steps takes n steps of o; after each that hands jobs out, a worker
// writes a valid output for each. It returns the last outcome.
func steps(t *testing.T, o *engine.Run, n int) engine.Outcome {
	t.Helper()
	var out engine.Outcome
	for range n {
		var err error
		out, err = o.Step()
		require.NoError(t, err)
		for _, h := range out.Jobs {
			require.NoError(t, trial.Valid(h))
		}
	}
	return out
}

// self is this test's own process, which runs: a drive round that names
// it has a live driver.
func self(t *testing.T) engine.Process {
	t.Helper()
	start, err := proc.StartTime(os.Getpid())
	require.NoError(t, err)
	return engine.Process{Pid: os.Getpid(), Start: start}
}

// tree makes a directory of runs in every state under root, with
// directories that are not runs, a run inside a run and links, and
// returns the registry to list it with.
func tree(t *testing.T, root string) *workflow.Registry {
	t.Helper()
	started, listed := registries(t)

	steps(t, setup(t, started, root, "clean/fresh", "clean"), 0)
	steps(t, setup(t, started, root, "clean/launched", "clean"), 1)
	require.Equal(t, engine.KindDone, steps(t, setup(t, started, root, "clean/done", "clean"), 3).Kind)
	steps(t, setup(t, started, root, "deep/er/run", "clean"), 0)
	// A run inside a run's own directory is the run's workers' ground: not
	// looked for.
	steps(t, setup(t, started, root, "clean/done/inner", "clean"), 0)

	require.Equal(t, engine.KindBlocked, steps(t, setup(t, started, root, "blocked", "stop"), 3).Kind)
	require.Equal(t, engine.KindBlocked, steps(t, setup(t, started, root, "stopped", "stop-only"), 3).Kind)
	released := setup(t, started, root, "released", "stop-only")
	require.Equal(t, engine.KindBlocked, steps(t, released, 3).Kind)
	require.NoError(t, released.Release(engine.JobSubject("assumptions")))

	// uncertain: a step ends inside publish, before it wrote anything: its
	// start is journaled and its end is not. Then half of it turns up, and
	// the next step's recognizer cannot tell.
	for _, rel := range []string{"interrupted", "uncertain"} {
		o := setup(t, started, root, rel, "uncertain")
		require.NoError(t, os.Remove(trial.InterruptMarker(o.Dir())))
		steps(t, o, 2)
		require.ErrorIs(t, o.StepEndingIn("publish", false), engine.ErrEndedInEffect)
		if rel == "uncertain" {
			require.NoError(t, os.MkdirAll(o.Dir()+".published", 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(o.Dir()+".published", "reconciled.md"), []byte("# R\n"), 0o644))
			require.Equal(t, engine.KindUncertain, steps(t, o, 1).Kind)
		}
	}

	abandoned := setup(t, started, root, "abandoned", "clean")
	steps(t, abandoned, 1)
	require.NoError(t, abandoned.Abandon("the source was withdrawn"))

	driven := setup(t, started, root, "driven", "clean")
	steps(t, driven, 1)
	require.NoError(t, driven.Driver(self(t)).Begin())

	held := setup(t, started, root, "held", "clean")
	steps(t, held, 1)
	require.NoError(t, held.WorkflowDriver(engine.Workflow{ID: "custodian-held", Namespace: "default", Address: "t:7233"}).Begin())

	untrusted := setup(t, started, root, "untrusted", "clean")
	steps(t, untrusted, 1)
	require.NoError(t, os.WriteFile(filepath.Join(untrusted.Dir(), engine.StateDir, "state.json"), []byte("garbage\n"), 0o644))

	gone, err := engine.Start(started, "gone", filepath.Join(root, "gone"), nil)
	require.NoError(t, err)
	gone.Close()
	patched, err := engine.Start(started, "notes", filepath.Join(root, "notes"), nil)
	require.NoError(t, err)
	patched.Close()

	// Not runs: plain files and directories, and a directory whose
	// .custodian holds no run.json.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "plain", "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "plain", "sub", "notes.md"), []byte("# N\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "half", engine.StateDir), 0o755))

	// Links are not followed: one to a directory of runs elsewhere, one to
	// the root itself, and a .custodian that is a link to another run's.
	elsewhere := t.TempDir()
	steps(t, setup(t, started, elsewhere, "run", "clean"), 1)
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(root, "link")))
	require.NoError(t, os.Symlink(root, filepath.Join(root, "plain", "loop")))
	require.NoError(t, os.Mkdir(filepath.Join(root, "linked"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "run", engine.StateDir), filepath.Join(root, "linked", engine.StateDir)))
	return listed
}

// lockAll takes the lock of every run under root that has a lock file, as
// another process stepping each would hold it.
func lockAll(t *testing.T, root string) {
	t.Helper()
	locks, err := filepath.Glob(filepath.Join(root, "*", engine.StateDir, "lock"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join(root, "*", "*", engine.StateDir, "lock"))
	require.NoError(t, err)
	require.NotEmpty(t, locks)
	for _, path := range append(locks, more...) {
		if info, err := os.Lstat(filepath.Dir(path)); err != nil || !info.IsDir() {
			continue // the linked run's: not this tree's
		}
		lock := flock.New(path)
		held, err := lock.TryLock()
		require.NoError(t, err)
		require.True(t, held, path)
		t.Cleanup(func() { _ = lock.Unlock() })
	}
}

// Every run under a directory is listed once, sorted by path, with where
// it stands; what is not a run is skipped, what cannot be read is listed
// with why, and nothing is written or locked.
func TestFind_listsEveryRunWhereItStands(t *testing.T) {
	root := t.TempDir()
	reg := tree(t, root)
	before := snapshot.Take(t, root)
	lockAll(t, root)

	entries, err := runlist.Find(reg, root)
	require.NoError(t, err)
	assert.Equal(t, before, snapshot.Take(t, root), "Find changed the tree")

	type want struct {
		definition, state, summary string
		lacks                      []string
		last                       engine.Kind // "" when never stepped
		reason                     string      // part of why it cannot be read
	}
	wants := map[string]want{
		"abandoned":      {"trial", runlist.Abandoned, "2 jobs: 2 awaited", nil, engine.KindLaunch, ""},
		"blocked":        {"trial", runlist.Blocked, "2 jobs: 1 accepted, 1 blocked", nil, engine.KindBlocked, ""},
		"clean/done":     {"trial", runlist.Done, "3 jobs: 3 accepted", nil, engine.KindDone, ""},
		"clean/fresh":    {"trial", runlist.InProgress, "0 jobs", nil, "", ""},
		"clean/launched": {"trial", runlist.InProgress, "2 jobs: 2 awaited", nil, engine.KindLaunch, ""},
		"deep/er/run":    {"trial", runlist.InProgress, "0 jobs", nil, "", ""},
		"driven":         {"trial", runlist.DrivenNow, "2 jobs: 2 awaited", nil, engine.KindLaunch, ""},
		"held":           {"trial", runlist.DrivenNow, "2 jobs: 2 awaited", nil, engine.KindLaunch, ""},
		"gone":           {"gone", runlist.Unreadable, "", nil, "", `it runs definition "gone", which this binary does not carry`},
		"half":           {"", runlist.Unreadable, "", nil, "", "has no .custodian/run.json: not a run"},
		"interrupted":    {"trial", runlist.Uncertain, "3 jobs: 2 accepted, 1 awaited", nil, engine.KindLaunch, ""},
		"linked":         {"", runlist.Unreadable, "", nil, "", "symbolic link"},
		"notes":          {"notes", runlist.InProgress, "0 jobs", []string{"asks-for-owners"}, "", ""},
		"released":       {"trial", runlist.InProgress, "2 jobs: 1 accepted, 1 pending", nil, engine.KindBlocked, ""},
		"stopped":        {"trial", runlist.Blocked, "2 jobs: 1 accepted, 1 stopped", nil, engine.KindBlocked, ""},
		"uncertain":      {"trial", runlist.Uncertain, "3 jobs: 2 accepted, 1 awaited", nil, engine.KindUncertain, ""},
		"untrusted":      {"trial", runlist.Unreadable, "", nil, "", "state.json cannot be trusted"},
	}
	var paths []string
	for _, e := range entries {
		paths = append(paths, e.Path)
	}
	var wantPaths []string
	for _, rel := range []string{"abandoned", "blocked", "clean/done", "clean/fresh", "clean/launched", "deep/er/run", "driven", "gone",
		"half", "held", "interrupted", "linked", "notes", "released", "stopped", "uncertain", "untrusted"} {
		wantPaths = append(wantPaths, filepath.Join(root, rel))
	}
	require.Equal(t, wantPaths, paths, "not every run, or not in order of path")

	for _, e := range entries {
		rel, err := filepath.Rel(root, e.Path)
		require.NoError(t, err)
		w := wants[rel]
		t.Run(rel, func(t *testing.T) {
			assert.Equal(t, w.definition, e.Definition)
			assert.Equal(t, w.state, e.State)
			assert.Equal(t, w.summary, e.Summary)
			assert.Equal(t, append([]string{}, w.lacks...), e.Lacks)
			if w.reason != "" {
				assert.Contains(t, e.Reason, w.reason)
				assert.NotEmpty(t, e.Hint)
				assert.Nil(t, e.Last)
				return
			}
			assert.Empty(t, e.Reason)
			assert.Empty(t, e.Hint)
			if w.last == "" {
				assert.Nil(t, e.Last)
				return
			}
			require.NotNil(t, e.Last)
			assert.Equal(t, w.last, e.Last.Outcome)
			assert.NotZero(t, e.Last.Step)
			assert.NotEmpty(t, e.Last.At)
			assert.Equal(t, engine.ThisBuild(), e.Last.Build)
			assert.Equal(t, engine.BuildText(engine.ThisBuild()), e.Last.BuildText)
		})
	}
}

// The counts of jobs by state are those of the summary.
func TestFind_countsJobsByState(t *testing.T) {
	root := t.TempDir()
	reg := tree(t, root)
	entries, err := runlist.Find(reg, filepath.Join(root, "stopped"), filepath.Join(root, "interrupted"), filepath.Join(root, "half"))
	require.NoError(t, err)
	require.Len(t, entries, 3)
	assert.Equal(t, runlist.JobCounts{}, entries[0].Jobs, "half")
	assert.Equal(t, runlist.JobCounts{Total: 3, Accepted: 2, Awaited: 1}, entries[1].Jobs, "interrupted")
	assert.Equal(t, runlist.JobCounts{Total: 2, Accepted: 1, Stopped: 1}, entries[2].Jobs, "stopped")
}

// Directories given twice, or one inside another, list each run once; a
// directory given that is a run is listed itself; no directory means the
// working directory.
func TestFind_directoriesGiven(t *testing.T) {
	root := t.TempDir()
	reg := tree(t, root)
	all, err := runlist.Find(reg, root)
	require.NoError(t, err)

	tests := []struct {
		name string
		dirs []string
		want int
	}{
		{"twice", []string{root, root}, len(all)},
		{"one inside another", []string{filepath.Join(root, "clean"), root}, len(all)},
		{"a run", []string{filepath.Join(root, "clean", "done")}, 1},
		{"a directory inside a run", []string{filepath.Join(root, "clean", "done", "inner")}, 1},
		{"a relative one", []string{"clean"}, 3},
		{"none", nil, len(all)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(root)
			entries, err := runlist.Find(reg, tt.dirs...)
			require.NoError(t, err)
			assert.Len(t, entries, tt.want)
			for _, e := range entries {
				assert.True(t, filepath.IsAbs(e.Path), e.Path)
			}
		})
	}
}

// A directory given that does not exist, or is not a directory, is an
// error that names it: the request fails, exit 1.
func TestFind_aMissingDirectoryIsAnError(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	tests := []struct {
		dir, says string
	}{
		{filepath.Join(root, "nosuch"), filepath.Join(root, "nosuch") + " does not exist"},
		{file, file + " is not a directory"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.dir), func(t *testing.T) {
			_, err := runlist.Find(engineRegistry(t), root, tt.dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.says)
			assert.Equal(t, engine.ExitFailed, engine.ExitCode(err))
			assert.NotEmpty(t, engine.Hint(err))
		})
	}
}

func engineRegistry(t *testing.T) *workflow.Registry {
	t.Helper()
	_, listed := registries(t)
	return listed
}

// The state words are the ones an Entry's State takes, each once.
func TestStatesAreTheWords(t *testing.T) {
	assert.Equal(t, []string{"in progress", "blocked", "uncertain", "done", "abandoned", "driven now", "unreadable"}, runlist.States)
}
