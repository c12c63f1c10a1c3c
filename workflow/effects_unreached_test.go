package workflow_test

import (
	"os"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// effectWithdrawn switches effect-publish's branch away from the effect, and
// checks that the first step after it, which ends at the wait on notes,
// checks no effect: the definition might still reach the call.
func effectWithdrawn(r *effectRun) {
	r.t.Helper()
	r.write("withdraw", "")
	out := r.launch(true, "notes")
	assert.Empty(r.t, out.Blocks)
	assert.Empty(r.t, out.Effects)
}

// An effect stays owed after the definition stops calling it: only when the
// definition runs to its end is each one it did not reach checked.
func TestEffectTheDefinitionNoLongerReachesStaysOwed(t *testing.T) {
	// completedUnreached: publish completed, then withdrawn; the definition
	// runs to its end without it.
	completedUnreached := func(t *testing.T) *effectRun {
		t.Helper()
		r := effectPublished(t)
		effectWithdrawn(r)
		for range 2 {
			blocks := r.blocked()
			require.Equal(t, []string{"effect publish"}, effectSubjects(blocks))
			b := blocks["effect publish"]
			assert.Equal(t, workflow.BlockEffectUnreached, b.Kind)
			assert.Equal(t, workflow.PermitStop, b.Permitted)
			assert.Contains(t, b.Reason, "no longer reaches it")
		}
		return r
	}
	// startedUnreached: the process ended part way through publish, then
	// the branch was withdrawn. Its recognizer lives at the call site that
	// is no longer reached, so nobody can recognize it.
	startedUnreached := func(t *testing.T) *effectRun {
		t.Helper()
		r := effectPublishRun(t, "files")
		r.crashStep("part")
		effectWithdrawn(r)
		for range 2 {
			out := r.expect(workflow.KindUncertain)
			require.Equal(t, []string{"publish"}, effectNames(out.Effects))
			assert.Contains(t, out.Effects[0].Detail, "the definition no longer reaches it")
			assert.Empty(t, out.Blocks)
		}
		assert.Equal(t, 0, r.asked("publish"))
		return r
	}

	// Either way do ran once before the operator resolves.
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) *effectRun
	}{
		{name: "completed", setup: completedUnreached},
		{name: "started", setup: startedUnreached},
	} {
		t.Run(tc.name+", resolved completed, stands", func(t *testing.T) {
			r := tc.setup(t)
			require.NoError(t, r.resolve("publish", workflow.Completed))
			r.expect(workflow.KindDone)
			r.expect(workflow.KindDone)
			assert.Equal(t, 1, r.runs("publish"))
			assert.Equal(t, store.EffectCompleted, r.journal("publish").Status)
		})
		t.Run(tc.name+", resolved absent, is withdrawn and runs when reached again", func(t *testing.T) {
			r := tc.setup(t)
			require.NoError(t, r.resolve("publish", workflow.Absent))
			r.expect(workflow.KindDone)
			r.expect(workflow.KindDone)
			assert.Equal(t, 1, r.runs("publish"), "a withdrawn effect is owed nothing while unreached")

			// Switch the branch back: the definition reaches the effect again.
			require.NoError(t, os.Remove(r.path("withdraw")))
			r.expect(workflow.KindDone)
			assert.Equal(t, 2, r.runs("publish"))
			e := r.journal("publish")
			assert.Equal(t, store.EffectCompleted, e.Status)
			assert.Equal(t, 2, e.Runs)
			assert.Equal(t, "draft.md\n", r.published("index.md"))
		})
	}
}
