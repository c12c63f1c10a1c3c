//go:build unix

package store_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A named pipe where a file belongs is no file: hashing it must not open
// it, which would wait for a writer forever while the run is locked.
func TestFileSHA256OfAFIFOIsNoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe")
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	sum, err := store.FileSHA256(path)
	require.NoError(t, err)
	assert.Empty(t, sum)
}
