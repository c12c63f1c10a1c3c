package workflow_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// editable is a one-job definition whose prompt, launch parameters and
// validator a test can change between steps, as an author edits code.
type editable struct {
	prompt string
	launch map[string]any
	strict bool // the validator also refuses what hasHeading accepts
}

func (e *editable) definition() *workflow.Definition {
	return &workflow.Definition{Name: "editable", Run: func(ctx *workflow.Context) error {
		j := job("a")
		j.Prompt = e.prompt
		j.Launch = e.launch
		strict := e.strict
		j.Validate = func(path string) error {
			if strict {
				return workflow.Refuse("the stricter validator refuses")
			}
			return hasHeading(path)
		}
		ctx.Agent(j).Wait()
		return nil
	}}
}

func TestAcceptedJobReopensWithAFullSetOfAttempts(t *testing.T) {
	cases := []struct {
		name   string
		change func(h *harness, e *editable)
		kept   string // what the reopening moves aside; "" for nothing
	}{
		{"an input's bytes change", func(h *harness, e *editable) { h.write("source.md", "another source\n") }, validText},
		{"the prompt changes", func(h *harness, e *editable) { e.prompt = "Do a, better." }, validText},
		{"the launch parameters change", func(h *harness, e *editable) { e.launch = map[string]any{"model": "large"} }, validText},
		{"the validator now refuses", func(h *harness, e *editable) { e.strict = true }, validText},
		{"the output is edited", func(h *harness, e *editable) { h.write("a.md", "# Heading\n\nedited by hand\n") }, "# Heading\n\nedited by hand\n"},
		{"the output is removed", func(h *harness, e *editable) { h.remove("a.md") }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &editable{prompt: "Do a.", launch: map[string]any{"model": "small"}}
			h := startRun(t, e.definition(), source)
			h.work(h.launch("a"), nil)
			h.done()

			tc.change(h, e)
			j := h.launch("a")["a"]
			assert.Equal(t, 2, j.Attempt)
			// A reopening is no failed attempt: the new prompt carries no refusal.
			assert.NotContains(t, recordText(t, j.Prompt), "## Why the previous attempt was refused")
			assert.Equal(t, 0, h.state().Jobs["a"].Failures)
			assert.Nil(t, h.state().Jobs["a"].Accepted)
			assert.False(t, h.exists("a.md"), "the reopened output stays in the worker's way")
			if tc.kept != "" {
				assert.Equal(t, tc.kept, h.read(".custodian/jobs/a/kept/1-a.md"))
			} else {
				assert.NoDirExists(t, h.path(".custodian/jobs/a/kept"))
			}

			// A full set of attempts: one retry, then the block.
			assert.Equal(t, 3, h.launch("a")["a"].Attempt)
			b := h.blocked()["a"]
			assert.Equal(t, "no output, attempt 2 of 2", b.Reason)
			assert.Equal(t, workflow.PermitRepair, b.Permitted)
		})
	}
}

func TestUnchangedAcceptedJobStaysAccepted(t *testing.T) {
	e := &editable{prompt: "Do a.", launch: map[string]any{"model": "small"}}
	h := startRun(t, e.definition(), source)
	h.work(h.launch("a"), nil)
	h.done()

	// Rewriting the same bytes and rebuilding equal launch data is no change.
	h.write("source.md", source["source.md"])
	h.write("a.md", validText)
	e.launch = map[string]any{"model": "small"}
	h.reopen()
	h.done()
	assert.Equal(t, 1, h.state().Jobs["a"].Handouts)
}

// A refused output belongs to the input state it was made from: when an
// input changed while the worker ran, the output is refused even if valid.
func TestOutputRefusedWhenAnInputChangedAfterHandout(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "changed", Run: func(ctx *workflow.Context) error {
		j := job("a")
		j.Inputs = []string{"source.md", "other.md"}
		ctx.Agent(j).Wait()
		return nil
	}}, map[string]string{"source.md": "s\n", "other.md": "o\n"})

	h.work(h.launch("a"), nil)
	h.write("other.md", "changed while the worker ran\n")
	j := h.launch("a")["a"]
	assert.Equal(t, 2, j.Attempt)
	st := h.state().Jobs["a"]
	assert.Equal(t, 1, st.Failures, "the refusal is a failed attempt")
	assert.Nil(t, st.Accepted)
	prompt := recordText(t, j.Prompt)
	assert.Contains(t, prompt, "## Why the previous attempt was refused")
	assert.Contains(t, prompt, "other.md changed")
	assert.NotContains(t, prompt, "source.md changed")

	h.work(map[string]workflow.Handout{"a": j}, nil)
	h.write("other.md", "changed again\n")
	b := h.blocked()["a"]
	assert.Equal(t, workflow.BlockInputChanged, b.Kind)
	assert.Contains(t, b.Reason, "other.md")
	assert.Contains(t, b.Reason, "attempt 2 of 2")
	assert.Contains(t, recordText(t, b.Record), "other.md changed")
}

