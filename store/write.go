package store

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// writeFile replaces path with data atomically: renameio writes a temporary
// file beside it, syncs and renames it, and then the directory is synced so
// that the rename itself survives a power cut. Every record of a run is
// written here and nowhere else; label names the write point for crash tests.
func writeFile(label, path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	crashPoint(label)
	if err := renameio.WriteFile(path, data, 0o644, renameio.WithTempDir(dir)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(dir)
}

// moveFile renames source to target inside one run and syncs both
// directories, so that a finished move is never undone by a crash.
func moveFile(label, source, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("move %s: %w", source, err)
	}
	crashPoint(label)
	if err := os.Rename(source, target); err != nil {
		return fmt.Errorf("move %s: %w", source, err)
	}
	if err := syncDir(filepath.Dir(target)); err != nil {
		return err
	}
	return syncDir(filepath.Dir(source))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
