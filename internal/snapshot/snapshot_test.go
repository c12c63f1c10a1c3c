package snapshot_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/internal/snapshot"
)

// Every kind of change under the root changes the snapshot: the tests
// that hold a command to writing nothing would pass without it.
func TestEveryChangeShows(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, root string)
	}{
		{"a file's bytes", func(t *testing.T, root string) {
			writeAt(t, filepath.Join(root, "d", "a.md"), "other\n", time.Unix(1, 0))
		}},
		{"a file's mode", func(t *testing.T, root string) { require.NoError(t, os.Chmod(filepath.Join(root, "d", "a.md"), 0o600)) }},
		{"a new file", func(t *testing.T, root string) { writeAt(t, filepath.Join(root, "b.md"), "b\n", time.Unix(1, 0)) }},
		{"a link's target", func(t *testing.T, root string) {
			link := filepath.Join(root, "l")
			require.NoError(t, os.Remove(link))
			require.NoError(t, os.Symlink("elsewhere", link))
		}},
		{"a file moved", func(t *testing.T, root string) {
			require.NoError(t, os.Rename(filepath.Join(root, "d", "a.md"), filepath.Join(root, "a.md")))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeAt(t, filepath.Join(root, "d", "a.md"), "a\n", time.Unix(1, 0))
			require.NoError(t, os.Symlink("d/a.md", filepath.Join(root, "l")))
			before := snapshot.Take(t, root)
			assert.Equal(t, before, snapshot.Take(t, root), "a tree left alone")
			tt.change(t, root)
			assert.NotEqual(t, before, snapshot.Take(t, root))
		})
	}
}

// writeAt writes a file, and sets its modification time to at, so that
// only its bytes tell it from one written before.
func writeAt(t *testing.T, path, text string, at time.Time) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	require.NoError(t, os.Chtimes(path, at, at))
}
