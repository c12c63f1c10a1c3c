package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// The hash cache, .custodian/hashes, maps a file's identity (device, inode,
// size, modification and change time) to the SHA-256 of its bytes, so that
// a step over unchanged files costs one lstat each instead of a read. It is
// derived data: a missing, damaged or foreign cache is an empty one, and is
// rebuilt by hashing, never an error.
//
// It must never give a stale hash. A file can change without changing its
// identity only within the granularity of the clock that stamps its times:
// written twice in one tick, with the same size, it keeps its times. So an
// entry is trusted only when its file's times are older, by more than
// racyWindow, than the moment its command began hashing (the rule git uses
// for its index): a file changed after that moment has later times. An
// entry too young to be trusted is hashed again, and trusted once it has
// aged.
//
// The file is lines of text, the first a header:
//
//	custodian hashes 1 <run id> <when its command began hashing, ns>
//	<sha256> <dev> <ino> <size> <mtime ns> <ctime ns> <key>
//
// one line per file; the key, a run-relative path or an absolute one
// outside the run, comes last because it may hold spaces.

// racyWindow is how much older than its command a file's times must be for
// its entry to be trusted: more than the coarsest timestamp of the file
// systems custodian meets (two seconds, on FAT).
const racyWindow = int64(2 * time.Second)

const cacheHeader = "custodian hashes 1"

// hashCache is the cache as one command uses it: the entries it read, in
// the order of the file, then those it stored.
type hashCache struct {
	stamp   int64 // when the command that wrote it began hashing
	index   map[string]int32
	entries []cacheEntry
	// used lists the entries this command looked up or stored, in the
	// order it first did: the order they are written back in, and the one
	// the next command's lookers take them in.
	used  []int32
	dirty bool // this command hashed what the cache did not know
}

type cacheEntry struct {
	key  string
	info FileInfo
	sum  string
	// used: looked up or stored by this command (listed in the cache's
	// used), so written back.
	used bool
	// mine: hashed by this command itself. Within one command an unchanged
	// identity is trusted without the racy rule, so that an input that
	// many jobs share is read once: only the definition's own code writes
	// files during a step, and it writes the same bytes at every replay.
	mine bool
}

func newHashCache() *hashCache {
	return &hashCache{index: map[string]int32{}}
}

// find returns the position of key's entry, or -1 when the cache holds
// none.
func (c *hashCache) find(key string) int {
	if i, ok := c.index[key]; ok {
		return int(i)
	}
	return -1
}

// lookupAt gives the hash of entry i (-1: none) for a file whose identity
// is info, when the entry may be trusted.
func (c *hashCache) lookupAt(i int, info FileInfo) (string, bool) {
	if i < 0 {
		return "", false
	}
	c.use(i)
	e := &c.entries[i]
	if e.info != info {
		return "", false
	}
	if !e.mine && max(info.Mtime, info.Ctime) >= c.stamp-racyWindow {
		return "", false // racy: it may have changed within a tick
	}
	return e.sum, true
}

func (c *hashCache) store(key string, info FileInfo, sum string) {
	if strings.ContainsFunc(key, isControl) {
		return // a key the line format cannot hold is hashed every time
	}
	e := cacheEntry{key: key, info: info, sum: sum, mine: true}
	i, ok := c.index[key]
	if ok {
		e.used = c.entries[i].used
		c.entries[i] = e
	} else {
		i = int32(len(c.entries))
		c.index[key] = i
		c.entries = append(c.entries, e)
	}
	c.use(int(i))
	c.dirty = true
}

// reordered says whether the command used the entries in an order other
// than theirs often enough to be worth writing down: the next command's
// lookers take them in the cache's order, and keep ahead of its replay
// when that is the replay's order. (A cache written before a step asked for
// outputs lists every input, then every output.)
func (c *hashCache) reordered() bool {
	breaks := 0
	for k := 1; k < len(c.used); k++ {
		if c.used[k] != c.used[k-1]+1 {
			breaks++
		}
	}
	return breaks > len(c.used)/8
}

// use notes that the command used entry i.
func (c *hashCache) use(i int) {
	if e := &c.entries[i]; !e.used {
		e.used = true
		c.used = append(c.used, int32(i))
	}
}

