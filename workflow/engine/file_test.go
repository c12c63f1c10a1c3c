package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFileShowsWhatLiesThereAndOpensOnlyRegularFiles(t *testing.T) {
	h := startRun(t, newVersioned().definition(), source)
	outside := filepath.Join(t.TempDir(), "secret")
	writeFile(t, outside, "not the run's\n")
	writeFile(t, filepath.Join(h.dir, "notes", "a.md"), "# a\n")
	writeFile(t, filepath.Join(h.dir, "big.log"), strings.Repeat("x", engine.MaxFileShown+1))
	require.NoError(t, os.Symlink(outside, filepath.Join(h.dir, "link.md")))
	require.NoError(t, os.Symlink(filepath.Dir(outside), filepath.Join(h.dir, "away")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(h.dir, "pipe"), 0o644))

	tests := []struct {
		rel  string
		want engine.RunFile
	}{
		{"notes/a.md", engine.RunFile{Rel: "notes/a.md", Kind: store.Regular.String(), Text: []byte("# a\n")}},
		{"notes", engine.RunFile{Rel: "notes", Kind: store.Directory.String(), Names: []string{"a.md"}}},
		{"link.md", engine.RunFile{Rel: "link.md", Kind: store.Link.String()}},
		{"pipe", engine.RunFile{Rel: "pipe", Kind: store.Pipe.String()}},
		{"gone.md", engine.RunFile{Rel: "gone.md", Kind: store.Missing.String()}},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			f, err := h.o.File(tt.rel)
			require.NoError(t, err)
			assert.Equal(t, tt.want, f)
		})
	}

	t.Run("a file too big to show whole", func(t *testing.T) {
		f, err := h.o.File("big.log")
		require.NoError(t, err)
		assert.True(t, f.Cut)
		assert.Len(t, f.Text, engine.MaxFileShown)
	})
	t.Run("a path through a link", func(t *testing.T) {
		f, err := h.o.File("away/secret")
		require.ErrorIs(t, err, store.ErrLink)
		assert.Empty(t, f.Text)
	})
}

func TestOverviewAgreesWithStatusGraphAndStories(t *testing.T) {
	h := startRun(t, newVersioned().definition(), source)
	h.work(h.launch("a"), map[string]reply{"a": {output: "no heading\n"}})
	h.work(h.launch("a"), nil)
	h.launch("b")

	ov, err := h.o.Overview()
	require.NoError(t, err)
	s, err := h.o.Status()
	require.NoError(t, err)
	stories, err := h.o.Stories()
	require.NoError(t, err)
	assert.Equal(t, s, ov.Status)
	assert.Equal(t, graphOf(t, h.o), ov.Graph)
	assert.Equal(t, stories, ov.Stories)
	assert.Len(t, ov.Stories, 2)
}
