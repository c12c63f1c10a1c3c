package workflow_test

import (
	"errors"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEffectRunsOnceAfterTheJobItFollows(t *testing.T) {
	r := effectStart(t, effectRegistry(), "effect-publish", nil, effectSource)

	// The effect follows a wait on draft: while draft is not accepted, the
	// replay never gets to it, however many steps pass.
	r.launch(false, "draft")
	out := r.launch(true, "draft")
	assert.Equal(t, 2, out.Jobs[0].Attempt)
	assert.Equal(t, 0, r.runs("publish"), "the effect ran before the job it follows was accepted")

	// Once draft is accepted, the step reaches the effect and runs it; every
	// later replay passes the call without running do again.
	for range 3 {
		r.expect(workflow.KindDone)
	}
	assert.Equal(t, 1, r.runs("publish"))
	assert.Equal(t, "# draft\n", r.published("draft.md"))
	e := r.journal("publish")
	assert.Equal(t, store.EffectCompleted, e.Status)
	assert.Equal(t, 1, e.Runs)
	assert.Equal(t, 0, r.asked("publish"), "a recognizer is asked only about an effect left started")
}

func TestEffectThatWritesOnlyInsideTheRunRunsOnce(t *testing.T) {
	r := effectStart(t, effectRegistry(), "effect-stamp", nil, nil)

	// The stamp cannot be made again: if do ran at a replay, the job that
	// reads it would be named for another task.
	out := r.launch(false, "announce")
	stamp := r.read("stamp.txt")
	assert.Contains(t, effectText(t, out.Jobs[0].Prompt), "Announce the stamp "+stamp+".")

	out = r.launch(true, "announce") // a failed attempt: the step replays everything
	assert.Contains(t, effectText(t, out.Jobs[0].Prompt), "Announce the stamp "+stamp+".")
	r.expect(workflow.KindDone)
	r.expect(workflow.KindDone)

	assert.Equal(t, 1, r.runs("stamp"))
	assert.Equal(t, stamp, r.read("stamp.txt"))
	assert.Equal(t, 0, r.asked("stamp"))
}

func TestEffectValueNotYetRecordedIsReadAgain(t *testing.T) {
	r := effectStart(t, effectRegistry(), "effect-stamp", nil, nil)

	// The process ends after the value is in stamp.txt and before the
	// completion is journaled.
	r.crashStep("stamped")
	stamp := r.read("stamp.txt")
	require.Equal(t, store.EffectStarted, r.journal("stamp").Status)

	// The next step asks the recognizer, which finds the value; the effect
	// is not made again, and the code after it reads the value the ended
	// process made.
	out := r.launch(true, "announce")
	assert.Contains(t, effectText(t, out.Jobs[0].Prompt), "Announce the stamp "+stamp+".")
	assert.Equal(t, 1, r.asked("stamp"))
	r.expect(workflow.KindDone)

	assert.Equal(t, 1, r.runs("stamp"))
	assert.Equal(t, stamp, r.read("stamp.txt"))
	e := r.journal("stamp")
	assert.Equal(t, store.EffectCompleted, e.Status)
	assert.Equal(t, "recognizer", e.By)
	assert.Equal(t, 1, r.asked("stamp"), "a recognized effect is completed; its recognizer is not asked again")
}

func TestEffectRecognizerIsNeverAskedAboutACompletedEffect(t *testing.T) {
	// The recognizer is the test's: being asked at all fails the test.
	def := &workflow.Definition{Name: "never-asked", Run: func(ctx *workflow.Context) error {
		ctx.Effect("publish", func() error { return effectTally(ctx.RunDir(), "publish.runs") },
			workflow.EffectInputs("release.md"),
			workflow.Recognize(func() (workflow.Recognition, error) {
				t.Errorf("the recognizer was asked about an effect journaled completed")
				return workflow.Unknown, nil
			}))
		return nil
	}}
	r := effectStartDef(t, def, map[string]string{"release.md": "v1\n"})

	r.expect(workflow.KindDone)
	r.expect(workflow.KindDone)
	// A completed effect whose inputs changed is out of step with the run,
	// but its fate is known: it blocks without asking anyone.
	r.write("release.md", "v2\n")
	r.blocked()
	assert.Equal(t, 1, r.runs("publish"))
}

func TestEffectFailureBlocksOnWorkflowAndTheNextStepAsksTheRecognizer(t *testing.T) {
	cases := []struct {
		name      string
		do        func() error
		recovered bool // the definition wraps the call in a deferred recover
		reason    string
	}{
		{name: "error, the definition carries on", do: func() error { return errors.New("upload refused") }, reason: "upload refused"},
		{name: "error, the definition recovers", do: func() error { return errors.New("upload refused") }, recovered: true, reason: "upload refused"},
		{name: "panic, the definition carries on", do: func() error { panic("upload exploded") }, reason: "upload exploded"},
		{name: "panic, the definition recovers", do: func() error { panic("upload exploded") }, recovered: true, reason: "upload exploded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls, asked int
			continued := false
			def := &workflow.Definition{Name: "failing", Run: func(ctx *workflow.Context) error {
				call := func() {
					ctx.Effect("publish", func() error { calls++; return tc.do() },
						workflow.Recognize(func() (workflow.Recognition, error) { asked++; return workflow.Completed, nil }))
				}
				if tc.recovered {
					func() {
						defer func() { _ = recover() }()
						call()
					}()
				} else {
					call()
				}
				// Reached only if the effect stands.
				continued = true
				ctx.Agent(effectJob("after", "source.md")).Wait()
				return nil
			}}
			r := effectStartDef(t, def, effectSource)

			blocks := r.blocked()
			require.Equal(t, []string{"workflow"}, effectSubjects(blocks))
			b := blocks["workflow"]
			assert.Equal(t, workflow.BlockWorkflowError, b.Kind)
			assert.Contains(t, b.Reason, "effect publish")
			assert.Contains(t, b.Reason, tc.reason)
			assert.False(t, continued, "the definition went on past a failed effect")
			assert.Equal(t, 1, calls)
			assert.Equal(t, 0, asked)
			// The journal keeps the start: what the failed do did is open.
			assert.Equal(t, store.EffectStarted, r.journal("publish").Status)

			// The next step does not run do again; it asks the recognizer,
			// and the effect it recognizes lets the definition go on.
			r.launch(false, "after")
			assert.Equal(t, 1, asked)
			assert.Equal(t, 1, calls)
			assert.True(t, continued)
			assert.Equal(t, store.EffectCompleted, r.journal("publish").Status)
		})
	}
}

