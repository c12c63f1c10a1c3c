package store

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A looker's answer for a file that is not an output is taken without an
// lstat while the watch has heard nothing, and every way the definition's
// own code may change the file through its path, or a directory on the
// way, is heard before the replay asks.
func TestWatch_HearsEveryChangeMadeThroughThePath(t *testing.T) {
	const planted = "0000000000000000000000000000000000000000000000000000000000000000"
	tests := []struct {
		name   string
		key    string
		change func(t *testing.T, r *Run)
		want   string // "planted": the looker's answer was taken; else what is there now
	}{
		{"nothing", "d/f", func(*testing.T, *Run) {}, "planted"},
		{"rewritten at the same size", "d/f", func(t *testing.T, r *Run) {
			require.NoError(t, os.WriteFile(r.abs("d/f"), []byte("BYTES"), 0o644))
		}, "BYTES"},
		{"appended to", "d/f", func(t *testing.T, r *Run) {
			fh, err := os.OpenFile(r.abs("d/f"), os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = fh.WriteString(" more")
			require.NoError(t, err)
			require.NoError(t, fh.Close())
		}, "bytes more"},
		{"truncated", "d/f", func(t *testing.T, r *Run) {
			require.NoError(t, os.Truncate(r.abs("d/f"), 2))
		}, "by"},
		{"touched", "d/f", func(t *testing.T, r *Run) {
			now := time.Now()
			require.NoError(t, os.Chtimes(r.abs("d/f"), now, now))
		}, "bytes"},
		{"replaced by a rename", "d/f", func(t *testing.T, r *Run) {
			putFile(t, r.abs("d/new"), "other")
			require.NoError(t, os.Rename(r.abs("d/new"), r.abs("d/f")))
		}, "other"},
		{"removed and made again", "d/f", func(t *testing.T, r *Run) {
			require.NoError(t, os.Remove(r.abs("d/f")))
			putFile(t, r.abs("d/f"), "again")
		}, "again"},
		{"its directory replaced", "d/f", func(t *testing.T, r *Run) {
			require.NoError(t, os.Rename(r.abs("d"), r.abs("old")))
			putFile(t, r.abs("d/f"), "moved")
		}, "moved"},
		{"a directory above it replaced", "top/d/f", func(t *testing.T, r *Run) {
			require.NoError(t, os.Rename(r.abs("top"), r.abs("old")))
			putFile(t, r.abs("top/d/f"), "moved")
		}, "moved"},
		{"another file beside it written", "d/f", func(t *testing.T, r *Run) {
			putFile(t, r.abs("d/other"), "x")
		}, "planted"}, // heard, so the replay looks, and finds f as the looker did
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			useLookers(t, 1)
			r := newPrefetchRun(t)
			putFile(t, r.abs(tt.key), "bytes")
			f := lookedAt(t, r, time.Hour, tt.key) // the file is older than the racy window
			require.NotNil(t, f.pre.watch, "the directories are not watched")
			it := requireDone(t, f, tt.key)
			require.Equal(t, sum64("bytes"), it.sum)
			it.sum = planted

			tt.change(t, r)
			got, err := f.Hash(tt.key, -1)
			require.NoError(t, err)
			want := planted
			if tt.want != "planted" {
				want = sum64(tt.want)
			}
			assert.Equal(t, want, got.SHA256)
		})
	}
}

// Without a change, the replay takes the looker's answer without looking:
// an identity the file does not have is not noticed, which shows that no
// lstat was made.
func TestWatch_QuietMeansNoLook(t *testing.T) {
	useLookers(t, 1)
	r := newPrefetchRun(t)
	putFile(t, r.abs("d/f"), "bytes")
	f := lookedAt(t, r, time.Hour, "d/f")
	const planted = "0000000000000000000000000000000000000000000000000000000000000000"
	it := requireDone(t, f, "d/f")
	it.info.Ino++ // not the file's
	it.sum = planted
	got, err := f.Hash("d/f", -1)
	require.NoError(t, err)
	assert.Equal(t, planted, got.SHA256, "the replay looked at the file")
	assert.True(t, f.pre.watch.quiet())

	// Heard once, the watch never says quiet again, and the replay looks:
	// the identity is noticed.
	putFile(t, r.abs("d/g"), "x")
	assert.False(t, f.pre.watch.quiet())
	assert.False(t, f.pre.watch.quiet())
	got, err = f.Hash("d/f", -1)
	require.NoError(t, err)
	assert.Equal(t, sum64("bytes"), got.SHA256, "the looker's answer was taken for a file it did not see")
}

func TestWatch_Dirs(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want []string
	}{
		{"the run's own", []string{"a", "b"}, []string{"."}},
		{"with every directory above", []string{"x/y/z/f", "x/g"}, []string{".", "x/y/z", "x/y", "x"}},
		{"outside the run", []string{"/elsewhere/f", "a/f"}, []string{".", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &prefetch{}
			for _, key := range tt.keys {
				p.items = append(p.items, prefetchItem{key: key})
			}
			assert.ElementsMatch(t, tt.want, p.watchedDirs())
		})
	}
	t.Run("too many", func(t *testing.T) {
		p := &prefetch{}
		for i := range maxWatched {
			p.items = append(p.items, prefetchItem{key: fmt.Sprintf("d%d/f", i)})
		}
		assert.Nil(t, p.watchedDirs(), "the run itself and %d more", maxWatched)
		p.items = p.items[:maxWatched-1]
		assert.Len(t, p.watchedDirs(), maxWatched)
	})
}

// A watch is made of the directories the lookers will look in; one that
// does not exist yet is heard of when it is made, in its parent.
func TestWatch_MissingDirectoryIsMadeInItsParent(t *testing.T) {
	useLookers(t, 1)
	r := newPrefetchRun(t)
	f := lookedAt(t, r, time.Hour, "later/f")
	requireDone(t, f, "later/f")
	require.NotNil(t, f.pre.watch)
	putFile(t, r.abs("later/f"), "made")
	got, err := f.Hash("later/f", -1)
	require.NoError(t, err)
	assert.Equal(t, sum64("made"), got.SHA256)
}
