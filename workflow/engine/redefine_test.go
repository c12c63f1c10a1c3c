package engine_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// versioned is a definition whose code a test changes between steps, as a
// new binary would: two jobs, a then b reading a's output.
type versioned struct {
	promptA  string
	launchB  map[string]any
	nameB    string
	formerly []string
	outputB  string
	patches  []string
	patched  func(ctx *workflow.Context) // called at the top of Run
	dropB    bool
}

func newVersioned() *versioned {
	return &versioned{promptA: "Do a.", nameB: "b", outputB: "b.md"}
}

func (v *versioned) definition() *workflow.Definition {
	return &workflow.Definition{Name: "versioned", Patches: v.patches, Run: func(ctx *workflow.Context) error {
		if v.patched != nil {
			v.patched(ctx)
		}
		a := job("a")
		a.Prompt = v.promptA
		ctx.Agent(a).Wait()
		if v.dropB {
			return nil
		}
		ctx.Agent(workflow.Job{Name: v.nameB, Prompt: "Do b.", Output: v.outputB, Inputs: []string{"a.md"},
			Launch: v.launchB, Validate: hasHeading, Formerly: v.formerly}).Wait()
		return nil
	}}
}

// finished runs v to done and returns the harness and what lies in the run
// outside its state directory.
func finished(t *testing.T, v *versioned) *harness {
	t.Helper()
	h := startRun(t, v.definition(), source)
	h.runToDone()
	return h
}

// outside returns every file of the run outside .custodian/, with its bytes.
func outside(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel == ".custodian" {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(path)
		files[rel] = string(data)
		return err
	}))
	return files
}

func TestDefinitionChanged(t *testing.T) {
	cases := []struct {
		name    string
		change  func(v *versioned)
		subject string // what the block names
		what    string // what its record says changed
	}{
		{"a prompt", func(v *versioned) { v.promptA = "Do a, better." }, "job a", "the prompt changed"},
		{"launch parameters", func(v *versioned) { v.launchB = map[string]any{"model": "large"} }, "job b",
			`the launch parameters changed: {} → {"model":"large"}`},
		{"an output path", func(v *versioned) { v.outputB = "out/b.md" }, "job b", "the output path changed: b.md → out/b.md"},
		{"a rename without Formerly", func(v *versioned) { v.nameB = "brief" }, "job b",
			`declare Formerly: []string{"b"} on it`},
		{"a rename with Formerly and a new prompt", func(v *versioned) {
			v.nameB, v.formerly, v.launchB = "brief", []string{"b"}, map[string]any{"model": "large"}
		}, "job b, now brief", "the launch parameters changed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := newVersioned()
			h := finished(t, v)
			before := outside(t, h.dir)

			tc.change(v)
			h.reg = registryOf(t, v.definition())
			h.reopen()
			for range 2 {
				b := h.blocked()["workflow"]
				require.Equal(t, engine.BlockDefinitionChanged, b.Kind)
				assert.Equal(t, engine.PermitStop, b.Permitted)
				assert.Contains(t, b.Reason, tc.subject)
				assert.Contains(t, recordText(t, b.Record), tc.what)
				assert.Equal(t, before, outside(t, h.dir), "a changed definition moved or wrote something in the run")
			}
			s, err := h.o.Status()
			require.NoError(t, err)
			require.NotNil(t, s.Workflow)
			assert.Contains(t, s.Operator, "custodian release "+h.dir+" workflow")

			// The operator lets the changes through: the run goes on as a
			// changed course would take it, and blocks no more.
			require.NoError(t, h.o.Release(engine.WorkflowSubject))
			handed := h.runToDone()
			assert.NotEmpty(t, handed, "the changed jobs are made again")
			h.done()
		})
	}
}

