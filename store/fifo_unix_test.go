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
func TestFiles_HashOfAPipeIsNoFile(t *testing.T) {
	run := newRun(t)
	require.NoError(t, syscall.Mkfifo(filepath.Join(run.Dir, "pipe"), 0o644))
	c, err := run.Files().Hash("pipe", -1)
	require.NoError(t, err)
	assert.Equal(t, store.Content{Kind: store.Pipe}, c)
}
