package store

import (
	"errors"
	"fmt"
	"io/fs"
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
	if err := mkdirSynced(dir); err != nil {
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
	if err := mkdirSynced(filepath.Dir(target)); err != nil {
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

// mkdirSynced makes dir and any missing parents, and syncs the parent of
// each directory it makes: a record renamed into a new directory survives a
// power cut only if the directory's own entry does.
func mkdirSynced(dir string) error {
	if info, err := os.Stat(dir); err == nil {
		if !info.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirSynced(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
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
