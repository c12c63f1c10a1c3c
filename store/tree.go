package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A run directory is hostile ground: workers write anything in it, and may
// leave a symbolic link, a named pipe or a huge file where the engine
// expects a record or an output. A tree is the one way the engine touches a
// run's files. The run directory is opened as an os.Root; below it, every
// directory is opened one component at a time with O_NOFOLLOW|O_DIRECTORY,
// so that no symbolic link and no ".." can lead anywhere, not even to
// another place inside the run, and every file is reached by a single name
// relative to its directory's descriptor. os.Root itself would follow a
// link that stays inside the root, so the tree keeps the root and does the
// walking itself.
//
// Files are opened with O_NOFOLLOW and O_NONBLOCK and checked with fstat
// before any read, so a link is never followed and a named pipe never
// blocks. Reads are bounded.
type tree struct {
	root *os.Root
	top  *os.File // "." of the root, whose descriptor every walk starts from
	fd   int

	mu   sync.Mutex
	dirs map[string]int // descriptors of opened directories, by run-relative path
	lru  []string       // the keys of dirs, the least recently used first
	// unsynced says that files or directories were written without a sync
	// since the last syncWritten: texts, and the directories made for them.
	unsynced atomic.Bool
}

// making says what a walk does with a missing directory.
type making int

const (
	// noMaking: a missing directory is an error.
	noMaking making = iota
	// makeSynced: it is made, and the directory it was made in is synced
	// at once, for a record renamed into it.
	makeSynced
	// makeUnsynced: it is made without a sync, for texts, which
	// syncWritten makes durable with the directories made for them before
	// the command's commit point.
	makeUnsynced
)

// maxDirs bounds the directories a tree keeps open: a step that writes the
// prompts of ten thousand jobs opens ten thousand directories, one after
// another, and must not run out of descriptors.
const maxDirs = 64

// ErrLink means a path of a run passes through a symbolic link, which the
// engine never follows. A LinkError wraps it.
var ErrLink = errors.New("a symbolic link is on the way")

// LinkError is a directory on a path that is a symbolic link.
type LinkError struct {
	Path string // run-relative
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link; custodian follows no link in a run: replace it with a directory", e.Path)
}

// Unwrap returns ErrLink.
func (e *LinkError) Unwrap() error { return ErrLink }

func openTree(dir string) (*tree, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	top, err := root.OpenFile(".", os.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
	if err != nil {
		root.Close()
		return nil, err
	}
	t := &tree{root: root, top: top, dirs: map[string]int{}}
	if err := control(top, func(fd int) { t.fd = fd }); err != nil {
		t.close()
		return nil, err
	}
	// A tree that its owner forgot to close closes when it is collected.
	runtime.AddCleanup(t, func(dirs map[string]int) {
		for _, fd := range dirs {
			unix.Close(fd)
		}
	}, t.dirs)
	return t, nil
}

func (t *tree) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, fd := range t.dirs {
		unix.Close(fd)
		delete(t.dirs, key)
	}
	t.lru = nil
	t.top.Close()
	t.root.Close()
}

// control calls fn with f's descriptor, without the switch to blocking mode
// that Fd makes.
func control(f *os.File, fn func(fd int)) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return raw.Control(func(fd uintptr) { fn(int(fd)) })
}

// dirFD returns the descriptor of the run-relative directory rel ("" or "."
// for the run itself), opened component by component without following a
// link. With create, missing directories are made, and the directory of
// each one made is synced, so that a record renamed into a new directory
// survives a power cut. The descriptor stays valid until the tree closes.
func (t *tree) dirFD(rel string, create bool) (int, error) {
	m := noMaking
	if create {
		m = makeSynced
	}
	return t.dirMaking(rel, m)
}

