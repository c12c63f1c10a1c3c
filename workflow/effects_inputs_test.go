package workflow_test

import (
	"os"
	"testing"
	"time"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// effectReleased is a run of effect-release that published release.md v1
// and finished.
func effectReleased(t *testing.T) *effectRun {
	t.Helper()
	r := effectStart(t, effectRegistry(), "effect-release", nil,
		map[string]string{"source.md": "the source text\n", "release.md": "v1\n"})
	r.launch(true, "announce")
	r.expect(workflow.KindDone)
	require.Equal(t, 1, r.runs("publish"))
	return r
}

// effectInputsChangedBlock runs one step that must block on the effect alone,
// and checks the block: stop only, naming the input that changed.
func effectInputsChangedBlock(r *effectRun) workflow.Block {
	r.t.Helper()
	blocks := r.blocked()
	require.Equal(r.t, []string{"effect publish"}, effectSubjects(blocks))
	b := blocks["effect publish"]
	assert.Equal(r.t, workflow.BlockEffectInputsChanged, b.Kind)
	assert.Equal(r.t, workflow.PermitStop, b.Permitted)
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
		r.expect(workflow.KindDone)
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
		r.expect(workflow.KindDone)
		assert.Equal(t, 1, r.runs("publish"))
	})
	t.Run("resolved completed, it stands with the new inputs", func(t *testing.T) {
		r := effectReleased(t)
		r.write("release.md", "v2\n")
		effectInputsChangedBlock(r)

		require.NoError(t, r.resolve("publish", workflow.Completed))
		r.expect(workflow.KindDone)
		r.expect(workflow.KindDone)
		assert.Equal(t, 1, r.runs("publish"))
		assert.Equal(t, "v1\n", r.published("release.md"), "letting it stand publishes nothing")
		// Once resolved, the effect is settled again.
		require.ErrorIs(t, r.resolve("publish", workflow.Completed), workflow.ErrRefused)
	})
	t.Run("resolved absent, it runs again with the new inputs", func(t *testing.T) {
		r := effectReleased(t)
		r.write("release.md", "v2\n")
		effectInputsChangedBlock(r)

		require.NoError(t, r.resolve("publish", workflow.Absent))
		r.expect(workflow.KindDone)
		assert.Equal(t, 2, r.runs("publish"))
		assert.Equal(t, "v2\n", r.published("release.md"))
		e := r.journal("publish")
		assert.Equal(t, store.EffectCompleted, e.Status)
		assert.Equal(t, 2, e.Runs)
		r.expect(workflow.KindDone)
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

	r.expect(workflow.KindDone)
	assert.Equal(t, 1, r.runs("publish"))
	assert.Equal(t, string(journal), string(r.bytesOf(".custodian/effects/publish.json")))
}