func TestEffectStartedWhenTheWorkflowIsStoppedIsUncertain(t *testing.T) {
	r := effectStart(t, effectRegistry(), "effect-stop", nil, nil)

	// One path's effect fails and leaves its journal started; another path
	// stops the run in the same step.
	blocks := r.blocked()
	require.Contains(t, blocks, "workflow")
	stop := blocks["workflow"]
	require.Equal(t, workflow.BlockWorkflowStop, stop.Kind)
	require.Equal(t, workflow.PermitStop, stop.Permitted)
	require.Equal(t, store.EffectStarted, r.journal("publish").Status)

	// A stopped workflow does not run, so nobody can recognize the effect:
	// its fate is uncertain, and the stop travels with it. So it stays.
	for range 2 {
		out := r.expect(workflow.KindUncertain)
		require.Equal(t, []string{"publish"}, effectNames(out.Effects))
		assert.Contains(t, out.Effects[0].Detail, "completion was not recorded")
		assert.Contains(t, out.Effects[0].Detail, "stopped")
		assert.Equal(t, []workflow.Block{stop}, out.Blocks)
		assert.Empty(t, out.Jobs)
	}
	assert.Equal(t, 1, r.runs("publish"))
}

// effectText reads a prompt file or a block record.
func effectText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func effectSubjects(blocks map[string]workflow.Block) []string {
	return slices.Sorted(maps.Keys(blocks))
}
