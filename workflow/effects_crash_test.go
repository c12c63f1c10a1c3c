package workflow_test

import (
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A process that ends inside do leaves the journal saying started. The next
// step asks the recognizer what took place, and acts on its answer.
func TestEffectProcessEndedInsideTheEffect(t *testing.T) {
	cases := []struct {
		name  string
		point string // where the child ends
		want  workflow.Kind
		runs  int // how often do was entered, the ended run included
	}{
		// The effect took place in full: it is not repeated.
		{name: "after it took place in full", point: "full", want: workflow.KindDone, runs: 1},
		// Nothing took place: it runs.
		{name: "before it began", point: "begin", want: workflow.KindDone, runs: 2},
		// One of two writes took place: nobody can say it is done or undone.
		{name: "part way", point: "part", want: workflow.KindUncertain, runs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := effectPublishRun(t, "files")
			r.crashStep(tc.point)
			require.Equal(t, store.EffectStarted, r.journal("publish").Status)

			out := r.expect(tc.want)
			assert.Equal(t, 1, r.asked("publish"))
			assert.Equal(t, tc.runs, r.runs("publish"))
			if tc.want == workflow.KindUncertain {
				require.Equal(t, []string{"publish"}, effectNames(out.Effects))
				assert.Contains(t, out.Effects[0].Detail, "the effect started and its completion was not recorded")
				assert.Contains(t, out.Effects[0].Detail, "could not establish")
				assert.Equal(t, store.EffectStarted, r.journal("publish").Status)
				return
			}
			// Either way the effect now stands complete, and a later step
			// neither runs it nor asks about it again.
			assert.Equal(t, "# draft\n", r.published("draft.md"))
			assert.Equal(t, "draft.md\n", r.published("index.md"))
			e := r.journal("publish")
			assert.Equal(t, store.EffectCompleted, e.Status)
			assert.Equal(t, tc.runs, e.Runs, "the journal counts every start, the one the ended process made included")
			r.expect(workflow.KindDone)
			assert.Equal(t, tc.runs, r.runs("publish"))
			assert.Equal(t, 1, r.asked("publish"))
		})
	}
}

// The effect took place in full each time; only the recognizer's failure to
// say so leaves its fate open, and the detail says why.
func TestEffectWithoutARecognizersAnswerIsUncertain(t *testing.T) {
	cases := []struct {
		recognizer string
		detail     string
		asked      int
	}{
		{recognizer: "none", detail: "the definition gives no recognizer", asked: 0},
		{recognizer: "error", detail: "the recognizer failed: the publisher cannot be reached", asked: 1},
		{recognizer: "panic", detail: "the recognizer failed: the recognizer broke", asked: 1},
		{recognizer: "unknown", detail: "the recognizer could not establish whether it took place", asked: 1},
	}
	for _, tc := range cases {
		t.Run(tc.recognizer, func(t *testing.T) {
			r := effectPublishRun(t, tc.recognizer)
			r.crashStep("full")
			before := r.countedState()

			// Uncertain stays uncertain: each step asks again, and nothing
			// but the operator settles it.
			for step := 1; step <= 2; step++ {
				out := r.expect(workflow.KindUncertain)
				require.Equal(t, []string{"publish"}, effectNames(out.Effects))
				assert.Equal(t, "the effect started and its completion was not recorded; "+tc.detail, out.Effects[0].Detail)
				assert.Empty(t, out.Jobs)
				assert.Empty(t, out.Blocks)
				assert.Equal(t, tc.asked*step, r.asked("publish"))
			}
			assert.Equal(t, 1, r.runs("publish"), "an uncertain effect is never run again by code")
			assert.Equal(t, store.EffectStarted, r.journal("publish").Status)
			assert.Equal(t, before, r.countedState(), "an uncertain step commits nothing but its history")
		})
	}
}
