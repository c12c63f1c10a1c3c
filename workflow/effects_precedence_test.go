package workflow_test

import (
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Uncertain comes first of the outcomes: a step with an uncertain effect is
// uncertain even when a job is blocked and another is due for launch. It
// hands nothing out, counts nothing and changes no job's state, and it
// carries what else it found, with every uncertain effect listed.
func TestEffectUncertainStepChangesNothingAndCarriesEveryBlock(t *testing.T) {
	r := effectStart(t, effectRegistry(), "effect-two", nil, effectSource)

	// The effects are not reached yet: jobs a and b are handed out.
	r.launch(false, "a", "b")
	// a's worker reports a problem; b's writes nothing, which counts as a
	// failed attempt at a counted step.
	r.write("a.problem.md", "source.md is unreadable\n")
	r.write("go", "")

	// Two processes each end inside one effect: the first inside effect
	// one; the second finds one uncertain, goes on to the next path and
	// ends inside effect two. Neither commits anything.
	r.crashStep("one")
	r.crashStep("two")
	require.Equal(t, store.EffectStarted, r.journal("one").Status)
	require.Equal(t, store.EffectStarted, r.journal("two").Status)

	before := r.countedState()
	for range 2 {
		out := r.expect(workflow.KindUncertain)
		assert.Equal(t, []string{"one", "two"}, effectNames(out.Effects), "every uncertain effect is listed")
		assert.Empty(t, out.Jobs, "an uncertain step hands nothing out")
		blocks := effectBlocksBySubject(t, out.Blocks)
		require.Equal(t, []string{"a"}, effectSubjects(blocks), "the block found on another path travels with the outcome")
		assert.Equal(t, workflow.BlockProblemReport, blocks["a"].Kind)

		assert.Equal(t, before, r.countedState(), "an uncertain step changes no job's state")
		assert.FileExists(t, r.path("a.problem.md"), "an uncertain step moves nothing")
		assert.NoFileExists(t, r.path(".custodian/jobs/b/prompt-2.md"), "an uncertain step writes no prompt")
	}
	assert.Equal(t, 1, r.runs("one"))
	assert.Equal(t, 1, r.runs("two"))
}
