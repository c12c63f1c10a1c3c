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

	// Two processes each end inside one effect, neither committing anything:
	// the first inside effect two, the only one it reaches; the second
	// inside effect one, on the path before two's. (A step that finds an
	// effect uncertain starts no other, so one must begin first or be the
	// first reached.)
	r.write("go-two", "")
	r.crashStep("two")
	r.write("go-one", "")
	r.crashStep("one")
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
		// Its record is written under a name of the uncertain step's own: the
		// numbered records belong to blocks that a step counts.
		assert.FileExists(t, blocks["a"].Record)
		assert.Contains(t, blocks["a"].Record, "/.custodian/jobs/a/carried-by-step-")
		assert.NoFileExists(t, r.path(".custodian/jobs/a/block-1.md"))

		assert.Equal(t, before, r.countedState(), "an uncertain step changes no job's state")
		assert.FileExists(t, r.path("a.problem.md"), "an uncertain step moves nothing")
		assert.NoFileExists(t, r.path(".custodian/jobs/b/prompt-2.md"), "an uncertain step writes no prompt")
	}
	assert.Equal(t, 1, r.runs("one"))
	assert.Equal(t, 1, r.runs("two"))
}

// A completed effect whose inputs changed holds everything after it on its
// path, and a step that stops the run on one effect's account starts no
// other effect: what follows was built on the effect as it took place.
func TestEffectBlockHoldsTheCodeAfterItAndEveryNewEffect(t *testing.T) {
	var after int
	def := &workflow.Definition{Name: "effect-hold", Run: func(ctx *workflow.Context) error {
		dir := ctx.RunDir()
		ctx.Parallel(
			func() {
				ctx.Effect("first", func() error { return effectTally(dir, "first.runs") },
					workflow.EffectInputs("source.md"))
				after++
			},
			func() {
				if effectExists(ctx.Path("go-second")) {
					ctx.Effect("second", func() error { return effectTally(dir, "second.runs") })
				}
			},
		)
		return nil
	}}
	r := effectStartDef(t, def, effectSource)
	r.expect(workflow.KindDone)
	require.Equal(t, 1, after)

	r.write("source.md", "another text\n")
	r.write("go-second", "")
	after = 0
	out := r.expect(workflow.KindBlocked)
	assert.Equal(t, []string{"effect first"}, effectSubjects(effectBlocksBySubject(t, out.Blocks)))
	assert.Zero(t, after, "the code after the blocked effect ran")
	assert.Zero(t, r.runs("second"), "a new effect started in a step that stops the run")

	r.write("source.md", effectSource["source.md"])
	r.expect(workflow.KindDone)
	assert.Equal(t, 1, after)
	assert.Equal(t, 1, r.runs("first"))
	assert.Equal(t, 1, r.runs("second"))
}
