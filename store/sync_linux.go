package store

import "golang.org/x/sys/unix"

// syncFilesystem flushes the file system that holds fd: one call for every
// file a command wrote, where a sync per file costs a disk flush each.
func syncFilesystem(fd int) error { return unix.Syncfs(fd) }
