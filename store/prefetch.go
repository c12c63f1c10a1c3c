package store

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A replay asks for its files one after another, and most of them are
// known before it begins: the state names every input and output the last
// replay judged. A prefetch looks at those on the machine's other cores
// while the replay runs, the way Hash would, and the replay takes what it
// finds instead of asking the file system itself.
//
// What a prefetch found of a job's output stands for the file for the rest
// of the command (HashOutput): a step looks at each output once, at some
// moment after it took the run's lock, since only workers write outputs,
// and a step assumes they have finished. (The engine's own moves take
// outputs away: a step that owes moves settles the prefetch before it
// makes them.) Any other file may be written by the definition's own code
// (a mechanical step) while the replay runs, so it must be looked at after
// the replay asked for it: the replay takes what a looker found on trust,
// and a looker looks at the file again behind the replay (verifyOne). A
// file found changed makes the prefetch stale (Stale), and the replay that
// took it runs again, taking nothing on trust (Distrust). Only files whose
// times are older than the step are taken on trust: one rewritten at the
// same size within a tick of the clock keeps its identity (the hash
// cache's racy rule).
//
// An effect may write anything: Settle, called before the replay journals
// an effect, ends the prefetch, confirms what the replay took on trust,
// and every later question is answered by the file system.
//
// Lookers never touch the tree's descriptors, which the tree may close
// while they run: each has its own duplicate of the run's descriptor and
// opens directories from it, one component at a time with O_NOFOLLOW, as
// the tree does. What a looker cannot answer plainly (a link on the way,
// an error) it leaves to the replay, which asks the file system as ever
// and reports what it finds.

// prefetchMaxRead bounds the file a looker reads and hashes: a larger one
// is left to the replay, which knows the limit it is read under.
const prefetchMaxRead = 8 << 20

// maxStride bounds the stride prefetched follows.
const maxStride = 8

// replayLead is how many items ahead of the replay a looker leaves to it.
const replayLead = 16

// verifyBatch is how many items the replay takes on trust before it hands
// them to the lookers to verify: each hand-over may wake one.
const verifyBatch = 128

// maxLookers bounds the goroutines of one prefetch.
const maxLookers = 4

// lookers says how many goroutines a prefetch runs: none on one core,
// where the replay gains nothing from them. A variable, so that tests
// prefetch on any machine.
var lookers = func() int { return min(runtime.GOMAXPROCS(0)-1, maxLookers) }

// prefetch is what the lookers of one command found, by key.
type prefetch struct {
	// index finds a key's item; nil when the items are the hash cache's
	// entries, found by the cache's index.
	index map[string]int32
	items []prefetchItem
	next  atomic.Int64 // the next item a looker takes
	_     [56]byte     // next and replayAt change on different cores
	// replayAt is where the replay is: the item after the one it last
	// asked about. Lookers leave the items just ahead of it to the
	// replay, which would otherwise wait for each in turn.
	replayAt atomic.Int64
	_        [56]byte
	// cursor is replayAt, as the replay's own; stride is how far the
	// replay went between its last two questions, where it is likely
	// to ask next.
	cursor, stride int
	stop           atomic.Bool
	wg             sync.WaitGroup
	// ahead is done once every looker has looked at all it looks at ahead
	// of the replay.
	ahead sync.WaitGroup

	// trust says the replay takes what lookers found of files other than
	// outputs on trust, and the lookers verify it behind the replay; a
	// prefetch without it (Distrust) confirms every such file with an
	// lstat when the replay asks for it.
	trust bool
	// trusted lists the items the replay took on trust, in order: the
	// first ntrusted are the replay's, the first published of those the
	// lookers', who claim them in turn (verified is the next to claim).
	// Each item is taken on trust once, so the list never outgrows items.
	trusted   []int32
	ntrusted  int
	published atomic.Int64
	verified  atomic.Int64
	// wake tells a looker waiting for items to verify that there are some;
	// closed by Settle.
	wake chan struct{}
	// stale says a file taken on trust was found changed.
	stale atomic.Bool
	root  int // the lookers' own descriptor of the run directory
	// listings says, for each directory of keys the cache does not know,
	// how many there are and, when they are many, what the directory
	// lists: read once, by the first looker that needs it.
	listings map[string]*prefetchListing
}

