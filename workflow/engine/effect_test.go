package engine_test

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestContext_Effect(t *testing.T) {
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
		r.expect(engine.KindDone)
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
	r.expect(engine.KindDone)
	r.expect(engine.KindDone)

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
	r.expect(engine.KindDone)

	assert.Equal(t, 1, r.runs("stamp"))
	assert.Equal(t, stamp, r.read("stamp.txt"))
	e := r.journal("stamp")
	assert.Equal(t, store.EffectCompleted, e.Status)
	assert.Equal(t, "recognizer", e.By)
	assert.Equal(t, 1, r.asked("stamp"), "a recognized effect is completed; its recognizer is not asked again")
}

func TestEffectStartedWhenTheWorkflowIsStoppedIsUncertain(t *testing.T) {
	r := effectStart(t, effectRegistry(), "effect-stop", nil, nil)

	// One path's effect fails and leaves its journal started; another path
	// stops the run in the same step.
	blocks := r.blocked()
	require.Contains(t, blocks, "workflow")
	stop := blocks["workflow"]
	require.Equal(t, engine.BlockWorkflowStop, stop.Kind)
	require.Equal(t, engine.PermitStop, stop.Permitted)
	require.Equal(t, store.EffectStarted, r.journal("publish").Status)

	// A stopped workflow does not run, so nobody can recognize the effect:
	// its fate is uncertain, and the stop travels with it. So it stays.
	for range 2 {
		out := r.expect(engine.KindUncertain)
		require.Equal(t, []string{"publish"}, effectNames(out.Effects))
		assert.Contains(t, out.Effects[0].Detail, "completion was not recorded")
		assert.Contains(t, out.Effects[0].Detail, "stopped")
		assert.Equal(t, []engine.Block{stop}, out.Blocks)
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

func effectSubjects(blocks map[string]engine.Block) []string {
	return slices.Sorted(maps.Keys(blocks))
}

// effectReleased is a run of effect-release that published release.md v1
// and finished.
func effectReleased(t *testing.T) *effectRun {
	t.Helper()
	r := effectStart(t, effectRegistry(), "effect-release", nil,
		map[string]string{"source.md": "the source text\n", "release.md": "v1\n"})
	r.launch(true, "announce")
	r.expect(engine.KindDone)
	require.Equal(t, 1, r.runs("publish"))
	return r
}

// effectInputsChangedBlock runs one step that must block on the effect alone,
// and checks the block: stop only, naming the input that changed.
func effectInputsChangedBlock(r *effectRun) engine.Block {
	r.t.Helper()
	blocks := r.blocked()
	require.Equal(r.t, []string{"effect publish"}, effectSubjects(blocks))
	b := blocks["effect publish"]
	assert.Equal(r.t, engine.BlockEffectInputsChanged, b.Kind)
	assert.Equal(r.t, engine.PermitStop, b.Permitted)
	assert.Contains(r.t, b.Reason, "the effect is completed and its inputs have changed since")
	assert.Contains(r.t, b.Reason, "input release.md")
	assert.FileExists(r.t, b.Record)
	return b
}

func TestEffectWhoseInputsChangedStopsTheRun(t *testing.T) {
	t.Run("judged anew until the inputs are restored", func(t *testing.T) {
		r := effectReleased(t)
		r.write("release.md", "v2\n")

		// The block is not stored: each step finds it again, and the run
		// never reports itself finished while it stands.
		effectInputsChangedBlock(r)
		effectInputsChangedBlock(r)

		r.write("release.md", "v1\n")
		r.expect(engine.KindDone)
		assert.Equal(t, 1, r.runs("publish"), "code neither repeats an effect nor undoes it")
		assert.Equal(t, "v1\n", r.published("release.md"))
	})
	t.Run("blocked before a reopened job is launched", func(t *testing.T) {
		r := effectReleased(t)
		r.write("release.md", "v2\n")
		r.write("source.md", "another source\n") // reopens announce

		effectInputsChangedBlock(r)
		assert.Equal(t, 1, r.runs("publish"))

		// With the effect's input restored, the reopened job goes out.
		r.write("release.md", "v1\n")
		r.launch(true, "announce")
		r.expect(engine.KindDone)
		assert.Equal(t, 1, r.runs("publish"))
	})
	t.Run("resolved completed, it stands with the new inputs", func(t *testing.T) {
		r := effectReleased(t)
		r.write("release.md", "v2\n")
		effectInputsChangedBlock(r)

		require.NoError(t, r.resolve("publish", workflow.Completed))
		r.expect(engine.KindDone)
		r.expect(engine.KindDone)
		assert.Equal(t, 1, r.runs("publish"))
		assert.Equal(t, "v1\n", r.published("release.md"), "letting it stand publishes nothing")
		// Once resolved, the effect is settled again.
		require.ErrorIs(t, r.resolve("publish", workflow.Completed), engine.ErrRefused)
	})
	t.Run("resolved absent, it runs again with the new inputs", func(t *testing.T) {
		r := effectReleased(t)
		r.write("release.md", "v2\n")
		effectInputsChangedBlock(r)

		require.NoError(t, r.resolve("publish", workflow.Absent))
		r.expect(engine.KindDone)
		assert.Equal(t, 2, r.runs("publish"))
		assert.Equal(t, "v2\n", r.published("release.md"))
		e := r.journal("publish")
		assert.Equal(t, store.EffectCompleted, e.Status)
		assert.Equal(t, 2, e.Runs)
		r.expect(engine.KindDone)
		assert.Equal(t, 2, r.runs("publish"))
	})
}

func TestEffectWhoseInputsAreRewrittenWithTheSameBytesIsKept(t *testing.T) {
	r := effectReleased(t)
	journal := r.bytesOf(".custodian/effects/publish.json")

	// Same bytes, a new file: only the content counts, not the write.
	require.NoError(t, os.Remove(r.path("release.md")))
	r.write("release.md", "v1\n")
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(r.path("release.md"), later, later))

	r.expect(engine.KindDone)
	assert.Equal(t, 1, r.runs("publish"))
	assert.Equal(t, string(journal), string(r.bytesOf(".custodian/effects/publish.json")))
}

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
			assert.Equal(t, engine.BlockEffectUnreached, b.Kind)
			assert.Equal(t, engine.PermitStop, b.Permitted)
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
			out := r.expect(engine.KindUncertain)
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
			r.expect(engine.KindDone)
			r.expect(engine.KindDone)
			assert.Equal(t, 1, r.runs("publish"))
			assert.Equal(t, store.EffectCompleted, r.journal("publish").Status)
		})
		t.Run(tc.name+", resolved absent, is withdrawn and runs when reached again", func(t *testing.T) {
			r := tc.setup(t)
			require.NoError(t, r.resolve("publish", workflow.Absent))
			r.expect(engine.KindDone)
			r.expect(engine.KindDone)
			assert.Equal(t, 1, r.runs("publish"), "a withdrawn effect is owed nothing while unreached")

			// Switch the branch back: the definition reaches the effect again.
			require.NoError(t, os.Remove(r.path("withdraw")))
			r.expect(engine.KindDone)
			assert.Equal(t, 2, r.runs("publish"))
			e := r.journal("publish")
			assert.Equal(t, store.EffectCompleted, e.Status)
			assert.Equal(t, 2, e.Runs)
			assert.Equal(t, "draft.md\n", r.published("index.md"))
		})
	}
}

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
		out := r.expect(engine.KindUncertain)
		assert.Equal(t, []string{"one", "two"}, effectNames(out.Effects), "every uncertain effect is listed")
		assert.Empty(t, out.Jobs, "an uncertain step hands nothing out")
		blocks := effectBlocksBySubject(t, out.Blocks)
		require.Equal(t, []string{"a"}, effectSubjects(blocks), "the block found on another path travels with the outcome")
		assert.Equal(t, engine.BlockProblemReport, blocks["a"].Kind)
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
	r.expect(engine.KindDone)
	require.Equal(t, 1, after)

	r.write("source.md", "another text\n")
	r.write("go-second", "")
	after = 0
	out := r.expect(engine.KindBlocked)
	assert.Equal(t, []string{"effect first"}, effectSubjects(effectBlocksBySubject(t, out.Blocks)))
	assert.Zero(t, after, "the code after the blocked effect ran")
	assert.Zero(t, r.runs("second"), "a new effect started in a step that stops the run")

	r.write("source.md", effectSource["source.md"])
	r.expect(engine.KindDone)
	assert.Equal(t, 1, after)
	assert.Equal(t, 1, r.runs("first"))
	assert.Equal(t, 1, r.runs("second"))
}

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
			effectEditJournal(r, "publish", func(f map[string]any) { f["format"] = 3 })
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
	defer run.Close()
	unlock, err := run.Lock()
	require.NoError(t, err)
	st, err := run.LoadState()
	require.NoError(t, err)
	require.Empty(t, st.Moves)
	id, err := run.Identity(kept)
	require.NoError(t, err)
	st.Moves = []store.Move{{Source: "a.md", Target: kept, Identity: id}}
	require.NoError(t, run.SaveState("test", st))
	unlock()

	// The worker writes its output: by chance the very bytes of the kept file.
	r.write("a.md", text)

	// The step that finishes the owed moves gives the outcome nobody saw,
	// the hand-out of attempt 1, without judging a new round.
	again := r.expect(engine.KindLaunch)
	require.Len(t, again.Jobs, 1)
	assert.Equal(t, 1, again.Jobs[0].Attempt)
	// Were the move repeated, a.md would be gone and the job handed out again.
	r.expect(engine.KindDone)
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
	r.expect(engine.KindDone)
	require.NoError(t, os.Remove(r.journalPath("once")))

	for range 2 {
		require.ErrorIs(t, r.stepErr(), store.ErrUntrusted)
	}
	_, err := r.open().Status()
	assert.ErrorIs(t, err, store.ErrUntrusted)
	assert.Equal(t, 1, r.runs("once"))
}
