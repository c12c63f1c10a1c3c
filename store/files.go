package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// WriteText writes a prompt file or a block record at rel, a path relative
// to the run directory that lies in the state directory. Both are text for
// people and workers, written once at a path of their own. label names the
// write point for crash tests.
func (r *Run) WriteText(label, rel string, data []byte) error {
	inside, ok := strings.CutPrefix(rel, StateDir+"/")
	if !ok {
		return fmt.Errorf("write %s: it is not in %s/", rel, StateDir)
	}
	return writeFile(label, r.path(filepath.FromSlash(inside)), data)
}

// Perform carries out moves in order. A move is skipped when its target
// exists, which is the receipt of a move already done, or when its source is
// gone or no longer has the bytes it had when the move was planned: those
// bytes were moved already and a new file stands there now.
func (r *Run) Perform(moves []Move) error {
	for _, m := range moves {
		source := filepath.Join(r.Dir, filepath.FromSlash(m.Source))
		target := filepath.Join(r.Dir, filepath.FromSlash(m.Target))
		if _, err := os.Lstat(target); err == nil {
			continue
		}
		sum, err := FileSHA256(source)
		if err != nil {
			return fmt.Errorf("move %s: %w", m.Source, err)
		}
		if sum != m.SHA256 {
			continue
		}
		if err := moveFile("move", source, target); err != nil {
			return err
		}
	}
	return nil
}

// FileSHA256 returns the hex SHA-256 of a regular file's bytes, or "" when
// there is no regular file at path.
func FileSHA256(path string) (string, error) {
	// Stat first: opening a FIFO or a device would block or read forever
	// while the run's lock is held.
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	buf := hashBuffers.Get().(*[]byte)
	defer hashBuffers.Put(buf)
	// Hiding *os.File's WriteTo makes CopyBuffer use buf; WriteTo would
	// allocate a buffer of its own for every file.
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{f}, *buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashBuffers spares a step that hashes every input of every job a fresh
// copy buffer per file.
var hashBuffers = sync.Pool{New: func() any {
	b := make([]byte, 64*1024)
	return &b
}}
