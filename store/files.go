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
		return fmt.Sprintf("%s %d:%d %d", kindWord(info.Kind), info.Dev, info.Ino, info.Size), nil
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
	now   func() time.Time
	// locate says where a file outside the run recorded at key is found
	// now; nil finds it at key.
	locate func(key string) string
	// listings are what Files learned of directories, by run-relative
	// path; the last one asked about is at hand.
	listings    map[string]*listing
	lastDir     string
	lastListing *listing
	// pre is what the lookers of a prefetch found, until it is settled.
	pre *prefetch
	// distrust says a prefetch takes nothing on trust; stale, that a file
	// a settled prefetch took on trust was found changed (Stale).
	distrust, stale bool
	// loading is closed once another goroutine has read the cache and
	// started the prefetch of its keys (StepFiles); nil once waited for,
	// or when there was nothing to wait for.
	loading chan struct{}
}

// Locate makes f find a file outside the run, recorded at key, at
// locate(key): a run recorded on another machine is replayed where its
// files are now. What f learns is cached under the key.
func (f *Files) Locate(locate func(key string) string) { f.locate = locate }

// Files returns the run's file hasher for one command. It reads the hash
// cache; a missing or damaged cache is an empty one.
func (r *Run) Files() *Files {
	f := &Files{run: r, now: time.Now}
	f.begun = f.now().UnixNano()
	f.cache = r.loadCache()
	return f
}

// StepFiles is Files for a step, which reads every file the hash cache
// lists: on a machine of more than one core, another goroutine reads the
// cache and starts looking at its files (Prefetch) while the step reads
// its records, and f's first use waits for it to have begun. The caller
// settles f when its replay is done (Settle), as after Prefetch.
func (r *Run) StepFiles() *Files {
	f := &Files{run: r, now: time.Now}
	f.begun = f.now().UnixNano()
	root := -1
	if lookers() > 0 {
		root, _ = dupCloseOnExec(r.tree.fd)
	}
	if root < 0 {
		f.cache = r.loadCache() // one core, or no descriptor to spare: no lookers
		return f
	}
	f.loading = make(chan struct{})
	go func() {
		defer close(f.loading)
		f.cache = r.loadCacheAt(root)
		f.pre = f.prefetchCache(root)
	}()
	return f
}

// ready waits for what StepFiles began on another goroutine.
func (f *Files) ready() {
	if f.loading != nil {
		<-f.loading
		f.loading = nil
	}
}

// Hash returns what the file at key holds: a run-relative path, read
// through the run's tree, or an absolute path outside the run, read as
// declared. A regular file over limit bytes (limit < 0: no limit) is not
// read; nothing that lstat, or the listing of its directory, shows to be
// other than a regular file is ever opened. (A file put in place of a
// regular one between that look and the open is opened without blocking,
// found by fstat, and closed unread.)
//
// A file the cache knows costs an lstat. One it does not know costs an
// open, an fstat, its reads and a close: once enough of them lie in one
// directory, its listing stands in for their lstats.
func (f *Files) Hash(key string, limit int64) (Content, error) {
	return f.hash(key, limit, false)
}

// HashOutput is Hash, for the output of a job the replay names: only
// workers write outputs, and a step assumes they have finished, so what a
// prefetch found of it stands for the rest of the command without another
// look. Any other file may be written by the definition's own code while
// the replay runs.
func (f *Files) HashOutput(key string, limit int64) (Content, error) {
	return f.hash(key, limit, true)
}

