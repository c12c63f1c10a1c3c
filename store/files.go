package store

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// WriteText writes a prompt file or a block record at rel, a path relative
// to the run directory that lies in the state directory. Both are text for
// people and workers, written once at a path of their own, and not synced
// one by one: SyncTexts makes every text of a command durable before its
// commit. label names the write point for crash tests.
func (r *Run) WriteText(label, rel string, data []byte) error {
	if !Clean(rel) || !inStateDir(rel) || rel == StateDir {
		return fmt.Errorf("write %s: it is not in %s/", rel, StateDir)
	}
	crashPoint(label)
	if err := r.stillLocked(); err != nil {
		return err
	}
	if err := r.tree.writeNew(rel, data); err != nil {
		return r.writeError(rel, err)
	}
	return nil
}

// MakeParent makes the directories that hold rel, a path inside the run
// that a worker is to write (its output, its problem report), through the
// confined tree. No link is followed: a link, or a file, that stands where
// a directory would be is left as it is, and the worker's output is judged
// as whatever it finds there. They are made durable with the texts, by
// SyncTexts.
func (r *Run) MakeParent(rel string) error {
	if !Clean(rel) || inStateDir(rel) {
		return fmt.Errorf("make the directory of %s: it is not a path a worker writes", rel)
	}
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	if err := r.stillLocked(); err != nil {
		return err
	}
	_, err := r.tree.dirMaking(dir, makeUnsynced)
	if errors.Is(err, ErrLink) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return &IOError{Op: "mkdir", Path: r.abs(dir), Err: err}
	}
	return nil
}

// SyncTexts makes durable every text written since the run was opened,
// with one sync of the file system rather than one per file.
func (r *Run) SyncTexts() error {
	if err := r.tree.syncWritten(); err != nil {
		return &IOError{Op: "sync", Path: r.Dir, Err: err}
	}
	return nil
}

// Stat says what lies at rel, a path inside the run, without following a
// link: Missing when nothing does.
func (r *Run) Stat(rel string) (FileInfo, error) {
	info, err := r.tree.lstat(rel)
	if err != nil {
		return FileInfo{}, r.readError(rel, err)
	}
	return info, nil
}

// ReadText reads the regular file at rel, a path inside the run, up to
// limit bytes; cut says there was more. A file of another kind is not
// opened: its kind comes back with no text.
func (r *Run) ReadText(rel string, limit int64) (text []byte, info FileInfo, cut bool, err error) {
	text, info, cut, err = r.tree.readFile(rel, limit)
	if err != nil {
		return nil, info, false, r.readError(rel, err)
	}
	return text, info, cut, nil
}

// readError names a failed read of a run's file: a link on the way, or an
// I/O error.
func (r *Run) readError(rel string, err error) error {
	if errors.Is(err, ErrLink) {
		if inStateDir(rel) {
			return &RecordError{Path: r.abs(rel), Err: err}
		}
		return fmt.Errorf("%s: %w", r.abs(rel), err)
	}
	return &IOError{Op: "read", Path: r.abs(rel), Err: err}
}

// Perform carries out moves in order. A move is skipped when its target
// exists, which is the receipt of a move already done, or when its source
// is gone or is another file than the one the move was planned for: that
// file was moved already and a new one stands there now.
func (r *Run) Perform(moves []Move) error {
	for _, m := range moves {
		target, err := r.tree.lstat(m.Target)
		if err != nil {
			return r.readError(m.Target, err)
		}
		if target.Kind != Missing {
			continue
		}
		id, err := r.Identity(m.Source)
		if err != nil {
			return err
		}
		if id != m.Identity {
			continue
		}
		crashPoint("move")
		if err := r.stillLocked(); err != nil {
			return err
		}
		if err := r.tree.rename(m.Source, m.Target); err != nil {
			if errors.Is(err, ErrLink) {
				return r.readError(m.Source, err)
			}
			return &IOError{Op: "move", Path: r.abs(m.Source), Err: err}
		}
	}
	return nil
}