func (t *tree) dirMaking(rel string, m making) (int, error) {
	if rel == "" || rel == "." {
		return t.fd, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dirLocked(rel, m)
}

func (t *tree) dirLocked(rel string, m making) (int, error) {
	if fd, ok := t.dirs[rel]; ok {
		t.touch(rel)
		return fd, nil
	}
	parent := t.fd
	if p := path.Dir(rel); p != "." {
		var err error
		if parent, err = t.dirLocked(p, m); err != nil {
			return -1, err
		}
	}
	name := path.Base(rel)
	fd, err := openDirAt(parent, name)
	if errors.Is(err, unix.ENOENT) && m != noMaking {
		if err = unix.Mkdirat(parent, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, &fs.PathError{Op: "mkdir", Path: rel, Err: err}
		}
		if m == makeUnsynced {
			t.unsynced.Store(true)
		} else if err = unix.Fsync(parent); err != nil {
			return -1, &fs.PathError{Op: "sync", Path: path.Dir(rel), Err: err}
		}
		fd, err = openDirAt(parent, name)
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			if info, _ := lstatAt(parent, name); info.Kind == Link {
				return -1, &LinkError{Path: rel}
			}
		}
		return -1, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	t.dirs[rel] = fd
	t.lru = append(t.lru, rel)
	if len(t.lru) > maxDirs {
		// The least recently used is not one a caller still holds: every
		// operation uses at most a source and a target directory, each
		// touched last.
		old := t.lru[0]
		t.lru = t.lru[1:]
		unix.Close(t.dirs[old])
		delete(t.dirs, old)
	}
	return fd, nil
}

// openDirAt opens the directory name in the directory parent, never
// through a link and never blocking.
func openDirAt(parent int, name string) (int, error) {
	return unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
}

func (t *tree) touch(rel string) {
	last := len(t.lru) - 1
	if last >= 0 && t.lru[last] == rel {
		return
	}
	if i := slices.Index(t.lru, rel); i >= 0 {
		copy(t.lru[i:], t.lru[i+1:])
		t.lru[last] = rel
	}
}

// split checks a run-relative path and returns its directory's descriptor
// and its last name.
func (t *tree) split(rel string, create bool) (int, string, error) {
	m := noMaking
	if create {
		m = makeSynced
	}
	return t.splitMaking(rel, m)
}

func (t *tree) splitMaking(rel string, m making) (int, string, error) {
	if !Clean(rel) {
		return -1, "", fmt.Errorf("%q is not a clean path inside the run", rel)
	}
	dir, name := path.Dir(rel), path.Base(rel)
	dfd, err := t.dirMaking(dir, m)
	return dfd, name, err
}

// Clean says whether rel is a path the engine may touch inside a run:
// relative, clean, slash-separated, without "..", "." or an empty name,
// and without control characters.
func Clean(rel string) bool {
	return rel != "" && rel != "." && rel != ".." && !strings.HasPrefix(rel, "/") && !strings.HasPrefix(rel, "../") &&
		path.Clean(rel) == rel && !strings.ContainsFunc(rel, isControl)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// FileKind is what kind of file a path holds.
type FileKind int

// The kinds of file. Only a regular file is ever opened.
const (
	Missing FileKind = iota
	Regular
	Directory
	Link
	Pipe
	Socket
	Device
)

func (k FileKind) String() string {
	switch k {
	case Missing:
		return "missing"
	case Regular:
		return "a regular file"
	case Directory:
		return "a directory"
	case Link:
		return "a symbolic link"
	case Pipe:
		return "a named pipe"
	case Socket:
		return "a socket"
	default:
		return "a device"
	}
}

// FileInfo is what one lstat says of a file: its kind and its identity.
// Two infos with equal identity are the same bytes, unless the file was
// written within the clock's granularity of the moment it was looked at
// (see the hash cache).
type FileInfo struct {
	Kind  FileKind
	Size  int64
	Dev   uint64
	Ino   uint64
	Mtime int64 // nanoseconds since the epoch
	Ctime int64
}

func infoOf(st *unix.Stat_t) FileInfo {
	info := FileInfo{Size: st.Size, Dev: uint64(st.Dev), Ino: uint64(st.Ino),
		Mtime: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)).UnixNano(),
		Ctime: time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)).UnixNano()}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		info.Kind = Regular
	case unix.S_IFDIR:
		info.Kind = Directory
	case unix.S_IFLNK:
		info.Kind = Link
	case unix.S_IFIFO:
		info.Kind = Pipe
	case unix.S_IFSOCK:
		info.Kind = Socket
	default:
		info.Kind = Device
	}
	return info
}

