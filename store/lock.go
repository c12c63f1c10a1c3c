package store

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// lock takes the operating system's exclusive lock on path without waiting.
// It returns the function that releases it. The lock ends with its process,
// so a crash leaves nothing to clean up, and the file is never deleted: a
// deleted lock file would let two processes lock two different files.
func lock(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	l := flock.New(path)
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		return nil, ErrBusy
	}
	return func() { _ = l.Unlock() }, nil
}