// Inputs inside the run are hashed by their run-relative path, however the
// definition spells them, so that moving the run keeps every acceptance.
func TestMovedRunKeepsItsAcceptances(t *testing.T) {
	def := &workflow.Definition{Name: "moved", Run: func(ctx *workflow.Context) error {
		a := job("a")
		a.Inputs = []string{ctx.Path("source.md")}
		b := job("b")
		b.Output = ctx.Path("b.md")
		ctx.Wait(ctx.Agent(a), ctx.Agent(b))
		c := job("c")
		c.Inputs = []string{ctx.Path("a.md"), "b.md"}
		ctx.Agent(c).Wait()
		return nil
	}}
	h := startRun(t, def, source)
	h.runToDone()

	moved := filepath.Join(t.TempDir(), "elsewhere")
	require.NoError(t, os.Rename(h.dir, moved))
	h.dir = moved
	h.reopen()
	assert.Equal(t, moved, h.o.Dir())
	h.done()
	for _, name := range []string{"a", "b", "c"} {
		assert.Equal(t, 1, h.state().Jobs[name].Handouts, "job %s was handed out again", name)
	}
}

func TestAbsoluteInputInsideTheRunCountsAsRunRelative(t *testing.T) {
	absolute := false
	h := startRun(t, &workflow.Definition{Name: "abs", Run: func(ctx *workflow.Context) error {
		j := job("a")
		if absolute {
			j.Inputs = []string{ctx.Path("source.md")}
		}
		ctx.Agent(j).Wait()
		return nil
	}}, source)
	h.work(h.launch("a"), nil)
	h.done()

	// The same file, now declared by its absolute path, is the same input.
	absolute = true
	h.done()
	acc := h.state().Jobs["a"].Accepted
	require.NotNil(t, acc)
	require.Len(t, acc.Input.Files, 1)
	assert.Equal(t, "source.md", acc.Input.Files[0].Path)
}

func TestStateHoldsNoAbsoluteRunPath(t *testing.T) {
	refuse := true
	h := startRun(t, &workflow.Definition{Name: "paths", Run: func(ctx *workflow.Context) error {
		a := job("a")
		a.Inputs = []string{ctx.Path("source.md")}
		b := job("b")
		b.Output = ctx.Path("sub/b.md")
		b.Validate = func(path string) error {
			if refuse {
				return workflow.Refuse("refused")
			}
			return nil
		}
		ctx.Wait(ctx.Agent(a), ctx.Agent(b))
		return nil
	}}, source)

	// Acceptances, refusals, kept files and a stop all leave their mark in state.json.
	jobs := h.launch("a", "b")
	h.work(jobs, nil)
	h.work(h.launch("b"), nil)
	h.blocked()
	h.work(h.launch("b"), nil)
	h.work(h.launch("b"), nil)
	require.Equal(t, workflow.PermitStop, h.blocked()["b"].Permitted)

	state := string(h.stateBytes())
	assert.NotContains(t, state, h.dir)
	assert.NotContains(t, state, filepath.Dir(h.dir))
	assert.True(t, strings.Contains(state, `"source.md"`), "state.json names inputs run-relative")
}

// A step hashes a shared input once, but never serves a stale hash: a file
// the definition's own code rewrote during the replay is hashed again.
func TestAnInputRewrittenDuringTheReplayIsHashedAgain(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "rewrite", Run: func(ctx *workflow.Context) error {
		reads := func(name string) workflow.Job {
			j := job(name)
			j.Inputs = []string{"x.md"}
			return j
		}
		a := ctx.Agent(reads("a"))
		if err := os.WriteFile(ctx.Path("x.md"), []byte("the second, longer text\n"), 0o644); err != nil {
			return err
		}
		b := ctx.Agent(reads("b"))
		ctx.Wait(a, b)
		return nil
	}}, map[string]string{"x.md": "first\n"})
	h.launch("a", "b")

	sum := func(text string) string {
		s := sha256.Sum256([]byte(text))
		return hex.EncodeToString(s[:])
	}
	st := h.state()
	assert.Equal(t, sum("first\n"), st.Jobs["a"].Outstanding.Files[0].SHA256)
	assert.Equal(t, sum("the second, longer text\n"), st.Jobs["b"].Outstanding.Files[0].SHA256)
}