func lstatAt(dfd int, name string) (FileInfo, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return FileInfo{}, nil
	}
	if err != nil {
		return FileInfo{}, err
	}
	return infoOf(&st), nil
}

// lstat says what rel holds, without following a link: Missing when there
// is nothing there.
func (t *tree) lstat(rel string) (FileInfo, error) {
	dfd, name, err := t.split(rel, false)
	if isNotExist(err) {
		return FileInfo{}, nil
	}
	if err != nil {
		return FileInfo{}, err
	}
	info, err := lstatAt(dfd, name)
	if err != nil {
		return FileInfo{}, &fs.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return info, nil
}

// isNotExist says whether err means nothing lies at a path: no file, or a
// file where a directory would have to be.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}

// openRegular opens rel for reading if it is a regular file, and returns
// its descriptor and what fstat says of it; a file of another kind is not
// opened (its kind comes back with fd -1).
func (t *tree) openRegular(rel string) (int, FileInfo, error) {
	dfd, name, err := t.split(rel, false)
	if isNotExist(err) {
		return -1, FileInfo{}, nil
	}
	if err != nil {
		return -1, FileInfo{}, err
	}
	return openRegularAt(dfd, name, rel)
}

func openRegularAt(dfd int, name, rel string) (int, FileInfo, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return -1, FileInfo{}, nil
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENXIO), errors.Is(err, unix.EISDIR):
		// A link, a socket, or a directory opened for reading: say what it is.
		info, lerr := lstatAt(dfd, name)
		if lerr != nil {
			return -1, FileInfo{}, &fs.PathError{Op: "lstat", Path: rel, Err: lerr}
		}
		return -1, info, nil
	case err != nil:
		return -1, FileInfo{}, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, FileInfo{}, &fs.PathError{Op: "stat", Path: rel, Err: err}
	}
	info := infoOf(&st)
	if info.Kind != Regular {
		unix.Close(fd)
		return -1, info, nil
	}
	return fd, info, nil
}

// readAll reads fd to its end, or to limit bytes and one more: cut says the
// file held more than limit. A negative limit reads it all.
func readAll(fd int, size, limit int64) (data []byte, cut bool, err error) {
	want := size + 1
	if limit >= 0 && want > limit+1 {
		want = limit + 1
	}
	buf := make([]byte, 0, max(want, 512))
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if n == 0 {
			return buf, false, nil
		}
		buf = buf[:len(buf)+n]
		if limit >= 0 && int64(len(buf)) > limit {
			return buf[:limit], true, nil
		}
	}
}

// readFile reads the regular file rel, up to limit bytes (negative: no
// limit). A file of another kind is not opened: its kind comes back with
// no data.
func (t *tree) readFile(rel string, limit int64) (data []byte, info FileInfo, cut bool, err error) {
	dfd, name, err := t.split(rel, false)
	if isNotExist(err) {
		return nil, FileInfo{}, false, nil
	}
	if err != nil {
		return nil, FileInfo{}, false, err
	}
	return readFileAt(dfd, name, rel, limit)
}

// readFileAt is readFile, for name in the directory dfd; rel names the
// file in errors.
func readFileAt(dfd int, name, rel string, limit int64) (data []byte, info FileInfo, cut bool, err error) {
	fd, info, err := openRegularAt(dfd, name, rel)
	if err != nil || fd < 0 {
		return nil, info, false, err
	}
	defer unix.Close(fd)
	data, cut, err = readAll(fd, info.Size, limit)
	if err != nil {
		return nil, info, false, &fs.PathError{Op: "read", Path: rel, Err: err}
	}
	return data, info, cut, nil
}

// hashFD returns the hex SHA-256 of what fd holds, read to its end. size
// is what fstat said of the regular file fd: a read that comes back short
// exactly there is its end, which spares the read that would return
// nothing. A file that grew since is read on to its end.
func hashFD(fd int, size int64) (string, error) {
	h := sha256.New()
	buf := make([]byte, 64<<10)
	var total int64
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil {
			return "", err
		}
		h.Write(buf[:n])
		total += int64(n)
		if n == 0 || n < len(buf) && total == size {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
	}
}

