package engine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checked runs a check that must succeed, and requires that it wrote
// nothing in the run.
func checked(t *testing.T, h *harness, maps ...engine.Map) engine.Check {
	t.Helper()
	before := snapshotRun(t, h.dir)
	c, err := h.o.Check(maps...)
	require.NoError(t, err)
	assert.Equal(t, before, snapshotRun(t, h.dir), "check wrote in the run")
	return c
}

// snapshotRun returns every file of the run, with its bytes.
func snapshotRun(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[rel] = string(data)
		return err
	}))
	return files
}

func checkText(t *testing.T, c engine.Check) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, c.WriteText(&b))
	return b.String()
}

func TestRun_Check(t *testing.T) {
	t.Run("a finished run is unchanged", func(t *testing.T) {
		h := finished(t, newVersioned())
		c := checked(t, h)
		assert.False(t, c.Changed)
		assert.Empty(t, c.Items)
		require.NotNil(t, c.Next)
		assert.Equal(t, engine.KindDone, c.Next.Kind)
		assert.Equal(t, "unchanged\nnext step: done\n", checkText(t, c))
	})
	t.Run("a changed input reopens, and what reads it waits", func(t *testing.T) {
		h := finished(t, newVersioned())
		h.write("source.md", "another source\n")
		c := checked(t, h)
		assert.True(t, c.Changed)
		assert.Equal(t, "changed\n"+
			"- a: it is reopened: input source.md changed\n"+
			"warning: this replay ends at a wait on a before it reaches 1 accepted job (b): "+
			"it cannot yet tell whether the definition still names it, or gives it the same task\n"+
			"next step: launch\n"+
			"- a: `"+h.path(".custodian/jobs/a/prompt-2.md")+"`\n", checkText(t, c))
	})
	t.Run("a job the replay does not reach is not said to wait", func(t *testing.T) {
		h := startRun(t, newVersioned().definition(), source)
		h.work(h.launch("a"), nil)
		h.launch("b")
		// a reopens, so the replay ends at a before it reaches b, which is
		// handed out and not accepted: it is not reached, whatever it
		// would wait on.
		h.write("source.md", "another source\n")
		c := checked(t, h)
		assert.Contains(t, c.Items, engine.CheckItem{Subject: "b", Reason: "not reached by this replay (it ends at a wait on a)", Details: []string{}})
		assert.Empty(t, c.Warnings, "b is not accepted: nothing of it can be taken for the definition's")
		assert.NotContains(t, checkText(t, c), "waits on")
	})
	t.Run("a patch the run lacks is named", func(t *testing.T) {
		h := finished(t, newVersioned())
		v := newVersioned()
		v.patches = []string{"asks-for-owners"}
		h.reg = registryOf(t, v.definition())
		h.reopen()
		c := checked(t, h)
		assert.False(t, c.Changed, "a patch declared since changes nothing of the run")
		assert.Equal(t, engine.CheckPatches{Run: []string{}, Definition: []string{"asks-for-owners"}}, c.Patches)
		assert.Equal(t, "unchanged\n"+
			"patches: the run lacks asks-for-owners, which this binary declares: in this run, ctx.Patched says false\n"+
			"next step: done\n", checkText(t, c))
	})
	t.Run("a changed prompt blocks on the changed definition", func(t *testing.T) {
		v := newVersioned()
		h := finished(t, v)
		v.promptA = "Do a, better."
		h.reg = registryOf(t, v.definition())
		h.reopen()
		c := checked(t, h)
		require.Len(t, c.Items, 1)
		assert.Equal(t, engine.Subject("a"), c.Items[0].Subject)
		assert.Contains(t, c.Items[0].Reason, "the prompt changed; the next step blocks on the changed definition")
		assert.Equal(t, []string{"--- .custodian/jobs/a/prompt-1.md", "+++ the prompt now", "@@ -1 +1 @@", "-Do a.", "+Do a, better."}, c.Items[0].Details)
		require.NotNil(t, c.Next)
		assert.Equal(t, engine.KindBlocked, c.Next.Kind)
		assert.Equal(t, engine.BlockDefinitionChanged, c.Next.Blocks[0].Kind)

		// The step does what check said, and check then says it stands.
		b := h.blocked()["workflow"]
		assert.Equal(t, c.Next.Blocks[0].Reason, b.Reason)
		again := checked(t, h)
		assert.False(t, again.Changed, "a standing stop is no change: %s", checkText(t, again))
	})
	t.Run("a job handed out and not yet done", func(t *testing.T) {
		h := startRun(t, newVersioned().definition(), source)
		h.launch("a")
		c := checked(t, h)
		require.Len(t, c.Items, 1)
		assert.Equal(t, "attempt 1 is refused (no output); the next step hands it out again", c.Items[0].Reason)
		h.write("a.md", validText)
		c = checked(t, h)
		assert.Equal(t, []engine.CheckItem{
			{Subject: "a", Reason: "its output is accepted", Details: []string{}},
			{Subject: "b", Reason: "a new job: the next step hands it out", Details: []string{}},
		}, c.Items)
	})
	t.Run("an abandoned run", func(t *testing.T) {
		h := finished(t, newVersioned())
		require.NoError(t, h.o.Abandon("done with it"))
		c := checked(t, h)
		assert.False(t, c.Changed)
	})
}

