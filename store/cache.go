package store

import (
	"bytes"
	"fmt"
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

type hashCache struct {
	stamp   int64 // when the command that wrote it began hashing
	entries map[string]cacheEntry
	used    map[string]bool // keys looked up or stored by this command
	dirty   bool            // this command hashed what the cache did not know
	// hashed are the files this command hashed itself. Within one command
	// an unchanged identity is trusted without the racy rule, so that an
	// input that many jobs share is read once: only the definition's own
	// code writes files during a step, and it writes the same bytes at
	// every replay.
	hashed map[string]cacheEntry
}

type cacheEntry struct {
	info FileInfo
	sum  string
}

func (c *hashCache) lookup(key string, info FileInfo) (string, bool) {
	c.used[key] = true
	if e, ok := c.hashed[key]; ok && e.info == info {
		return e.sum, true
	}
	e, ok := c.entries[key]
	if !ok || e.info != info {
		return "", false
	}
	if max(info.Mtime, info.Ctime) >= c.stamp-racyWindow {
		return "", false // racy: it may have changed within a tick
	}
	return e.sum, true
}

func (c *hashCache) store(key string, info FileInfo, sum string) {
	if strings.ContainsFunc(key, isControl) {
		return // a key the line format cannot hold is hashed every time
	}
	c.used[key] = true
	c.entries[key] = cacheEntry{info: info, sum: sum}
	c.hashed[key] = cacheEntry{info: info, sum: sum}
	c.dirty = true
}

// loadCache reads the hash cache; anything but a whole cache of this run
// is an empty one.
func (r *Run) loadCache() *hashCache {
	c := &hashCache{entries: map[string]cacheEntry{}, used: map[string]bool{}, hashed: map[string]cacheEntry{}}
	data, info, cut, err := r.tree.readFile(statePath("hashes"), maxRecord)
	if err != nil || info.Kind != Regular || cut {
		return c
	}
	if stamp, entries, ok := parseCache(data, r.Record.ID); ok {
		c.stamp, c.entries = stamp, entries
	}
	return c
}

// parseCache reads a cache's bytes, or says they are not a cache of run.
func parseCache(data []byte, run string) (stamp int64, entries map[string]cacheEntry, ok bool) {
	line, rest, found := bytes.Cut(data, []byte("\n"))
	head := strings.Fields(string(line))
	if !found || len(head) != 5 || strings.Join(head[:3], " ") != cacheHeader || head[3] != run {
		return 0, nil, false
	}
	stamp, err := strconv.ParseInt(head[4], 10, 64)
	if err != nil {
		return 0, nil, false
	}
	entries = make(map[string]cacheEntry, bytes.Count(rest, []byte("\n")))
	for len(rest) > 0 {
		line, rest, found = bytes.Cut(rest, []byte("\n"))
		if !found {
			return 0, nil, false
		}
		key, e, ok := parseEntry(line)
		if !ok {
			return 0, nil, false
		}
		entries[key] = e
	}
	return stamp, entries, true
}

func parseEntry(line []byte) (string, cacheEntry, bool) {
	var e cacheEntry
	fields := bytes.SplitN(line, []byte(" "), 7)
	if len(fields) != 7 || !isHex(string(fields[0]), 64) {
		return "", e, false
	}
	var nums [5]int64
	for i := range nums {
		n, err := strconv.ParseInt(string(fields[i+1]), 10, 64)
		if err != nil {
			return "", e, false
		}
		nums[i] = n
	}
	key := string(fields[6])
	if !ValidKey(key) {
		return "", e, false
	}
	e.sum = string(fields[0])
	e.info = FileInfo{Kind: Regular, Dev: uint64(nums[0]), Ino: uint64(nums[1]), Size: nums[2], Mtime: nums[3], Ctime: nums[4]}
	return key, e, true
}

// saveCache writes the entries the command used, stamped with when it
// began hashing. Entries of files the command did not look at are dropped:
// the cache holds what the run reads now.
func (r *Run) saveCache(c *hashCache, begun int64) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %d\n", cacheHeader, r.Record.ID, begun)
	for key, e := range c.entries {
		if !c.used[key] {
			continue
		}
		fmt.Fprintf(&b, "%s %d %d %d %d %d %s\n", e.sum, e.info.Dev, e.info.Ino, e.info.Size, e.info.Mtime, e.info.Ctime, key)
	}
	return r.write("hashes", statePath("hashes"), b.Bytes())
}