// Identity says which file lies at rel, for a move: the SHA-256 of a
// regular file's bytes, or, for a file that is not to be read (a link, a
// pipe, a socket, a device, a directory, a file over maxIdentityRead
// bytes), its kind, inode and size; "" when nothing lies there.
func (r *Run) Identity(rel string) (string, error) {
	fd, info, err := r.tree.openRegular(rel)
	if err != nil {
		return "", r.readError(rel, err)
	}
	if fd < 0 || info.Size > maxIdentityRead {
		if fd >= 0 {
			unix.Close(fd)
		}
		if info.Kind == Missing {
			return "", nil
		}
		return fileIdentity(info.Kind, info.Dev, info.Ino, info.Size), nil
	}
	defer unix.Close(fd)
	sum, err := hashFD(fd, info.Size)
	if err != nil {
		return "", &IOError{Op: "read", Path: r.abs(rel), Err: err}
	}
	return sum, nil
}

// maxIdentityRead bounds how much of a file is read to tell it apart for a
// move; a larger one is told apart by its inode.
const maxIdentityRead = 32 << 20

func kindWord(k FileKind) string {
	w := k.String()
	w = strings.TrimPrefix(w, "a ")
	return strings.ReplaceAll(w, " ", "-")
}

// Content is what a command knows of a file's bytes.
type Content struct {
	Kind FileKind
	Size int64
	// SHA256 is the hex SHA-256 of a regular file's bytes; empty for
	// anything else, and for a file over the limit it was hashed with.
	SHA256 string
	// Over says the file is regular and over the limit: it was not read.
	Over bool
}

// contentOf is what info tells of a file without a read: its kind, and a
// regular file's size.
func contentOf(info FileInfo) Content {
	if info.Kind != Regular {
		return Content{Kind: info.Kind}
	}
	return Content{Kind: Regular, Size: info.Size}
}

func fileIdentity(kind FileKind, dev, ino uint64, size int64) string {
	return fmt.Sprintf("%s %d:%d %d", kindWord(kind), dev, ino, size)
}

// Files hashes files for one command: the run's own, through the confined
// tree, and files outside the run that a definition declared, as declared.
// It keeps a hash cache keyed by file identity, so that a replay of
// unchanged files costs one lstat each.
type Files struct {
	run   *Run
	cache *hashCache
	// begun is when this command began hashing: an entry it stores is
	// trusted by a later command only if its file was last changed well
	// before (the racy rule).
	begun int64
	// locate says where a file outside the run recorded at key is found
	// now; nil finds it at key.
	locate func(key string) string
	// seen is what the last look at each file of the run found, so that
	// a move planned from it (Identity) needs no look of its own.
	seen map[string]FileInfo
}

// Locate makes f find a file outside the run, recorded at key, at
// locate(key): a run recorded on another machine is replayed where its
// files are now. What f learns is cached under the key.
func (f *Files) Locate(locate func(key string) string) { f.locate = locate }

// Files returns the run's file hasher for one command. It reads the hash
// cache; a missing or damaged cache is an empty one.
func (r *Run) Files() *Files {
	c := r.loadCache()
	// Sized for what the last command looked at, which this one mostly
	// looks at again, with its problem paths.
	return &Files{run: r, begun: time.Now().UnixNano(), cache: c, seen: make(map[string]FileInfo, 3*len(c.entries)/2)}
}

// Identity says which file Hash last found at rel, a path inside the run,
// in the form a move is checked by (Run.Identity), and whether it can
// tell without another look: a regular file within maxIdentityRead bytes
// is told by its hash, which Files lacks when it did not read the file.
func (f *Files) Identity(rel string) (string, bool) {
	info, ok := f.seen[rel]
	switch {
	case !ok:
		return "", false
	case info.Kind == Missing:
		return "", true
	case info.Kind == Regular && info.Size <= maxIdentityRead:
		if e := f.cache.entries[rel]; e != nil && e.info == info {
			return e.sum, true
		}
		return "", false
	}
	return fileIdentity(info.Kind, info.Dev, info.Ino, info.Size), true
}

