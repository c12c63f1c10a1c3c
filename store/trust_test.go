package store

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A replay takes what a looker found of a file other than an output on
// trust, and the lookers look at it again behind the replay: a file the
// definition's own code changed in between makes the files stale, so that
// the replay runs again. These tests drive Files as a replay does, with
// files older than the racy window (a command that began an hour from now).

// trustedFiles returns r's files of a command that began an hour from now,
// prefetching keys, once its lookers have looked at them all.
func trustedFiles(t *testing.T, r *Run, keys ...string) *Files {
	t.Helper()
	f := lookedAt(t, r, time.Hour, keys...)
	require.True(t, f.pre.trust, "precondition: the prefetch takes files on trust")
	return f
}

// rewrite writes text to p, in place, past the granularity of the change
// time: the file's identity changes.
func rewrite(t *testing.T, p, text string) {
	t.Helper()
	before := lstatFile(t, p)
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	require.NotEqual(t, before, lstatFile(t, p), "precondition: the identity changed")
}

// assertSeesRewrite rewrites key with text, and checks that f's Hash finds
// the change itself, with no file taken on trust to find it behind.
func assertSeesRewrite(t *testing.T, r *Run, f *Files, key, text, why string) {
	t.Helper()
	rewrite(t, r.abs(key), text)
	c, err := f.Hash(key, -1)
	require.NoError(t, err)
	assert.Equal(t, sum64(text), c.SHA256, why)
	assert.False(t, f.Stale(), "%s: the change was left to the look behind the replay", key)
}

func TestTrust_UnchangedFilesAreNotStale(t *testing.T) {
	for _, n := range []int{1, 3} {
		useLookers(t, n)
		r := newPrefetchRun(t)
		keys := []string{"in/a", "in/b", "out/a", "missing"}
		for _, key := range keys[:3] {
			putFile(t, r.abs(key), key)
		}
		f := trustedFiles(t, r, keys...)
		p := f.pre
		for _, key := range []string{"in/a", "in/b", "missing"} {
			c, err := f.Hash(key, -1)
			require.NoError(t, err)
			want, err := plainHash(t, r, key, -1)
			require.NoError(t, err)
			assert.Equal(t, want, c, key)
			assert.Equal(t, itemTrusted, itemOf(t, f, key).state.Load(), "%s was not taken on trust", key)
		}
		_, err := f.HashOutput("out/a", -1)
		require.NoError(t, err)
		assert.Equal(t, itemDone, itemOf(t, f, "out/a").state.Load(), "an output was taken on trust, to be looked at again")

		assert.False(t, f.Stale(), "%d lookers: nothing changed, yet the files are stale", n)
		assert.Nil(t, f.pre, "Stale did not settle")
		assert.Equal(t, int64(3), p.verified.Load(), "not every file taken on trust was looked at again")
	}
}

func TestTrust_AChangedFileMakesTheFilesStale(t *testing.T) {
	for _, tc := range []struct {
		name string
		// changed between the looker's look and the replay's question, or
		// after the question
		beforeAsked bool
	}{
		{"changed before the replay asked", true},
		{"changed after the replay asked", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useLookers(t, 1)
			r := newPrefetchRun(t)
			putFile(t, r.abs("merged.md"), "old")
			putFile(t, r.abs("other.md"), "other")
			f := trustedFiles(t, r, "merged.md", "other.md")
			if tc.beforeAsked {
				rewrite(t, r.abs("merged.md"), "new")
			}
			c, err := f.Hash("merged.md", -1)
			require.NoError(t, err)
			assert.Equal(t, sum64("old"), c.SHA256, "precondition: taken on trust, as the looker found it")
			if !tc.beforeAsked {
				rewrite(t, r.abs("merged.md"), "new")
			}
			_, err = f.Hash("other.md", -1)
			require.NoError(t, err)
			assert.True(t, f.Stale(), "a file taken on trust changed, and the files are not stale")

			// Distrusted, the next prefetch confirms what it takes.
			f.Distrust()
			assert.False(t, f.Stale(), "Distrust did not clear Stale")
			f.Prefetch([]string{"merged.md", "other.md"})
			waitLookers(t, f)
			assertSeesRewrite(t, r, f, "merged.md", "newer", "a distrusting prefetch gave what its looker found of a changed file")
		})
	}
}

// A file asked for again is confirmed then: its look behind the replay may
// be done already.
func TestTrust_AFileAskedForAgainIsConfirmed(t *testing.T) {
	useLookers(t, 1)
	r := newPrefetchRun(t)
	putFile(t, r.abs("shared.md"), "old")
	f := trustedFiles(t, r, "shared.md")
	_, err := f.Hash("shared.md", -1)
	require.NoError(t, err)
	f.pre.publish()
	require.Eventually(t, func() bool { return f.pre.verified.Load() == 1 }, 10*time.Second, time.Millisecond,
		"precondition: the looker looked at it again")

	assertSeesRewrite(t, r, f, "shared.md", "new", "a file asked for again was taken as the looker first found it")
}