// writeAtomic replaces the regular file rel with data: a temporary file
// beside it is written and synced, renamed over it, and the directory is
// synced, so that after a crash rel is the old file or the new one. A link
// or anything else that is not a regular file at rel is refused, never
// replaced.
func (t *tree) writeAtomic(rel string, data []byte) error {
	if err := t.syncUnsynced(); err != nil {
		return err
	}
	dfd, name, err := t.split(rel, true)
	if err != nil {
		return err
	}
	if info, err := lstatAt(dfd, name); err != nil {
		return &fs.PathError{Op: "lstat", Path: rel, Err: err}
	} else if info.Kind != Missing && info.Kind != Regular {
		return &fs.PathError{Op: "write", Path: rel, Err: fmt.Errorf("it is %s", info.Kind)}
	}
	tmp := "." + name + ".tmp-" + randomSuffix()
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &fs.PathError{Op: "create", Path: path.Join(path.Dir(rel), tmp), Err: err}
	}
	err = writeAllFD(fd, data)
	if err == nil {
		err = unix.Fsync(fd)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return &fs.PathError{Op: "write", Path: rel, Err: err}
	}
	if err := unix.Fsync(dfd); err != nil {
		return &fs.PathError{Op: "sync", Path: path.Dir(rel), Err: err}
	}
	return nil
}

// writeNew writes data to rel, a file only this command writes at a path
// of its own (a prompt file, a block record), without syncing it: a command
// syncs what it wrote once, before its commit point (syncWritten), rather
// than once per file. An existing file is replaced in place, as the same
// command run again after a crash writes the same bytes.
func (t *tree) writeNew(rel string, data []byte) error {
	// The directories made for it are synced with it, by syncWritten.
	dfd, name, err := t.splitMaking(rel, makeUnsynced)
	if err != nil {
		return err
	}
	t.unsynced.Store(true)
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return &fs.PathError{Op: "create", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return &fs.PathError{Op: "write", Path: rel, Err: errors.New("it is not a regular file")}
	}
	err = writeAllFD(fd, data)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "write", Path: rel, Err: err}
	}
	return nil
}

func writeAllFD(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// rename moves the file at source (whatever its kind: a link is moved, not
// followed) to target, making target's directory, and syncs both
// directories, so that a finished move is never undone by a crash.
func (t *tree) rename(source, target string) error {
	if err := t.syncUnsynced(); err != nil {
		return err
	}
	sfd, sname, err := t.split(source, false)
	if err != nil {
		return err
	}
	tfd, tname, err := t.split(target, true)
	if err != nil {
		return err
	}
	if err := unix.Renameat(sfd, sname, tfd, tname); err != nil {
		return &fs.PathError{Op: "move", Path: source, Err: err}
	}
	if err := unix.Fsync(tfd); err != nil {
		return &fs.PathError{Op: "sync", Path: path.Dir(target), Err: err}
	}
	if err := unix.Fsync(sfd); err != nil {
		return &fs.PathError{Op: "sync", Path: path.Dir(source), Err: err}
	}
	return nil
}

// names lists the names in the directory rel, or none when it is missing.
func (t *tree) names(rel string) ([]string, error) {
	dfd, err := t.dirFD(rel, false)
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// A descriptor of its own, so that reading does not move the shared
	// one's position.
	fd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: rel, Err: err}
	}
	return names, nil
}

// syncUnsynced makes durable what was written without a sync, before a
// record or a move that may depend on it: texts written before a record
// are durable before it, as are the directories made for them. Commands
// sync their texts themselves (SyncTexts); this keeps the order for one
// that would not.
func (t *tree) syncUnsynced() error {
	if !t.unsynced.Load() {
		return nil
	}
	return t.syncWritten()
}

// syncWritten makes durable every file written without a sync since the
// tree opened, and every directory made for them, before a command's
// commit point: one sync of the file system, where a sync of each file and
// of each directory made costs a disk flush each.
func (t *tree) syncWritten() error {
	if err := syncFilesystem(t.fd); err != nil {
		return fmt.Errorf("sync the run's file system: %w", err)
	}
	t.unsynced.Store(false)
	return nil
}

// randomSuffix names a temporary file; two commands never write the same
// record at once (they hold the lock), so it need only differ from a file a
// crash left behind.
func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