// A stop of a changed definition holds while the binary finds exactly the
// changes it listed: the binary that started the run finds none and lifts
// it, letting nothing through; a third binary with other changes stops
// anew; a release given under one binary does not carry over to a change
// that binary does not make.
func TestDefinitionChanged_stopFollowsTheBinary(t *testing.T) {
	use := func(h *harness, v *versioned) {
		h.reg = registryOf(t, v.definition())
		h.reopen()
	}
	t.Run("going back lifts the stop and lets nothing through", func(t *testing.T) {
		base := newVersioned()
		h := finished(t, base)
		changed := newVersioned()
		changed.promptA = "Do a, better."
		use(h, changed)
		require.Equal(t, engine.BlockDefinitionChanged, h.blocked()["workflow"].Kind)

		use(h, base)
		c, err := h.o.Check()
		require.NoError(t, err)
		require.NotNil(t, c.Next)
		assert.Equal(t, engine.KindDone, c.Next.Kind, "check foresees the lifted stop")
		h.done()
		use(h, changed)
		assert.Equal(t, engine.BlockDefinitionChanged, h.blocked()["workflow"].Kind, "going back let the change through")
	})
	t.Run("a replay that does not reach the change keeps the stop", func(t *testing.T) {
		h := finished(t, newVersioned())
		changed := newVersioned()
		changed.launchB = map[string]any{"model": "large"}
		use(h, changed)
		b1 := h.blocked()["workflow"]
		require.Equal(t, engine.BlockDefinitionChanged, b1.Kind)
		before := outside(t, h.dir)
		h.write("source.md", "changed\n") // a reopens, so the replay ends before b
		before["source.md"] = "changed\n"
		use(h, changed)
		b2 := h.blocked()["workflow"]
		assert.Equal(t, b1, b2, "a replay that never reached b lifted its stop")
		assert.Equal(t, before, outside(t, h.dir), "the stopped run moved or wrote something")
	})
	t.Run("other changes stop anew, with their own record", func(t *testing.T) {
		h := finished(t, newVersioned())
		first := newVersioned()
		first.promptA = "Do a, better."
		use(h, first)
		b1 := h.blocked()["workflow"]
		second := newVersioned()
		second.launchB = map[string]any{"model": "large"}
		use(h, second)
		b2 := h.blocked()["workflow"]
		assert.NotEqual(t, b1.Record, b2.Record, "a stop on other changes kept the old record")
		assert.Contains(t, b2.Reason, "job b")
		assert.NotContains(t, b2.Reason, "job a")
	})
	t.Run("a release lets through only a change the next binary makes", func(t *testing.T) {
		base := newVersioned()
		h := finished(t, base)
		changed := newVersioned()
		changed.promptA = "Do a, better."
		use(h, changed)
		h.blocked()
		require.NoError(t, h.o.Release(engine.WorkflowSubject))
		use(h, base)
		h.done()
		use(h, changed)
		assert.Equal(t, engine.BlockDefinitionChanged, h.blocked()["workflow"].Kind,
			"a release used up by the binary that started the run reopened a job later")
	})
}

func TestDefinitionChanged_promptDiff(t *testing.T) {
	v := newVersioned()
	v.promptA = "Do a.\nKeep it short."
	h := finished(t, v)
	v.promptA = "Do a.\nKeep it short.\nName every risk."
	h.reg = registryOf(t, v.definition())
	h.reopen()
	b := h.blocked()["workflow"]
	record := recordText(t, b.Record)
	assert.Contains(t, record, "```diff\n--- .custodian/jobs/a/prompt-1.md\n+++ the prompt now\n@@ -1,2 +1,3 @@\n Do a.\n Keep it short.\n+Name every risk.\n```\n")
}

func TestDefinitionChanged_renameWithFormerlyCarriesOver(t *testing.T) {
	v := newVersioned()
	h := finished(t, v)
	before := outside(t, h.dir)

	v.nameB, v.formerly = "brief", []string{"b"}
	h.reg = registryOf(t, v.definition())
	h.reopen()
	h.done()
	assert.Equal(t, before, outside(t, h.dir), "a carried output was made again")
	st := h.state()
	assert.Nil(t, st.Jobs["b"], "the former name keeps no record")
	require.NotNil(t, st.Jobs["brief"])
	assert.NotEmpty(t, st.Jobs["brief"].Accepted)
	events, err := h.o.Log()
	require.NoError(t, err)
	assert.True(t, containsEvent(events, engine.EventCarry, "brief", "b"), "the history says the output carried over")
}