// A definition that names other jobs, or gives one job another task, from
// one replay to the next is found before it misleads a run.
func TestRun_CheckFindsANonDeterministicDefinition(t *testing.T) {
	n := 0
	def := &workflow.Definition{Name: "clock", Run: func(ctx *workflow.Context) error {
		n++ // stands in for the clock: another value at every replay
		ctx.Agent(workflow.Job{Name: "summary", Prompt: strings.Repeat("Summarize.\n", n%2+1), Output: "summary.md"}).Wait()
		return nil
	}}
	h := startRun(t, def, nil)
	c := checked(t, h)
	require.True(t, c.Changed)
	require.NotEmpty(t, c.Items)
	assert.Equal(t, engine.Subject("summary"), c.Items[0].Subject)
	assert.Contains(t, c.Items[0].Reason, "non-deterministic definition: the two replays gave it different tasks")
	assert.Contains(t, c.Items[0].Details, "--- first replay's prompt")
}

// Check runs no effect: it says the next step would.
func TestRun_CheckRunsNoEffect(t *testing.T) {
	runs := 0
	def := &workflow.Definition{Name: "effect", Run: func(ctx *workflow.Context) error {
		ctx.Effect("publish", func() error { runs++; return nil })
		return nil
	}}
	h := startRun(t, def, nil)
	c := checked(t, h)
	assert.Equal(t, 0, runs)
	assert.Equal(t, []engine.CheckItem{{Subject: "effect publish", Reason: "it runs at the next step", Details: []string{}}}, c.Items)
	assert.Nil(t, c.Next, "what follows an effect cannot be foreseen")
	assert.Contains(t, checkText(t, c), "next step: not foreseen: it runs an effect or asks a recognizer first\n")
}

// A recorded run is a fixture: copied elsewhere it replays the same, and
// files outside it that its definition declared are found through maps.
func TestRun_CheckOfARunMovedElsewhere(t *testing.T) {
	recorded := t.TempDir()
	writeFile(t, filepath.Join(recorded, "method.md"), "the method\n")
	def := func(method string) *workflow.Definition {
		return &workflow.Definition{Name: "moved", Run: func(ctx *workflow.Context) error {
			ctx.Agent(workflow.Job{Name: "a", Prompt: "Do a.", Output: "a.md", Inputs: []string{"source.md", method}}).Wait()
			return nil
		}}
	}
	h := startRun(t, def(filepath.Join(recorded, "method.md")), source)
	h.runToDone()
	h.o.Close()

	// The run and its outside file, copied into another checkout.
	checkout := t.TempDir()
	moved := filepath.Join(checkout, "runs", "recorded")
	require.NoError(t, os.MkdirAll(filepath.Dir(moved), 0o755))
	out, err := exec.Command("cp", "-a", h.dir, moved).CombinedOutput()
	require.NoError(t, err, string(out))
	writeFile(t, filepath.Join(checkout, "method.md"), "the method\n")

	// The definition in the new checkout declares the file where it is now.
	reg := registryOf(t, def(filepath.Join(checkout, "method.md")))
	o, err := engine.Open(reg, moved)
	require.NoError(t, err)
	defer o.Close()
	c, err := o.Check()
	require.NoError(t, err)
	assert.True(t, c.Changed, "without a map, the input is another file")

	c, err = o.Check(engine.Map{Old: recorded, New: checkout})
	require.NoError(t, err)
	assert.False(t, c.Changed, "with the map, the moved run replays the same: %+v", c.Items)

	// No record holds the run's own absolute path.
	for rel, text := range snapshotRun(t, moved) {
		if strings.HasSuffix(rel, ".json") || strings.HasSuffix(rel, ".jsonl") {
			assert.NotContains(t, text, h.dir, "record %s holds the run's path", rel)
		}
	}
	_ = store.StateDir
}

func TestParseMap(t *testing.T) {
	m, err := engine.ParseMap("/home/alice/data/=/ci/data")
	require.NoError(t, err)
	assert.Equal(t, engine.Map{Old: "/home/alice/data", New: "/ci/data"}, m)
	for _, bad := range []string{"", "/a", "a=/b", "/a=b", "="} {
		_, err := engine.ParseMap(bad)
		assert.ErrorIs(t, err, engine.ErrUsage, bad)
	}
}