type prefetchListing struct {
	unknown int // keys in the directory that the cache does not know
	once    sync.Once
	names   map[string]FileKind
}

// prefetchItem is one key: what the cache said of it when the prefetch
// began, and what a looker found.
type prefetchItem struct {
	key string
	// entry is the cache's entry for key (-1: none); known says it may be
	// trusted for a file whose identity is cached.
	entry     int32
	known     bool
	cached    FileInfo
	cachedSum string
	// state moves from itemWaiting to itemLooking and itemDone when a
	// looker takes the item, or to itemReplay when the replay comes to it
	// first; only the looker that took it fills the fields below. The
	// replay moves an item it took on trust from itemDone to itemTrusted.
	state atomic.Int32
	ok    bool     // the look answered: info, and sum for a regular file read
	info  FileInfo // what the file is, by fstat of what was read, or lstat
	sum   string   // the file's SHA-256; empty when not read
	// stored says the replay has put sum in the cache; the replay's own.
	stored bool
}

const (
	itemWaiting int32 = iota
	itemLooking
	itemDone
	itemReplay
	itemTrusted
)

// Prefetch starts looking at keys, run-relative paths the command is about
// to hash, on the machine's other cores. Keys outside the run and repeated
// keys are skipped. It does nothing on a machine with one core. The caller
// settles what it started (Settle): lookers wait, with the descriptors
// they hold, to look again at the files the replay takes on trust.
func (f *Files) Prefetch(keys []string) {
	f.ready()
	if lookers() <= 0 || f.pre != nil || len(keys) == 0 {
		return
	}
	root, err := dupCloseOnExec(f.run.tree.fd)
	if err != nil {
		return // the replay asks the file system itself
	}
	p := &prefetch{index: make(map[string]int32, len(keys)), items: make([]prefetchItem, len(keys)), root: root,
		listings: map[string]*prefetchListing{}, trust: !f.distrust}
	for _, key := range keys {
		if strings.HasPrefix(key, "/") || !Clean(key) {
			continue
		}
		if _, dup := p.index[key]; dup {
			continue
		}
		n := len(p.index)
		p.index[key] = int32(n)
		it := &p.items[n]
		it.key = key
		if entry := f.cache.find(key); entry >= 0 {
			f.fromCache(it, entry)
			continue
		}
		it.entry = -1
		dir, _ := splitPath(key)
		l := p.listings[dir]
		if l == nil {
			l = &prefetchListing{}
			p.listings[dir] = l
		}
		l.unknown++
	}
	p.items = p.items[:len(p.index)]
	p.start()
	f.pre = p
}

// prefetchCache starts looking at the keys of the cache, through root, a
// descriptor of the run the lookers close when they are done: item i is
// the cache's entry i, found by the cache's own index.
func (f *Files) prefetchCache(root int) *prefetch {
	n := min(len(f.cache.entries), maxPrefetch)
	if n == 0 {
		unix.Close(root)
		return nil
	}
	p := &prefetch{items: make([]prefetchItem, n), root: root, trust: !f.distrust}
	for i := range p.items {
		it := &p.items[i]
		it.key = f.cache.entries[i].key
		f.fromCache(it, i)
		if strings.HasPrefix(it.key, "/") {
			it.state.Store(itemReplay) // outside the run: the replay's
		}
	}
	p.start()
	return p
}

// fromCache fills in what the cache's entry says of an item's key.
func (f *Files) fromCache(it *prefetchItem, entry int) {
	e := &f.cache.entries[entry]
	it.entry, it.cached, it.cachedSum = int32(entry), e.info, e.sum
	it.known = e.mine || max(e.info.Mtime, e.info.Ctime) < f.cache.stamp-racyWindow
}

// start starts the lookers, which close the prefetch's descriptor of the
// run when the last is done.
func (p *prefetch) start() {
	p.replayAt.Store(-replayLead) // no question yet
	if p.trust {
		p.trusted = make([]int32, len(p.items))
		p.wake = make(chan struct{}, 1)
	}
	workers := lookers()
	p.wg.Add(workers)
	p.ahead.Add(workers)
	for range workers {
		go p.look()
	}
	go func() {
		p.wg.Wait()
		unix.Close(p.root)
	}()
}

