package engine_test

import (
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// effectPartlyPublished is a run whose publish effect the process left part
// way: its next step is uncertain until the operator resolves it.
func effectPartlyPublished(t *testing.T) *effectRun {
	t.Helper()
	r := effectPublishRun(t, "files")
	r.crashStep("part")
	out := r.expect(engine.KindUncertain)
	require.Equal(t, []string{"publish"}, effectNames(out.Effects))
	return r
}

func TestRun_Resolve(t *testing.T) {
	t.Run("completed lets it stand", func(t *testing.T) {
		r := effectPartlyPublished(t)
		require.NoError(t, r.resolve("publish", workflow.Completed))

		e := r.journal("publish")
		assert.Equal(t, store.EffectCompleted, e.Status)
		assert.Equal(t, "operator", e.By)
		r.expect(engine.KindDone)
		r.expect(engine.KindDone)
		assert.Equal(t, 1, r.runs("publish"), "an effect resolved completed is not run again")
		assert.Equal(t, 1, r.asked("publish"), "nor is its recognizer asked again")
		assert.Empty(t, r.published("index.md"), "code does not finish what the operator let stand")
	})
	t.Run("absent lets it run again", func(t *testing.T) {
		r := effectPartlyPublished(t)
		require.NoError(t, r.resolve("publish", workflow.Absent))
		assert.Equal(t, store.EffectAbsent, r.journal("publish").Status)

		r.expect(engine.KindDone)
		assert.Equal(t, 2, r.runs("publish"))
		assert.Equal(t, 1, r.asked("publish"), "the operator's word replaces the recognizer's")
		e := r.journal("publish")
		assert.Equal(t, store.EffectCompleted, e.Status)
		assert.Equal(t, 2, e.Runs)
		assert.Equal(t, "draft.md\n", r.published("index.md"))

		r.expect(engine.KindDone)
		assert.Equal(t, 2, r.runs("publish"))
	})
}

func TestRun_ResolveRefuses(t *testing.T) {
	cases := []struct {
		name string
		// setup brings a run to the state the request meets.
		setup func(t *testing.T) *effectRun
		// request is the operator's request, which must be refused.
		request func(r *effectRun) error
		// says is what the refusal or its hint must mention, if anything.
		says string
	}{
		{
			// Resolving is establishing what took place; unknown establishes nothing.
			name:    "unknown",
			setup:   effectPartlyPublished,
			request: func(r *effectRun) error { return r.resolve("publish", workflow.Unknown) },
		},
		{
			name:    "an effect not recorded",
			setup:   effectPartlyPublished,
			request: func(r *effectRun) error { return r.resolve("announce", workflow.Completed) },
		},
		{
			name:    "a settled effect as completed",
			setup:   effectPublished,
			request: func(r *effectRun) error { return r.resolve("publish", workflow.Completed) },
		},
		{
			// Withdrawing a settled effect would let code repeat it.
			name:    "a settled effect as absent",
			setup:   effectPublished,
			request: func(r *effectRun) error { return r.resolve("publish", workflow.Absent) },
		},
		{
			// An effect's subject is resolved; releasing it would say
			// nothing about what took place.
			name:  "release of an effect subject",
			setup: effectPartlyPublished,
			request: func(r *effectRun) error {
				r.t.Helper()
				return r.open().Release("effect publish")
			},
			// Not refused as an unknown job: the operator is sent to resolve.
			says: "resolve",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.setup(t)
			journal := r.bytesOf(".custodian/effects/publish.json")
			state := r.state()

			err := tc.request(r)
			require.ErrorIs(t, err, engine.ErrRefused)
			if tc.says != "" {
				assert.Contains(t, err.Error()+"\n"+engine.Hint(err), tc.says)
			}

			assert.Equal(t, string(journal), string(r.bytesOf(".custodian/effects/publish.json")), "a refused request changes no journal")
			assert.Equal(t, string(state), string(r.state()), "a refused request changes no state")
			assert.NoFileExists(t, r.journalPath("announce"))
		})
	}
}

// effectPublished is a run whose publish effect completed and is reached,
// with its inputs as they were: settled, nothing to resolve.
func effectPublished(t *testing.T) *effectRun {
	t.Helper()
	r := effectPublishRun(t, "files")
	r.expect(engine.KindDone)
	require.Equal(t, store.EffectCompleted, r.journal("publish").Status)
	return r
}
