package engine

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapshot reads every file under dir, by relative path.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
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

// The decision is callable on its own: without the lock (another process
// holds it here) and without writing, it plans exactly what the step then
// applies.
func TestRun_decideWritesNothingAndNeedsNoLock(t *testing.T) {
	def := &workflow.Definition{Name: "pair", Run: func(ctx *workflow.Context) error {
		a := ctx.Agent(workflow.Job{Name: "a", Prompt: "Do a.", Output: "a.md", Inputs: []string{"in.md"}})
		ctx.Wait(a)
		ctx.Agent(workflow.Job{Name: "b", Prompt: "Do b.", Output: "b.md", Inputs: []string{"a.md"}}).Wait()
		return nil
	}}
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.md"), []byte("in\n"), 0o644))
	reg, err := workflow.NewRegistry(def)
	require.NoError(t, err)
	o, err := Start(reg, "pair", dir, nil)
	require.NoError(t, err)
	_, err = o.Step()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.md"), []byte("# a\n"), 0o644))

	held, err := store.Open(dir)
	require.NoError(t, err)
	unlock, err := held.Lock()
	require.NoError(t, err)
	before := snapshot(t, dir)
	rec, err := o.read()
	require.NoError(t, err)
	p, err := o.decide(rec, func(string, *store.Effect) error {
		t.Fatal("the decision journaled an effect")
		return nil
	}, nil)
	require.NoError(t, err)
	assert.Equal(t, before, snapshot(t, dir), "the decision wrote")
	assert.Equal(t, KindLaunch, p.outcome.Kind)
	require.Len(t, p.outcome.Jobs, 1)
	assert.Equal(t, "b", p.outcome.Jobs[0].Name)
	var rels []string
	for _, text := range p.texts {
		rels = append(rels, text.rel)
	}
	assert.Equal(t, []string{".custodian/jobs/b/prompt-1.md"}, rels)
	unlock()

	out, err := o.Step()
	require.NoError(t, err)
	assert.Equal(t, p.outcome.Kind, out.Kind)
	assert.Equal(t, p.outcome.Jobs[0].Prompt, out.Jobs[0].Prompt)
	written, err := os.ReadFile(out.Jobs[0].Prompt)
	require.NoError(t, err)
	assert.Equal(t, string(p.texts[0].data), string(written), "the step applied what the decision planned")
}