func (f *Files) hash(key string, limit int64, output bool) (Content, error) {
	f.ready()
	if strings.HasPrefix(key, "/") {
		return f.hashOutside(key, limit)
	}
	if c, ok := f.prefetched(key, limit, output); ok {
		return c, nil
	}
	t := f.run.tree
	dfd, name, err := t.split(key, false)
	if isNotExist(err) {
		return Content{}, nil
	}
	if err != nil {
		return Content{}, f.run.readError(key, err)
	}
	// A file the cache does not know is read, unless it is no regular
	// file: when its directory's listing says it is one, the lstat is
	// spared, and the fstat of the open file says what it is, as ever.
	entry := f.cache.find(key)
	listedRegular := false
	if entry < 0 {
		kind, listed := f.listed(key)
		listedRegular = listed && kind == Regular
	}
	if !listedRegular {
		info, err := lstatAt(dfd, name)
		if err != nil {
			return Content{}, &IOError{Op: "read", Path: f.run.abs(key), Err: err}
		}
		if c, known := f.knownAt(entry, info, limit); known {
			return c, nil
		}
	}
	fd, info, err := openRegularAt(dfd, name, key)
	if err != nil {
		return Content{}, &IOError{Op: "read", Path: f.run.abs(key), Err: err}
	}
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
	c, known := f.knownAt(f.cache.find(key), infoOf(&st), limit)
	if known {
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
	c, herr := f.hashOpen(key, fd, info, limit)
	if herr != nil {
		return Content{}, &IOError{Op: "read", Path: path, Err: herr}
	}
	return c, nil
}

// knownAt answers from what lstat says without opening the file: for
// anything but a regular file, for one over the limit, and for one the
// cache knows at position entry (-1: none).
func (f *Files) knownAt(entry int, info FileInfo, limit int64) (Content, bool) {
	switch {
	case info.Kind != Regular:
		return Content{Kind: info.Kind}, true
	case limit >= 0 && info.Size > limit:
		return Content{Kind: Regular, Size: info.Size, Over: true}, true
	}
	if sum, ok := f.cache.lookupAt(entry, info); ok {
		return Content{Kind: Regular, Size: info.Size, SHA256: sum}, true
	}
	return Content{}, false
}

// hashOpen hashes the open regular file fd (fd < 0: not regular, kind in
// info) and closes it. An error is the read's, for the caller to name.
func (f *Files) hashOpen(key string, fd int, info FileInfo, limit int64) (Content, error) {
	if fd < 0 {
		return Content{Kind: info.Kind}, nil
	}
	defer unix.Close(fd)
	if limit >= 0 && info.Size > limit {
		return Content{Kind: Regular, Size: info.Size, Over: true}, nil
	}
	sum, err := hashFD(fd, info.Size)
	if err != nil {
		return Content{}, err
	}
	f.cache.store(key, info, sum)
	return Content{Kind: Regular, Size: info.Size, SHA256: sum}, nil
}

// Save writes the hash cache when this command hashed anything the cache
// did not know, or asked for its files in another order than the cache
// lists them. The cache is derived data: a command that ends before it
// leaves the old one, which the racy rule keeps honest.
func (f *Files) Save() error {
	f.ready()
	if !f.cache.dirty && !f.cache.reordered() {
		return nil
	}
	return f.run.saveCache(f.cache, f.begun)
}

// Stat says what lies at rel, a path inside the run, as Run.Stat does. It
// is for paths that are usually missing, such as problem reports: once
// enough of them have been asked for in one directory, one read of the
// directory says which names it holds, and a name it does not hold is
// missing without an lstat of its own. A name it holds is looked at with
// lstat as ever. The read is a snapshot of the command's own: a step
// assumes its workers have finished, and nobody else writes beside the
// outputs while it runs.
func (f *Files) Stat(rel string) (FileInfo, error) {
	if Clean(rel) {
		if kind, listed := f.listed(rel); listed && kind == Missing {
			return FileInfo{}, nil
		}
	}
	return f.run.Stat(rel)
}

// listed says what kind of file the listing of the directory of rel, a
// clean path inside the run, shows at rel, if the directory has been read:
// it is read once enough of its names have been asked about, by Stat or
// for a file the hash cache does not know. A listing is what the directory
// held when it was read: only a missing name, for Stat, is taken from it
// without an lstat.
func (f *Files) listed(rel string) (kind FileKind, listed bool) {
	dir, name := splitPath(rel)
	l := f.lastListing
	if l == nil || f.lastDir != dir {
		if f.listings == nil {
			f.listings = map[string]*listing{}
		}
		if l = f.listings[dir]; l == nil {
			l = &listing{}
			f.listings[dir] = l
		}
		f.lastDir, f.lastListing = dir, l
	}
	if l.names == nil {
		l.asked++
		if l.asked < minListing || l.asked&(l.asked-1) != 0 {
			return Missing, false
		}
		if l.names = f.run.tree.listing(dir, l.asked); l.names == nil {
			return Missing, false
		}
	}
	return l.names[name], true
}

// listing is what Files knows of one directory: how often it was asked
// about it, and, once read, the kind of each name it holds (Missing for
// none).
type listing struct {
	asked int
	names map[string]FileKind
}

// minListing is how many paths of one directory Files looks at one by one
// before it reads the directory.
const minListing = 64

// KeyPath returns the absolute path of an input key: a run-relative key
// inside the run, an absolute one as it is.
func (r *Run) KeyPath(key string) string {
	if strings.HasPrefix(key, "/") {
		return key
	}
	return r.abs(path.Clean(key))
}
