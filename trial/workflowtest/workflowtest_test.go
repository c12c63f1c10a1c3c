package workflowtest_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/trial/workflowtest"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that keeps what a helper reports instead of
// failing the test that runs it.
type recorder struct {
	testing.TB
	failures []string
	logs     []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func summary(prompt string) *workflow.Definition {
	return &workflow.Definition{Name: "summary", Run: func(ctx *workflow.Context) error {
		ctx.Agent(workflow.Job{Name: "summary", Prompt: prompt, Output: "summary.md", Inputs: []string{"notes.md"}}).Wait()
		return nil
	}}
}

// recordRun drives a run of def to its end under dir and returns it.
func recordRun(t *testing.T, def *workflow.Definition, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte("notes\n"), 0o644))
	reg, err := workflow.NewRegistry(def)
	require.NoError(t, err)
	o, err := engine.Start(reg, def.Name, dir, nil)
	require.NoError(t, err)
	defer o.Close()
	for range 5 {
		out, err := o.Step()
		require.NoError(t, err)
		if out.Kind == engine.KindDone {
			return
		}
		for _, h := range out.Jobs {
			require.NoError(t, os.WriteFile(h.Output, []byte("# Summary\n"), 0o644))
		}
	}
	t.Fatal("the run did not finish")
}

func TestReplay(t *testing.T) {
	runs := t.TempDir()
	recordRun(t, summary("Summarize the notes."), filepath.Join(runs, "first"))
	recordRun(t, summary("Summarize the notes."), filepath.Join(runs, "nested", "second"))

	same, err := workflow.NewRegistry(summary("Summarize the notes."))
	require.NoError(t, err)
	r := &recorder{TB: t}
	workflowtest.Replay(r, same, filepath.Join(runs, "first"))
	assert.Empty(t, r.failures, "an unchanged definition replays a recorded run")
	workflowtest.ReplayAll(t, same, runs)

	changed, err := workflow.NewRegistry(summary("Summarize the notes, and name every risk."))
	require.NoError(t, err)
	r = &recorder{TB: t}
	workflowtest.Replay(r, changed, filepath.Join(runs, "first"))
	require.Len(t, r.failures, 1, "a changed definition fails the replay")
	assert.Contains(t, r.failures[0], "would change at its next step")
	assert.Contains(t, r.failures[0], "- summary: the definition changed it: the prompt changed")
	assert.Contains(t, r.failures[0], "+Summarize the notes, and name every risk.")
}

// A test ends a step inside an effect as a crash would, and the next step
// asks the recognizer: the definition carries no hook for it.
func TestCrashIn(t *testing.T) {
	for _, tc := range []struct {
		ranDo bool
		runs  int // how often do ran in all
	}{
		{ranDo: true, runs: 1},  // it took place: the recognizer says completed
		{ranDo: false, runs: 1}, // it did not: absent, so it runs at the next step
	} {
		t.Run(fmt.Sprint("ran do: ", tc.ranDo), func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(t.TempDir(), "published.md")
			runs := 0
			def := &workflow.Definition{Name: "publish", Run: func(ctx *workflow.Context) error {
				ctx.Effect("publish", func() error {
					runs++
					return os.WriteFile(target, []byte("published\n"), 0o644)
				}, workflow.Recognize(func() (workflow.Recognition, error) {
					_, err := os.Stat(target)
					switch {
					case err == nil:
						return workflow.Completed, nil
					case errors.Is(err, fs.ErrNotExist):
						return workflow.Absent, nil
					}
					return workflow.Unknown, err
				}))
				return nil
			}}
			reg, err := workflow.NewRegistry(def)
			require.NoError(t, err)
			o, err := engine.Start(reg, "publish", dir, nil)
			require.NoError(t, err)
			defer o.Close()

			workflowtest.CrashIn(t, o, "publish", tc.ranDo)
			s, err := o.Status()
			require.NoError(t, err)
			require.Len(t, s.Effects, 1)
			assert.True(t, s.Effects[0].Interrupted, "the step ended inside the effect")

			out, err := o.Step()
			require.NoError(t, err)
			assert.Equal(t, engine.KindDone, out.Kind)
			assert.Equal(t, tc.runs, runs)
			assert.FileExists(t, target)
		})
	}
}

func TestCrashInAnEffectNeverReached(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte("notes\n"), 0o644))
	reg, err := workflow.NewRegistry(summary("Summarize."))
	require.NoError(t, err)
	o, err := engine.Start(reg, "summary", dir, nil)
	require.NoError(t, err)
	defer o.Close()
	r := &recorder{TB: t}
	workflowtest.CrashIn(r, o, "publish", true)
	require.Len(t, r.failures, 1)
	assert.True(t, strings.Contains(r.failures[0], "never reached effect publish"), r.failures[0])
}