// find returns the position of key's item.
func (p *prefetch) find(key string, c *hashCache) (int, bool) {
	index := p.index
	if index == nil {
		index = c.index // items are the cache's entries
	}
	i, ok := index[key]
	if !ok || int(i) >= len(p.items) {
		return 0, false
	}
	return int(i), true
}

// dupCloseOnExec duplicates fd, closed on exec from the start: a worker
// launched meanwhile must not inherit a descriptor of the run.
func dupCloseOnExec(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

// Prefetching says whether lookers are at work for this command.
func (f *Files) Prefetching() bool {
	f.ready()
	return f.pre != nil
}

// maxPrefetch bounds the keys a prefetch takes from the hash cache, a file
// a worker may have written: a run of a hundred thousand jobs reads two
// hundred thousand files.
const maxPrefetch = 1 << 20

// Settle ends the prefetch: it verifies, with its lookers, every file the
// replay took on trust, waits for them, and from then on every question is
// answered by the file system. A step settles before it journals an
// effect, which may write anything in the run, and when its replay ends;
// Stale then says whether the replay must run again.
func (f *Files) Settle() {
	f.ready()
	p := f.pre
	if p == nil {
		return
	}
	f.pre = nil
	if p.trust {
		// Published before the stop: a looker that sees the stop finds
		// every item left to verify.
		p.publish()
		p.stop.Store(true)
		close(p.wake)
		// Through directories of its own, opened now: the tree's may have
		// been opened before the definition replaced one.
		v := newVerifier(f.run.tree.fd)
		for p.verifyOne(v) {
		}
		v.w.close()
	} else {
		p.stop.Store(true)
	}
	p.wg.Wait()
	f.stale = f.stale || p.stale.Load()
}

// Stale settles the prefetch and says whether a file the replay took on
// trust was found changed when a looker looked at it again: the definition's
// own code wrote it while the replay ran, and the replay's judgments may
// rest on what it held before. A replay that finds its files stale runs
// again after Distrust.
func (f *Files) Stale() bool {
	f.Settle()
	return f.stale
}

// Distrust makes f take nothing on trust from now on: a prefetch it starts
// confirms every file but an output with an lstat when the replay asks for
// it, as a replay that found its files stale needs. It clears Stale.
func (f *Files) Distrust() {
	f.Settle()
	f.distrust, f.stale = true, false
}

// trustItem notes that the replay took item i on trust, for the lookers
// to verify; they are told in batches.
func (p *prefetch) trustItem(i int) {
	p.items[i].state.Store(itemTrusted)
	p.trusted[p.ntrusted] = int32(i)
	p.ntrusted++
	if p.ntrusted-int(p.published.Load()) >= verifyBatch {
		p.publish()
	}
}

// publish hands the items taken on trust so far to the lookers.
func (p *prefetch) publish() {
	if int64(p.ntrusted) == p.published.Load() {
		return
	}
	p.published.Store(int64(p.ntrusted))
	select {
	case p.wake <- struct{}{}:
	default: // a looker is told already
	}
}

// verifyOne claims the next item taken on trust, if one is published, and
// looks at its file again with lstat: a file whose identity is not the one
// the replay took makes the prefetch stale.
func (p *prefetch) verifyOne(v *verifier) bool {
	for {
		j := p.verified.Load()
		if j >= p.published.Load() {
			return false
		}
		if !p.verified.CompareAndSwap(j, j+1) {
			continue
		}
		it := &p.items[p.trusted[j]]
		if now, err := v.lstat(p, j, it.key); err != nil || now != it.info {
			p.stale.Store(true)
		}
		return true
	}
}

// verifier looks at items again, behind the replay, through directories
// opened after the replay asked for them: a look through one opened
// before would not see a directory the definition's code replaced in
// between (a new one renamed over the old, say), and would find the old
// file unchanged.
type verifier struct {
	w prefetchWalker
	// fresh is how many items were published when w's directories were
	// let go of: the replay asked for those before any of them was opened.
	fresh int64
}

func newVerifier(root int) *verifier {
	return &verifier{w: prefetchWalker{root: root, dirs: map[string]int{}}}
}

// lstat looks at item j's key: its directories are opened anew once j is
// past what was published when they last were.
func (v *verifier) lstat(p *prefetch, j int64, key string) (FileInfo, error) {
	if j >= v.fresh {
		v.w.close()
		v.w.dirs = map[string]int{}
		v.fresh = p.published.Load()
	}
	return v.w.lstat(key)
}

// prefetched answers Hash from what a looker found at key, when it may;
// ok is false when the replay must look itself.
func (f *Files) prefetched(key string, limit int64, output bool) (c Content, ok bool) {
	p := f.pre
	if p == nil {
		return Content{}, false
	}
	// The replay mostly asks in the order of the keys, which is the order
	// the last step asked in: the item after the last one asked about is
	// tried before the index, whose lookups miss the processor's caches.
	i := p.cursor + max(p.stride, 1) - 1
	if i >= len(p.items) || p.items[i].key != key {
		if i = p.cursor; i >= len(p.items) || p.items[i].key != key {
			j, ok := p.find(key, f.cache)
			if !ok {
				return Content{}, false
			}
			i = j
		}
	}
	// A replay that asks for every other item, a join of the outputs
	// of many jobs for instance, is followed as well as one that asks
	// for every item.
	p.stride = max(1, min(i+1-p.cursor, maxStride))
	p.cursor = i + 1
	p.replayAt.Store(int64(p.cursor))
	it := &p.items[i]
	switch {
	case it.state.CompareAndSwap(itemWaiting, itemReplay):
		// No looker came to it yet: the replay looks itself, and does not
		// wait.
		return Content{}, false
	case it.state.Load() == itemDone:
		if !it.ok {
			return Content{}, false
		}
		if output {
			return f.take(it, limit) // looked at after the lock
		}
		if !f.older(it.info) {
			return Content{}, false
		}
		if !p.trust {
			return f.confirmed(it, limit)
		}
		c, ok := f.take(it, limit)
		if ok {
			p.trustItem(i)
		}
		return c, ok
	case it.state.Load() == itemTrusted:
		// Asked for again: as an output, it stands as a looker found it
		// after the lock; as any other file, it is confirmed now, since
		// its look behind the replay may be done already.
		if output {
			return f.take(it, limit)
		}
		return f.confirmed(it, limit)
	}
	// A looker is at it, or the replay looked itself. The replay does not
	// wait for a goroutine the scheduler may not run again for a while (one
	// back from a system call finds both cores busy, the replay's with
	// waiting): it looks itself.
	return Content{}, false
}

// older says a file of identity info was last changed before the command
// began, by more than a tick of the coarsest clock: one rewritten at the
// same size within the tick of a look keeps its times, and so its
// identity (the hash cache's racy rule).
func (f *Files) older(info FileInfo) bool {
	return info.Kind != Regular || max(info.Mtime, info.Ctime) < f.begun-racyWindow
}

// confirmed answers from what a looker found of a file other than an
// output, when an lstat finds the same file there now.
func (f *Files) confirmed(it *prefetchItem, limit int64) (Content, bool) {
	if now, err := f.run.tree.lstat(it.key); err != nil || now != it.info {
		return Content{}, false
	}
	return f.take(it, limit)
}

// take answers Hash from the item; ok is false when it holds too little
// for the limit (a file a looker did not read).
func (f *Files) take(it *prefetchItem, limit int64) (Content, bool) {
	info := it.info
	switch {
	case info.Kind != Regular:
		return Content{Kind: info.Kind}, true
	case limit >= 0 && info.Size > limit:
		return Content{Kind: Regular, Size: info.Size, Over: true}, true
	case it.sum == "":
		return Content{}, false
	}
	if !it.stored {
		it.stored = true
		if it.entry >= 0 && it.cached == info && it.known {
			f.cache.use(int(it.entry))
		} else {
			f.cache.store(it.key, info, it.sum)
		}
	}
	return Content{Kind: Regular, Size: info.Size, SHA256: it.sum}, true
}

// look is one looker: it takes items until none is left or the prefetch
// is settled.
func (p *prefetch) look() {
	defer p.wg.Done()
	w := prefetchWalker{root: p.root, dirs: map[string]int{}}
	defer w.close()
	p.lookAhead(&w)
	p.ahead.Done()
	if !p.trust {
		return
	}
	// Behind the replay: what it took on trust, until it settles.
	v := newVerifier(p.root)
	defer v.w.close()
	for {
		for p.verifyOne(v) {
		}
		if p.stop.Load() {
			for p.verifyOne(v) {
			}
			return
		}
		<-p.wake
	}
}

// lookAhead looks at the items a looker looks at ahead of the replay.
func (p *prefetch) lookAhead(w *prefetchWalker) {
	for !p.stop.Load() {
		// Lookers take the items in the order the replay is likely to ask
		// for them; the replay takes one itself when no looker has
		// answered it, and waits for none.
		i := p.next.Add(1) - 1
		if i >= int64(len(p.items)) {
			return
		}
		if at := p.replayAt.Load(); i < at+replayLead {
			// The replay is at the item, or about to be: it takes the
			// next few itself, and the looker goes on after them.
			p.next.CompareAndSwap(i+1, at+replayLead)
			continue
		}
		it := &p.items[i]
		if !it.state.CompareAndSwap(itemWaiting, itemLooking) {
			continue // the replay came first
		}
		it.ok = p.lookAt(w, it)
		it.state.Store(itemDone)
	}
	// Done, or settled: items not yet taken are left to the replay.
}

// lookAt does what Hash does for a file, without the cache's writes: an
// lstat that the cache answers, or the open, fstat, read and close of a
// regular file (the lstat spared where the directory's listing shows one).
func (p *prefetch) lookAt(w *prefetchWalker, it *prefetchItem) bool {
	dir, name := splitPath(it.key)
	dfd, err := w.dir(dir)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			it.info = FileInfo{}
			return true
		}
		// Something other than a directory on the way, a link perhaps: the
		// replay looks, and says what it finds.
		return false
	}
	listedRegular := false
	if it.entry < 0 {
		if names := p.listing(dir, dfd); names != nil {
			listedRegular = names[name] == Regular
		}
	}
	if !listedRegular {
		info, err := lstatAt(dfd, name)
		if err != nil {
			return false
		}
		it.info = info
		if info.Kind != Regular {
			return true
		}
		if it.entry >= 0 && info == it.cached && it.known {
			it.sum = it.cachedSum
			return true
		}
		if info.Size > prefetchMaxRead {
			return true
		}
	}
	fd, info, err := openRegularAt(dfd, name, it.key)
	if err != nil {
		return false
	}
	it.info = info
	if fd < 0 {
		return true
	}
	defer unix.Close(fd)
	if info.Size > prefetchMaxRead {
		return true
	}
	sum, err := hashFD(fd, info.Size)
	if err != nil {
		return false
	}
	it.sum = sum
	return true
}

