package workflow_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/require"
)

func TestSmoke(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "source.md"), []byte("hi"), 0o644))
	def := &workflow.Definition{Name: "smoke", Run: func(ctx *workflow.Context) error {
		a := ctx.Agent(workflow.Job{Name: "a", Prompt: "A", Output: "a.md", Inputs: []string{"source.md"}})
		b := ctx.Agent(workflow.Job{Name: "b", Prompt: "B", Output: "b.md", Inputs: []string{"source.md"}})
		ctx.Wait(a, b)
		ctx.Agent(workflow.Job{Name: "c", Prompt: "C", Output: "c.md", Inputs: []string{"a.md", "b.md"}}).Wait()
		return nil
	}}
	reg, err := workflow.NewRegistry(def)
	require.NoError(t, err)
	o, err := workflow.Start(reg, "smoke", dir, nil)
	require.NoError(t, err)
	out, err := o.Step()
	require.NoError(t, err)
	t.Logf("%+v", out)
	for _, j := range out.Jobs {
		b, _ := os.ReadFile(j.Prompt)
		t.Logf("%s", b)
		require.NoError(t, os.WriteFile(j.Output, []byte("# x\n\nbody\n"), 0o644))
	}
	out, err = o.Step()
	require.NoError(t, err)
	t.Logf("%+v", out)
	require.NoError(t, os.WriteFile(out.Jobs[0].Output, []byte("# x\n\nbody\n"), 0o644))
	out, err = o.Step()
	require.NoError(t, err)
	t.Logf("%+v", out)
	out, err = o.Step()
	require.NoError(t, err)
	require.Equal(t, workflow.KindDone, out.Kind)
}