// An accepted job the definition's code no longer names, while nothing of
// the run changed, is a changed definition: the step blocks and moves
// nothing, and after a release the job is dropped with its output kept.
// A course of the run that stops naming a job (a branch a file the
// definition looked at decides) is no change of the definition: the step
// goes on. Either way the job's output stays as it was accepted.
func TestDefinitionChanged_aJobNoLongerNamed(t *testing.T) {
	t.Run("by the code", func(t *testing.T) {
		v := newVersioned()
		h := finished(t, v)
		before := outside(t, h.dir)
		v.dropB = true
		h.reg = registryOf(t, v.definition())
		h.reopen()
		b := h.blocked()["workflow"]
		require.Equal(t, engine.BlockDefinitionChanged, b.Kind)
		assert.Contains(t, b.Reason, "job b")
		assert.Contains(t, recordText(t, b.Record), "the definition no longer names it")
		require.NoError(t, h.o.Release(engine.WorkflowSubject))
		h.done()
		h.done()
		assert.Equal(t, before, outside(t, h.dir))
		assert.NotContains(t, h.state().Named, "b")
	})
	t.Run("by a file the definition looks at", func(t *testing.T) {
		v := newVersioned()
		v.patched = func(ctx *workflow.Context) {
			_, err := os.Stat(ctx.Path("skip-b"))
			v.dropB = err == nil
		}
		h := finished(t, v)
		h.write("skip-b", "")
		before := outside(t, h.dir)
		h.done()
		assert.Equal(t, before, outside(t, h.dir))
		assert.NotContains(t, h.state().Named, "b")
	})
}

func TestContext_Patched(t *testing.T) {
	var seen []bool
	v := newVersioned()
	v.patched = func(ctx *workflow.Context) {
		if len(ctx.RunDir()) > 0 && v.patches != nil {
			seen = append(seen, ctx.Patched("asks-for-risks"))
		}
	}
	old := finished(t, v) // started before the patch

	v.patches = []string{"asks-for-risks"}
	newer := finished(t, v) // started after it
	assert.True(t, seen[len(seen)-1], "a run started with the patch takes the new code")

	old.reg = registryOf(t, v.definition())
	old.reopen()
	seen = nil
	old.done()
	assert.Equal(t, []bool{false}, seen, "a run started before the patch keeps the old code")

	// Removing the patch while a run without it is live takes its code
	// away: a changed definition.
	v.patches = nil
	old.reg = registryOf(t, v.definition())
	old.reopen()
	b := old.blocked()["workflow"]
	assert.Equal(t, engine.BlockDefinitionChanged, b.Kind)
	assert.Contains(t, b.Reason, "patch asks-for-risks")
	require.NoError(t, old.o.Release(engine.WorkflowSubject))
	old.done()

	// A run that has the patch loses nothing when it goes.
	newer.reg = registryOf(t, v.definition())
	newer.reopen()
	newer.done()

	// Asking for a patch the definition does not declare is a broken rule.
	bad := &workflow.Definition{Name: "bad", Run: func(ctx *workflow.Context) error {
		ctx.Patched("nowhere")
		return nil
	}}
	h := startRun(t, bad, nil)
	_, err := h.o.Step()
	assert.ErrorIs(t, err, workflow.ErrDefinition)
}

func TestDefinitionChanged_badParameterStops(t *testing.T) {
	strict := false
	def := &workflow.Definition{Name: "param",
		Params: []workflow.Param{{Name: "size", Default: "1", Validate: func(v string) error {
			if strict && v != "1" {
				return workflow.Refuse("give 1")
			}
			return nil
		}}},
		Run: func(ctx *workflow.Context) error {
			ctx.Agent(job("a")).Wait()
			return nil
		}}
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	writeFile(t, filepath.Join(dir, "source.md"), "s\n")
	reg := registryOf(t, def)
	o, err := engine.Start(reg, "param", dir, workflow.Params{"size": "2"})
	require.NoError(t, err)
	h := &harness{t: t, reg: reg, dir: dir, o: o}
	h.runToDone()

	strict = true
	c, err := h.o.Check()
	require.NoError(t, err)
	require.NotNil(t, c.Next)
	b := h.blocked()["workflow"]
	assert.Equal(t, c.Next.Blocks[0].Reason, b.Reason, "check foresaw another reason than the step gave")
	assert.Equal(t, engine.BlockBadParameter, b.Kind)
	assert.Equal(t, engine.PermitStop, b.Permitted)
	assert.Contains(t, b.Reason, "start a new run")
	s, err := h.o.Status()
	require.NoError(t, err)
	assert.Contains(t, s.Operator, "start a new run")
}