// listing returns the listing of dir, when many keys in it are unknown to
// the cache, read once.
func (p *prefetch) listing(dir string, dfd int) map[string]FileKind {
	l := p.listings[dir]
	if l == nil || l.unknown < minListing {
		return nil
	}
	l.once.Do(func() { l.names = listingAt(dfd, l.unknown) })
	return l.names
}

// prefetchWalker opens a looker's directories from its own descriptor of
// the run, as the tree does: one component at a time, following no link.
type prefetchWalker struct {
	root int
	dirs map[string]int
}

func (w *prefetchWalker) dir(rel string) (int, error) {
	if rel == "." {
		return w.root, nil
	}
	if fd, ok := w.dirs[rel]; ok {
		return fd, nil
	}
	dir, name := splitPath(rel)
	parent, err := w.dir(dir)
	if err != nil {
		return -1, err
	}
	fd, err := openDirAt(parent, name)
	if err != nil {
		return -1, err
	}
	if len(w.dirs) >= maxDirs {
		w.close()
		w.dirs = map[string]int{}
	}
	w.dirs[rel] = fd
	return fd, nil
}

// lstat is lstatAt of key, through the looker's directories: Missing when
// a directory on the way is missing.
func (w *prefetchWalker) lstat(key string) (FileInfo, error) {
	dir, name := splitPath(key)
	dfd, err := w.dir(dir)
	if errors.Is(err, unix.ENOENT) {
		return FileInfo{}, nil
	}
	if err != nil {
		return FileInfo{}, err
	}
	return lstatAt(dfd, name)
}

func (w *prefetchWalker) close() {
	for _, fd := range w.dirs {
		unix.Close(fd)
	}
}
