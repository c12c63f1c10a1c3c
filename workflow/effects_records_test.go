package workflow_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// effectEditJournal rewrites a field of a journal, keeping the rest as the
// engine wrote it.
func effectEditJournal(r *effectRun, name string, edit func(fields map[string]any)) {
	r.t.Helper()
	var fields map[string]any
	require.NoError(r.t, json.Unmarshal(r.bytesOf(".custodian/effects/"+name+".json"), &fields))
	edit(fields)
	data, err := json.Marshal(fields)
	require.NoError(r.t, err)
	r.write(".custodian/effects/"+name+".json", string(data))
}

// A journal that cannot be trusted must never be read as "not run": that
// would repeat the effect. Each damaged record fails the step instead.
func TestEffectUntrustedJournalFailsTheStepAndRepeatsNothing(t *testing.T) {
	cases := []struct {
		name   string
		damage func(r *effectRun)
	}{
		{name: "not JSON", damage: func(r *effectRun) { r.write(".custodian/effects/publish.json", "{\"format\": 1, \"na") }},
		{name: "another format", damage: func(r *effectRun) {
			effectEditJournal(r, "publish", func(f map[string]any) { f["format"] = 2 })
		}},
		{name: "a name that does not match its file", damage: func(r *effectRun) {
			// The journal of publish under another name: publish itself
			// now has no journal, and would run if this one were skipped.
			require.NoError(r.t, os.Rename(r.journalPath("publish"), r.journalPath("published")))
		}},
		{name: "an unknown status", damage: func(r *effectRun) {
			effectEditJournal(r, "publish", func(f map[string]any) { f["status"] = "running" })
		}},
		{name: "a missing field", damage: func(r *effectRun) {
			effectEditJournal(r, "publish", func(f map[string]any) { delete(f, "status") })
		}},
		{name: "state.json missing beside it", damage: func(r *effectRun) {
			require.NoError(r.t, os.Remove(r.path(".custodian/state.json")))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := effectPublished(t)
			tc.damage(r)

			// Every step refuses; none reads the damage as an outcome.
			for range 2 {
				require.ErrorIs(t, r.stepErr(), store.ErrUntrusted)
			}
			require.ErrorIs(t, r.resolve("publish", workflow.Absent), store.ErrUntrusted)
			assert.Equal(t, 1, r.runs("publish"), "an effect was repeated on a record that cannot be trusted")
			assert.Equal(t, 0, r.asked("publish"))
		})
	}
}

// A step lists the moves it owes in the state it commits, performs them, and
// saves the state again without them. A process that ends between the last
// move and that second save leaves moves listed that are already done. The
// next step must not repeat one on a later file with the same bytes: the
// kept copy at the target is the receipt of the finished move.
func TestEffectOwedMoveWithAKeptCopyLeavesALaterFileInPlace(t *testing.T) {
	const text = "# a\n"
	def := &workflow.Definition{Name: "moves", Run: func(ctx *workflow.Context) error {
		ctx.Agent(effectJob("a", "source.md")).Wait()
		return nil
	}}
	// A stray a.md lies in the way of the first hand-out.
	r := effectStartDef(t, def, map[string]string{"source.md": "the source text\n", "a.md": text})

	r.launch(false, "a")
	const kept = ".custodian/jobs/a/kept/1-a.md"
	require.Equal(t, text, r.read(kept), "the stray file is kept")
	require.NoFileExists(t, r.path("a.md"))

	// The state as that step committed it, before its moves were done.
	run, err := store.Open(r.dir)
	require.NoError(t, err)
	st, err := run.LoadState()
	require.NoError(t, err)
	require.Empty(t, st.Moves)
	sum, err := store.FileSHA256(r.path(kept))
	require.NoError(t, err)
	st.Moves = []store.Move{{Source: "a.md", Target: kept, SHA256: sum}}
	require.NoError(t, run.SaveState("test", st))

	// The worker writes its output: by chance the very bytes of the kept file.
	r.write("a.md", text)

	// The step that finishes the owed moves gives the outcome nobody saw,
	// the hand-out of attempt 1, without judging a new round.
	again := r.expect(workflow.KindLaunch)
	require.Len(t, again.Jobs, 1)
	assert.Equal(t, 1, again.Jobs[0].Attempt)
	// Were the move repeated, a.md would be gone and the job handed out again.
	r.expect(workflow.KindDone)
	assert.Equal(t, text, r.read("a.md"))
	assert.Equal(t, text, r.read(kept))
	assert.NoFileExists(t, r.path(".custodian/jobs/a/kept/2-a.md"))
	st, err = run.LoadState()
	require.NoError(t, err)
	assert.Empty(t, st.Moves, "recovered moves are cleared")
}

// The history remembers every effect it recorded: a journal that vanished
// since cannot be taken for an effect that never ran, which would run it
// again.
func TestEffectJournalThatVanishedIsUntrusted(t *testing.T) {
	def := &workflow.Definition{Name: "vanish", Run: func(ctx *workflow.Context) error {
		ctx.Effect("once", func() error { return effectTally(ctx.RunDir(), "once.runs") })
		return nil
	}}
	r := effectStartDef(t, def, effectSource)
	r.expect(workflow.KindDone)
	require.NoError(t, os.Remove(r.journalPath("once")))

	for range 2 {
		require.ErrorIs(t, r.stepErr(), store.ErrUntrusted)
	}
	_, err := r.open().Status()
	assert.ErrorIs(t, err, store.ErrUntrusted)
	assert.Equal(t, 1, r.runs("once"))
}
