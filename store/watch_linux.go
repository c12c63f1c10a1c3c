package store

import (
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// watchEvents are the changes that a watch on a directory reports: a name
// in it written, truncated, touched, linked, made, removed or renamed, and
// the directory itself removed or renamed. Reads, opens and closes without
// a write are not changes.
const watchEvents = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// newWatch watches dirs, run-relative directories listed before their
// subdirectories, through w; it returns nil when it cannot watch one that
// exists. A directory that does not exist is not watched: the making of
// it is a change in its parent, which is.
//
// A watch is added through /proc/self/fd, on the very directory the
// walker opened, so that a link put on the way is not followed.
func newWatch(w *prefetchWalker, dirs []string) *watch {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil // no inotify, or too many instances: the replay looks itself
	}
	for _, dir := range dirs {
		dfd, err := w.dir(dir)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			unix.Close(fd)
			return nil
		}
		if _, err := unix.InotifyAddWatch(fd, "/proc/self/fd/"+strconv.Itoa(dfd), watchEvents); err != nil {
			unix.Close(fd)
			return nil
		}
	}
	return &watch{fd: fd, buf: make([]byte, unix.SizeofInotifyEvent+unix.NAME_MAX+1)}
}

// quiet says whether nothing has changed in the watched directories since
// the watch began: one read of the watch, which the kernel fills as a
// change is made, so that a change the definition's own code made before
// it asks is seen. Once something has changed, it never says so again.
func (w *watch) quiet() bool {
	if w == nil || w.changed {
		return false
	}
	for {
		_, err := unix.Read(w.fd, w.buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return true
		}
		// An event, an overflowed queue, or an error: changed, as far as
		// the watch can say.
		w.changed = true
		return false
	}
}

func (w *watch) close() {
	if w != nil {
		unix.Close(w.fd)
	}
}