func TestContext_ParamUndeclared(t *testing.T) {
	def := &workflow.Definition{Name: "p", Params: []workflow.Param{{Name: "known", Default: "k"}}, Run: func(ctx *workflow.Context) error {
		if ctx.Param("known") != "k" {
			return workflow.Stopf("the default is not read")
		}
		ctx.Param("unknown")
		return nil
	}}
	h := startRun(t, def, nil)
	_, err := h.o.Step()
	require.ErrorIs(t, err, workflow.ErrDefinition)
	assert.ErrorContains(t, err, "Run reads parameter unknown, which the definition does not declare")
}

func TestRun_Abandon(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	require.NoError(t, h.o.Abandon("the paper was withdrawn"))

	for name, cmd := range map[string]func() error{
		"step":    func() error { _, err := h.o.Step(); return err },
		"report":  func() error { _, err := h.o.Report(engine.ReportStop, "", "x"); return err },
		"release": func() error { return h.o.Release("a") },
		"abandon": func() error { return h.o.Abandon("again") },
	} {
		err := cmd()
		assert.ErrorIs(t, err, engine.ErrAbandoned, name)
		assert.Equal(t, engine.ExitFailed, engine.ExitCode(err), name)
		assert.Contains(t, engine.Hint(err), "start a new run", name)
	}
	s, err := h.o.Status()
	require.NoError(t, err)
	require.NotNil(t, s.Abandoned)
	assert.Equal(t, "the paper was withdrawn", s.Abandoned.Text)
	events, err := h.o.Log()
	require.NoError(t, err)
	assert.True(t, containsEvent(events, engine.EventAbandon, "", "the paper was withdrawn"))
}

func registryOf(t *testing.T, def *workflow.Definition) *workflow.Registry {
	t.Helper()
	reg, err := workflow.NewRegistry(def)
	require.NoError(t, err)
	return reg
}

func containsEvent(events []engine.Event, typ engine.EventType, subject, text string) bool {
	for _, e := range events {
		if e.Type == typ && e.Subject == subject && strings.Contains(e.Text, text) {
			return true
		}
	}
	return false
}

// A step that stops on a parameter while an effect was left started gives
// uncertain at once, as every later step does: no recognizer runs while
// the workflow is stopped.
func TestDefinitionChanged_badParameterWithAnEffectStarted(t *testing.T) {
	strict := false
	def := &workflow.Definition{Name: "param",
		Params: []workflow.Param{{Name: "size", Default: "1", Validate: func(v string) error {
			if strict && v != "1" {
				return workflow.Refuse("give 1")
			}
			return nil
		}}},
		Run: func(ctx *workflow.Context) error {
			ctx.Agent(job("a")).Wait()
			ctx.Effect("publish", func() error { return nil })
			return nil
		}}
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	writeFile(t, filepath.Join(dir, "source.md"), "s\n")
	reg := registryOf(t, def)
	o, err := engine.Start(reg, "param", dir, workflow.Params{"size": "2"})
	require.NoError(t, err)
	h := &harness{t: t, reg: reg, dir: dir, o: o}
	h.launch("a")
	h.write("a.md", "# A\n")
	require.ErrorIs(t, h.o.StepEndingIn("publish", false), engine.ErrEndedInEffect)

	strict = true
	for range 2 {
		out := h.step()
		assert.Equal(t, engine.KindUncertain, out.Kind)
		require.Len(t, out.Effects, 1)
		assert.Equal(t, "publish", out.Effects[0].Name)
		require.Len(t, out.Blocks, 1)
		assert.Equal(t, engine.BlockBadParameter, out.Blocks[0].Kind)
	}
}
