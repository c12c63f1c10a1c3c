package engine_test

import (
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stopJob drives job "a" of h to its stop-only block with refused outputs,
// while every other job the definition names is accepted.
func stopJob(h *harness) {
	h.t.Helper()
	for cycle := range 2 {
		for attempt := range 2 {
			out := h.step()
			require.Equal(h.t, engine.KindLaunch, out.Kind, "cycle %d attempt %d: %+v", cycle, attempt, out)
			for _, j := range out.Jobs {
				text := validText
				if j.Name == "a" {
					text = invalidText
				}
				writeFile(h.t, j.Output, text)
			}
		}
		b := h.blocked()["a"]
		if cycle == 1 {
			require.Equal(h.t, engine.PermitStop, b.Permitted)
		}
	}
}

func TestStoppedJobStaysStoppedUntilReleased(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "release", Run: func(ctx *workflow.Context) error {
		ctx.Wait(ctx.Agent(job("a")), ctx.Agent(job("other")))
		return nil
	}}, source)
	stopJob(h)
	other := h.state().Jobs["other"]
	require.NotEmpty(t, other.Accepted)

	for range 3 {
		h.reopen()
		assert.Equal(t, engine.PermitStop, h.blocked()["a"].Permitted)
	}

	require.NoError(t, h.o.Release("a"))
	// Released: attempts and repairs start over.
	assert.Equal(t, 5, h.launch("a")["a"].Attempt)
	assert.Equal(t, 6, h.launch("a")["a"].Attempt)
	b := h.blocked()["a"]
	assert.Equal(t, engine.PermitRepair, b.Permitted)
	assert.Equal(t, "no output, attempt 2 of 2", b.Reason)

	// The other job's acceptance was not touched by the stop or the release.
	after := h.state().Jobs["other"]
	assert.Equal(t, other.Accepted, after.Accepted)
	assert.Equal(t, 1, after.Handouts)
	assert.Equal(t, validText, h.read("other.md"))
}

func TestReleasedJobWithAValidOutputInPlaceIsAccepted(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	stopJob(h)

	h.write("a.md", validText)
	require.NoError(t, h.o.Release("a"))
	h.done()
}

func TestRun_Release(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "release", Run: func(ctx *workflow.Context) error {
		ctx.Wait(ctx.Agent(job("a")), ctx.Agent(job("b")))
		return nil
	}}, source)
	h.work(h.launch("a", "b"), map[string]reply{"a": {output: invalidText}})
	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	require.Equal(t, engine.PermitRepair, h.blocked()["a"].Permitted)
	before := h.stateBytes()

	cases := []struct {
		name, subject string
	}{
		{"a job blocked with a repair", "a"},
		{"an accepted job", "b"},
		{"a job the run does not have", "nobody"},
		{"a workflow that is not stopped", "workflow"},
		{"an effect", "effect x"},
		{"an empty subject", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := h.o.Release(engine.Subject(tc.subject))
			assert.ErrorIs(t, err, engine.ErrRefused)
			assert.Equal(t, string(before), string(h.stateBytes()), "a refused release changed the state")
		})
	}
}