// loadCache reads the hash cache; anything but a whole cache of this run
// is an empty one.
func (r *Run) loadCache() *hashCache {
	data, info, cut, err := r.tree.readFile(statePath("hashes"), maxRecord)
	return r.cacheOf(data, info, cut, err)
}

// loadCacheAt is loadCache through root, a descriptor of the run directory
// of the caller's own: the tree's are not to be shared between goroutines.
func (r *Run) loadCacheAt(root int) *hashCache {
	return r.cacheOf(readStateFileAt(root, "hashes"))
}

// cacheOf is the cache read from data, the file's bytes up to a bound (cut:
// there were more), or an empty one.
func (r *Run) cacheOf(data []byte, info FileInfo, cut bool, err error) *hashCache {
	if err != nil || info.Kind != Regular || cut {
		return newHashCache()
	}
	c, ok := readCache(data, r.Record.ID)
	if !ok {
		return newHashCache()
	}
	return c
}

// readCache reads a cache's bytes, or says they are not a cache of run.
// Keys and sums are parts of data, as a string that shares its memory, so
// that reading ten thousand entries allocates a few times, not per entry:
// the caller does not change data afterwards.
func readCache(data []byte, run string) (*hashCache, bool) {
	text := unsafe.String(unsafe.SliceData(data), len(data))
	line, rest, found := strings.Cut(text, "\n")
	head := strings.Fields(line)
	if !found || len(head) != 5 || strings.Join(head[:3], " ") != cacheHeader || head[3] != run {
		return nil, false
	}
	stamp, err := strconv.ParseInt(head[4], 10, 64)
	if err != nil {
		return nil, false
	}
	lines := strings.Count(rest, "\n")
	c := &hashCache{stamp: stamp, index: make(map[string]int32, lines), entries: make([]cacheEntry, 0, lines)}
	for len(rest) > 0 {
		line, rest, found = strings.Cut(rest, "\n")
		if !found {
			return nil, false
		}
		e, ok := parseEntry(line)
		if !ok {
			return nil, false
		}
		if _, dup := c.index[e.key]; dup {
			return nil, false
		}
		c.index[e.key] = int32(len(c.entries))
		c.entries = append(c.entries, e)
	}
	return c, true
}

// parseEntry reads one line: a SHA-256, five numbers and a key, separated
// by one space each.
func parseEntry(line string) (cacheEntry, bool) {
	var e cacheEntry
	if len(line) < 65 || line[64] != ' ' || !isHex(line[:64], 64) {
		return e, false
	}
	e.sum, line = line[:64], line[65:]
	var nums [5]int64
	for i := range nums {
		field, rest, found := strings.Cut(line, " ")
		n, ok := parseDecimal(field)
		if !found || !ok {
			return e, false
		}
		nums[i], line = n, rest
	}
	if !ValidKey(line) {
		return e, false
	}
	e.key = line
	e.info = FileInfo{Kind: Regular, Dev: uint64(nums[0]), Ino: uint64(nums[1]), Size: nums[2], Mtime: nums[3], Ctime: nums[4]}
	return e, true
}

// parseDecimal reads an integer as strconv.FormatInt writes it.
func parseDecimal(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if s == "" || len(s) > 19 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case neg && n <= 1<<63:
		return -int64(n), true
	case !neg && n < 1<<63:
		return int64(n), true
	}
	return 0, false
}

// saveCache writes the entries the command used, stamped with when it
// began hashing. Entries of files the command did not look at are dropped:
// the cache holds what the run reads now.
func (r *Run) saveCache(c *hashCache, begun int64) error {
	size := 128
	for i := range c.entries {
		size += 172 + len(c.entries[i].key)
	}
	b := make([]byte, 0, size)
	b = fmt.Appendf(b, "%s %s %d\n", cacheHeader, r.Record.ID, begun)
	for _, i := range c.used {
		e := &c.entries[i]
		b = append(b, e.sum...)
		for _, n := range [...]int64{int64(e.info.Dev), int64(e.info.Ino), e.info.Size, e.info.Mtime, e.info.Ctime} {
			b = append(b, ' ')
			b = strconv.AppendInt(b, n, 10)
		}
		b = append(b, ' ')
		b = append(b, e.key...)
		b = append(b, '\n')
	}
	return r.write("hashes", statePath("hashes"), b)
}