// Hash returns what the file at key holds: a run-relative path, read
// through the run's tree, or an absolute path outside the run, read as
// declared. A regular file over limit bytes (limit < 0: no limit) is not
// read; nothing that lstat shows to be other than a regular file is ever
// opened. (A file put in place of a regular one between the lstat and the
// open is opened without blocking, found by fstat, and closed unread.)
//
// A file the cache knows costs an lstat; one it does not know costs an
// lstat, an open, an fstat, its reads and a close.
func (f *Files) Hash(key string, limit int64) (Content, error) {
	if strings.HasPrefix(key, "/") {
		return f.hashOutside(key, limit)
	}
	dfd, name, err := f.run.tree.split(key, false)
	if isNotExist(err) {
		f.seen[key] = FileInfo{}
		return Content{}, nil
	}
	if err != nil {
		return Content{}, f.run.readError(key, err)
	}
	info, err := lstatAt(dfd, name)
	if err != nil {
		return Content{}, &IOError{Op: "read", Path: f.run.abs(key), Err: err}
	}
	f.seen[key] = info
	if c, known := f.known(key, info, limit); known {
		return c, nil
	}
	fd, info, err := openRegularAt(dfd, name, key)
	if err != nil {
		return Content{}, &IOError{Op: "read", Path: f.run.abs(key), Err: err}
	}
	f.seen[key] = info
	c, err := f.hashOpen(key, fd, info, limit)
	if err != nil {
		return Content{}, &IOError{Op: "read", Path: f.run.abs(key), Err: err}
	}
	return c, nil
}

func (f *Files) hashOutside(key string, limit int64) (Content, error) {
	path := key
	if f.locate != nil {
		path = f.locate(key)
	}
	var st unix.Stat_t
	err := unix.Stat(path, &st)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return Content{}, nil
	}
	if err != nil {
		return Content{}, &IOError{Op: "read", Path: path, Err: err}
	}
	if c, known := f.known(key, infoOf(&st), limit); known {
		return c, nil
	}
	// As declared: a link is followed, but a pipe is not waited on.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if errors.Is(err, unix.ENOENT) {
		return Content{}, nil
	}
	if err != nil {
		return Content{}, &IOError{Op: "read", Path: path, Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return Content{}, &IOError{Op: "read", Path: path, Err: err}
	}
	info := infoOf(&st)
	if info.Kind != Regular {
		unix.Close(fd)
		fd = -1
	}
	c, err := f.hashOpen(key, fd, info, limit)
	if err != nil {
		return Content{}, &IOError{Op: "read", Path: path, Err: err}
	}
	return c, nil
}

// known answers from what lstat says without opening the file: for
// anything but a regular file, for one over the limit, and for one the
// cache knows.
func (f *Files) known(key string, info FileInfo, limit int64) (Content, bool) {
	c := contentOf(info)
	switch {
	case info.Kind != Regular:
		return c, true
	case limit >= 0 && info.Size > limit:
		c.Over = true
		return c, true
	}
	if sum, ok := f.cache.lookup(key, info); ok {
		c.SHA256 = sum
		return c, true
	}
	return Content{}, false
}

// hashOpen hashes the open regular file fd (fd < 0: not regular, kind in
// info) and closes it. An error is the read's, for the caller to name.
func (f *Files) hashOpen(key string, fd int, info FileInfo, limit int64) (Content, error) {
	c := contentOf(info)
	if fd < 0 {
		return c, nil
	}
	defer unix.Close(fd)
	if limit >= 0 && info.Size > limit {
		c.Over = true
		return c, nil
	}
	sum, err := hashFD(fd, info.Size)
	if err != nil {
		return Content{}, err
	}
	f.cache.store(key, info, sum)
	c.SHA256 = sum
	return c, nil
}

// Stat says what lies at rel, a path inside the run, as Run.Stat does,
// and notes it for Identity.
func (f *Files) Stat(rel string) (FileInfo, error) {
	info, err := f.run.Stat(rel)
	if err == nil {
		f.seen[rel] = info
	}
	return info, err
}

// Save writes the hash cache when this command hashed anything the cache
// did not know. The cache is derived data: a command that ends before it
// leaves the old one, which the racy rule keeps honest.
func (f *Files) Save() error {
	if !f.cache.dirty {
		return nil
	}
	return f.run.saveCache(f.cache, f.begun)
}

// KeyPath returns the absolute path of an input key: a run-relative key
// inside the run, an absolute one as it is.
func (r *Run) KeyPath(key string) string {
	if strings.HasPrefix(key, "/") {
		return key
	}
	return r.abs(path.Clean(key))
}
