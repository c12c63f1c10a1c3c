package shell_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/workflow"
)

// audit is a fan-out of n audit jobs whose prompt says how to audit,
// wording, for the texts that must say alike things once.
func audit(n int, wording string) *workflow.Registry {
	def := &workflow.Definition{Name: "audit", Run: func(ctx *workflow.Context) error {
		var hs []*workflow.Handle
		for i := range n {
			name := fmt.Sprintf("audit-%02d", i)
			hs = append(hs, ctx.Agent(workflow.Job{Name: name, Prompt: "Take package " + name + ".\n" + wording + " it.",
				Output: name + ".md", Validate: func(string) error { return nil }}))
		}
		ctx.Wait(hs...)
		return nil
	}}
	reg, err := workflow.NewRegistry(def)
	if err != nil {
		panic(err)
	}
	return reg
}

// Thirty alike jobs are said once, with a few of their names, after a line
// of counts.
func TestStatusSaysAlikeJobsOnce(t *testing.T) {
	reg := audit(30, "Audit")
	dir := filepath.Join(t.TempDir(), "run")
	r := run(t, reg, "start", "audit", "--run", dir)
	require.Equal(t, 0, r.code, r.stderr)
	run(t, reg, "step", dir)
	run(t, reg, "step", dir)
	out := run(t, reg, "step", dir)
	require.True(t, strings.HasPrefix(out.stdout, "blocked\n"), out.stdout)

	s := run(t, reg, "status", dir)
	require.Equal(t, 0, s.code, s.stderr)
	lines := strings.Split(s.stdout, "\n")
	assert.Equal(t, "30 jobs: 30 blocked", lines[0], "status starts with the counts")
	assert.Contains(t, s.stdout, "- 30 jobs (audit-00, audit-01, audit-02 and 27 more): blocked, 2 attempts\n"+
		"  block: no output, attempt 2 of 2 (no-output); permits a repair\n"+
		"    record: each job's own, under .custodian/jobs/JOB/\n")
	assert.Less(t, len(lines), 20, "alike jobs said one by one:\n%s", s.stdout)
	for _, l := range lines {
		assert.Less(t, len(l), 400, "a line of status repeats alike things: %q", l)
	}
}

// A wording the thirty prompts read from the run's data, edited, reopens
// them all; check says so once, with a few of their names.
func TestAReopeningOfManyJobsIsSaidOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	reg := auditWorded(30)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	writeOutput(t, dir, "wording.txt", "Audit")
	require.Equal(t, 0, run(t, reg, "start", "audit", "--run", dir).code)
	run(t, reg, "step", dir)
	for i := range 30 {
		writeOutput(t, dir, fmt.Sprintf("audit-%02d.md", i), valid)
	}
	require.Equal(t, "done\n", run(t, reg, "step", dir).stdout)

	writeOutput(t, dir, "wording.txt", "Audit carefully")
	c := run(t, reg, "check", dir)
	require.Equal(t, 0, c.code, c.stderr)
	assert.Equal(t, 1, strings.Count(c.stdout, "it is reopened"), "the reopening is said more than once:\n%s", c.stdout)
	assert.Contains(t, c.stdout, "- 30 alike (audit-00, audit-01, audit-02 and 27 more): it is reopened: the prompt changed (the same build: data the definition reads)\n")
}

// auditWorded is audit whose wording is the run's wording.txt.
func auditWorded(n int) *workflow.Registry {
	def := &workflow.Definition{Name: "audit", Run: func(ctx *workflow.Context) error {
		wording, err := os.ReadFile(ctx.Path("wording.txt"))
		if err != nil {
			return err
		}
		return audit(n, string(wording)).Definitions()[0].Run(ctx)
	}}
	reg, err := workflow.NewRegistry(def)
	if err != nil {
		panic(err)
	}
	return reg
}