// A file changed within the racy window of the step is never taken on
// trust: rewritten at the same size within a tick, it would keep its
// identity, and its look behind the replay would find nothing.
func TestTrust_ARacyFileIsNotTakenOnTrust(t *testing.T) {
	useLookers(t, 1)
	r := newPrefetchRun(t)
	putFile(t, r.abs("young.md"), "young")
	f := lookedAt(t, r, 0, "young.md")
	_, err := f.Hash("young.md", -1)
	require.NoError(t, err)
	assert.NotEqual(t, itemTrusted, itemOf(t, f, "young.md").state.Load())
	assert.False(t, f.Stale())
}

// Settling while the lookers wait for files to look at again ends them,
// after the last batch the replay took is looked at.
func TestTrust_SettleEndsWaitingLookers(t *testing.T) {
	useLookers(t, 2)
	r := newPrefetchRun(t)
	var keys []string
	for i := range 3*verifyBatch + 7 {
		key := join("many", "f-"+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676)))
		putFile(t, r.abs(key), key)
		keys = append(keys, key)
	}
	f := trustedFiles(t, r, keys...)
	p := f.pre
	for _, key := range keys {
		_, err := f.Hash(key, -1)
		require.NoError(t, err)
	}
	done := make(chan bool)
	go func() { done <- f.Stale() }()
	select {
	case stale := <-done:
		assert.False(t, stale)
	case <-time.After(20 * time.Second):
		require.FailNow(t, "Stale did not return: a looker waits still")
	}
	assert.Equal(t, int64(len(keys)), p.verified.Load(), "not every file taken on trust was looked at again")
}

// replaceGen builds a new gen/ aside, holding merged.md, and renames it
// over the old one, as a mechanical step that regenerates a directory does.
func replaceGen(t *testing.T, r *Run) {
	t.Helper()
	putFile(t, r.abs("gen.tmp/merged.md"), "new")
	require.NoError(t, os.Rename(r.abs("gen"), r.abs("gen.old")))
	require.NoError(t, os.Rename(r.abs("gen.tmp"), r.abs("gen")))
}

// Whoever looks again behind the replay, a looker as the replay goes on
// or the step itself as it settles, finds what the definition's code did
// between the look ahead and the replay's question: through directories
// opened after the question, so that a directory replaced by a rename is
// the new one.
func TestTrust_WhoeverLooksAgainFindsTheChange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before map[string]string // the files before the step
		key    string
		change func(t *testing.T, r *Run)
	}{
		{"rewritten in place", map[string]string{"merged.md": "old"}, "merged.md", func(t *testing.T, r *Run) {
			rewrite(t, r.abs("merged.md"), "new")
		}},
		{"its directory replaced by a rename", map[string]string{"gen/merged.md": "old"}, "gen/merged.md", replaceGen},
		{"made where nothing was", map[string]string{"other.md": "other"}, "merged.md", func(t *testing.T, r *Run) {
			putFile(t, r.abs("merged.md"), "new")
		}},
		{"made in a directory put in place of an empty one", map[string]string{"gen/.keep": ""}, "gen/merged.md", replaceGen},
	} {
		for _, byLooker := range []bool{true, false} {
			name := tc.name + ", as the step settles"
			if byLooker {
				name = tc.name + ", by a looker"
			}
			t.Run(name, func(t *testing.T) {
				useLookers(t, 1)
				r := newPrefetchRun(t)
				for key, text := range tc.before {
					putFile(t, r.abs(key), text)
				}
				f := trustedFiles(t, r, tc.key)
				was := requireDone(t, f, tc.key).info
				tc.change(t, r)
				_, err := f.Hash(tc.key, -1)
				require.NoError(t, err)
				require.Equal(t, itemTrusted, itemOf(t, f, tc.key).state.Load(), "precondition: taken on trust")
				require.Equal(t, was, itemOf(t, f, tc.key).info, "precondition: as the looker found it before the change")
				p := f.pre
				if byLooker {
					p.publish()
					require.Eventually(t, func() bool { return p.verified.Load() == 1 }, 10*time.Second, time.Millisecond,
						"precondition: the looker looked again")
				}
				assert.True(t, f.Stale(), "the change was not found behind the replay")
			})
		}
	}
}

// A file asked for as an output and then as another job's input is taken
// on trust the second time, and looked at again: only as an output does a
// look after the lock stand for the rest of the step.
func TestTrust_AnOutputReadAsAnInputIsLookedAtAgain(t *testing.T) {
	useLookers(t, 1)
	r := newPrefetchRun(t)
	putFile(t, r.abs("out/a.md"), "old")
	f := trustedFiles(t, r, "out/a.md")
	_, err := f.HashOutput("out/a.md", -1)
	require.NoError(t, err)
	require.Equal(t, itemDone, itemOf(t, f, "out/a.md").state.Load(), "precondition: an output is not taken on trust")
	rewrite(t, r.abs("out/a.md"), "new")
	_, err = f.Hash("out/a.md", -1)
	require.NoError(t, err)
	assert.Equal(t, itemTrusted, itemOf(t, f, "out/a.md").state.Load())
	assert.True(t, f.Stale(), "an output rewritten before another job read it was not found behind the replay")
}