// A test scripts the operator's decision; a recorded run that holds one
// replays unchanged, the replay returning the choice.
func TestDecide(t *testing.T) {
	def := &workflow.Definition{Name: "gate", Run: func(ctx *workflow.Context) error {
		if ctx.Decide("go-ahead", "Summarize the notes?", "yes", "no") == "yes" {
			ctx.Agent(workflow.Job{Name: "summary", Prompt: "Summarize the notes.", Output: "summary.md", Inputs: []string{"notes.md"}}).Wait()
		}
		return nil
	}}
	reg, err := workflow.NewRegistry(def)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte("notes\n"), 0o644))
	o, err := engine.Start(reg, "gate", dir, nil)
	require.NoError(t, err)
	defer o.Close()

	out, err := o.Step()
	require.NoError(t, err)
	require.Equal(t, engine.KindBlocked, out.Kind)
	r := &recorder{TB: t}
	workflowtest.Decide(r, o, "go-ahead", "maybe", "")
	require.Len(t, r.failures, 1, "a choice the question does not offer fails the test")
	assert.Contains(t, r.failures[0], `"maybe" is not a choice of decision go-ahead`)

	workflowtest.Decide(t, o, "go-ahead", "yes", "a test says so")
	out, err = o.Step()
	require.NoError(t, err)
	require.Equal(t, engine.KindLaunch, out.Kind)
	require.NoError(t, os.WriteFile(out.Jobs[0].Output, []byte("# Summary\n"), 0o644))
	out, err = o.Step()
	require.NoError(t, err)
	require.Equal(t, engine.KindDone, out.Kind)
	workflowtest.Replay(t, reg, dir)
}

// renamed is summary renamed risk-summary, with Formerly: the guide's
// no-op rename.
func renamed() *workflow.Definition {
	return &workflow.Definition{Name: "summary", Run: func(ctx *workflow.Context) error {
		ctx.Agent(workflow.Job{Name: "risk-summary", Formerly: []string{"summary"}, Prompt: "Summarize the notes.",
			Output: "summary.md", Inputs: []string{"notes.md"}}).Wait()
		return nil
	}}
}

// A carry-over by Formerly leaves every accepted output in place: a
// recorded run replays with a note, not a failure, and recorded again it
// replays without one.
func TestReplayAfterARename(t *testing.T) {
	live, runs := filepath.Join(t.TempDir(), "live"), t.TempDir()
	fixture := filepath.Join(runs, "first")
	recordRun(t, summary("Summarize the notes."), live)
	before, err := workflow.NewRegistry(summary("Summarize the notes."))
	require.NoError(t, err)
	workflowtest.Record(t, before, live, fixture)
	reg, err := workflow.NewRegistry(renamed())
	require.NoError(t, err)

	r := &recorder{TB: t}
	workflowtest.Replay(r, reg, fixture)
	assert.Empty(t, r.failures, "a carry-over fails no replay")
	require.Len(t, r.logs, 1)
	assert.Contains(t, r.logs[0], "- risk-summary: carried over from its former name summary, accepted as it was")
	assert.Contains(t, r.logs[0], "record it again")

	c := workflowtest.Record(t, reg, fixture, fixture)
	assert.True(t, c.Changed)
	r = &recorder{TB: t}
	workflowtest.Replay(r, reg, fixture)
	assert.Empty(t, r.failures)
	assert.Empty(t, r.logs, "the fixture recorded again holds the new name")
	workflowtest.ReplayAll(t, reg, runs)
}

// Record makes a fixture of a live run, elsewhere, that replays unchanged.
func TestRecord(t *testing.T) {
	live := filepath.Join(t.TempDir(), "live")
	recordRun(t, summary("Summarize the notes."), live)
	reg, err := workflow.NewRegistry(summary("Summarize the notes."))
	require.NoError(t, err)
	fixture := filepath.Join(t.TempDir(), "testdata", "runs", "summary")
	require.NoError(t, os.MkdirAll(filepath.Dir(fixture), 0o755))

	c := workflowtest.Record(t, reg, live, fixture)
	assert.False(t, c.Changed)
	assert.NoFileExists(t, filepath.Join(fixture, ".custodian", "lock"))
	assert.FileExists(t, filepath.Join(fixture, ".custodian", "state.json"))
	workflowtest.Replay(t, reg, fixture)

	r := &recorder{TB: t}
	workflowtest.Record(r, reg, live, live)
	require.Len(t, r.failures, 1, "a live run is not recorded in its own place")
	assert.Contains(t, r.failures[0], "it is a live run")
}
