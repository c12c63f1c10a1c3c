package store

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
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

// hashCache is the cache as one command uses it.
type hashCache struct {
	stamp   int64 // when the command that wrote it began hashing
	entries map[string]*cacheEntry
	dirty   bool // this command hashed what the cache did not know
}

type cacheEntry struct {
	info FileInfo
	sum  string
	// used: looked up or stored by this command, so written back; the
	// cache holds what the run reads now.
	used bool
	// mine: hashed by this command itself. Within one command an unchanged
	// identity is trusted without the racy rule, so that an input that
	// many jobs share is read once: only the definition's own code writes
	// files during a step, and it writes the same bytes at every replay.
	mine bool
}

func newHashCache() *hashCache {
	return &hashCache{entries: map[string]*cacheEntry{}}
}

// lookup gives the hash of the file at key whose identity is info, when
// the cache holds an entry for it that may be trusted.
func (c *hashCache) lookup(key string, info FileInfo) (string, bool) {
	e := c.entries[key]
	if e == nil {
		return "", false
	}
	e.used = true
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
	c.entries[key] = &cacheEntry{info: info, sum: sum, used: true, mine: true}
	c.dirty = true
}

// loadCache reads the hash cache; anything but a whole cache of this run
// is an empty one.
func (r *Run) loadCache() *hashCache {
	data, info, cut, err := r.tree.readFile(statePath("hashes"), maxRecord)
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
func readCache(data []byte, run string) (*hashCache, bool) {
	line, rest, found := strings.Cut(string(data), "\n")
	head := strings.Fields(line)
	if !found || len(head) != 5 || strings.Join(head[:3], " ") != cacheHeader || head[3] != run {
		return nil, false
	}
	stamp, err := strconv.ParseInt(head[4], 10, 64)
	if err != nil {
		return nil, false
	}
	c := &hashCache{stamp: stamp, entries: map[string]*cacheEntry{}}
	for len(rest) > 0 {
		line, rest, found = strings.Cut(rest, "\n")
		if !found {
			return nil, false
		}
		key, e, ok := parseEntry(line)
		if !ok || c.entries[key] != nil {
			return nil, false
		}
		c.entries[key] = e
	}
	return c, true
}

// parseEntry reads one line: a SHA-256, five numbers and a key, separated
// by one space each.
func parseEntry(line string) (string, *cacheEntry, bool) {
	fields := strings.SplitN(line, " ", 7)
	if len(fields) != 7 || !isHex(fields[0], 64) || !ValidKey(fields[6]) {
		return "", nil, false
	}
	var nums [5]int64
	for i := range nums {
		n, err := strconv.ParseInt(fields[i+1], 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != fields[i+1] {
			return "", nil, false
		}
		nums[i] = n
	}
	info := FileInfo{Kind: Regular, Dev: uint64(nums[0]), Ino: uint64(nums[1]), Size: nums[2], Mtime: nums[3], Ctime: nums[4]}
	return fields[6], &cacheEntry{info: info, sum: fields[0]}, true
}

// saveCache writes the entries the command used, stamped with when it
// began hashing, in the order of their keys. Entries of files the command
// did not look at are dropped: the cache holds what the run reads now.
func (r *Run) saveCache(c *hashCache, begun int64) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %d\n", cacheHeader, r.Record.ID, begun)
	for _, key := range slices.Sorted(maps.Keys(c.entries)) {
		e := c.entries[key]
		if !e.used {
			continue
		}
		fmt.Fprintf(&b, "%s %d %d %d %d %d %s\n", e.sum, int64(e.info.Dev), int64(e.info.Ino), e.info.Size, e.info.Mtime, e.info.Ctime, key)
	}
	return r.write("hashes", statePath("hashes"), b.Bytes())
}
