package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The prefetch is an optimisation and nothing more: whatever a looker
// found, Hash must answer exactly as it answers without one (same
// Content, same class of error), a link on the way must never be
// followed, a pipe never waited on, the cache neither trusted where it
// may not be nor left without what was hashed, and every descriptor a
// looker opened closed once it is settled.
//
// The tests wait for the lookers without settling (waitLookers) when
// they mean the lookers, not the replay, to answer, and check that the
// item is itemDone before Hash takes it.

// newPrefetchRun starts a run in a fresh directory and returns it, open.
// (store_test's newRun belongs to the external test package.)
func newPrefetchRun(t *testing.T) *Run {
	t.Helper()
	r, err := Create(filepath.Join(t.TempDir(), "run"), RunRecord{Definition: "def", Version: "test"}, NewState(1))
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r
}

// lockRun takes r's lock for the rest of the test, as a command that saves
// the hash cache holds it.
func lockRun(t *testing.T, r *Run) {
	t.Helper()
	unlock, err := r.Lock()
	require.NoError(t, err)
	t.Cleanup(unlock)
}

// useLookers makes every prefetch of the test run n lookers.
func useLookers(t *testing.T, n int) {
	t.Helper()
	old := lookers
	lookers = func() int { return n }
	t.Cleanup(func() { lookers = old })
}

// waitLookers waits, without settling, until f's lookers have taken every
// item they will take ahead of the replay. A looker that blocks (on a
// pipe, say) fails the test rather than hanging it.
func waitLookers(t *testing.T, f *Files) {
	t.Helper()
	require.NotNil(t, f.pre, "no prefetch is running")
	t.Cleanup(f.Settle)
	done := make(chan struct{})
	go func() {
		f.pre.ahead.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		require.FailNow(t, "the lookers did not finish: one of them blocks")
	}
}

// lookedAt returns r's files of a command that began at now+begun, once
// its lookers have looked at keys: a command that began an hour from now
// takes every file as older than the racy window.
func lookedAt(t *testing.T, r *Run, begun time.Duration, keys ...string) *Files {
	t.Helper()
	f := r.Files()
	f.begun = time.Now().Add(begun).UnixNano()
	f.Prefetch(keys)
	waitLookers(t, f)
	return f
}

// itemOf returns the prefetch item of key.
func itemOf(t *testing.T, f *Files, key string) *prefetchItem {
	t.Helper()
	require.NotNil(t, f.pre, "no prefetch is running")
	i, ok := f.pre.index[key]
	require.True(t, ok, "%q is not prefetched", key)
	return &f.pre.items[i]
}

// requireDone checks that a looker, not the replay, took key.
func requireDone(t *testing.T, f *Files, key string) *prefetchItem {
	t.Helper()
	it := itemOf(t, f, key)
	require.Equal(t, itemDone, it.state.Load(), "%s: no looker answered it", key)
	return it
}

// plainHash hashes key as a command without prefetch does: a fresh Files,
// which reads the hash cache as it is on disk.
func plainHash(t *testing.T, r *Run, key string, limit int64) (Content, error) {
	t.Helper()
	return r.Files().Hash(key, limit)
}

// assertSameHash holds what Hash said with a prefetch to what it says
// without one: the same Content, or an error of the same class and text.
func assertSameHash(t *testing.T, key string, want Content, wantErr error, got Content, gotErr error) {
	t.Helper()
	if wantErr != nil {
		if assert.Error(t, gotErr, "%s: without a prefetch Hash fails with %v", key, wantErr) {
			assert.Equal(t, errors.Is(wantErr, ErrLink), errors.Is(gotErr, ErrLink), "%s: %v", key, gotErr)
			assert.Equal(t, errors.Is(wantErr, ErrIO), errors.Is(gotErr, ErrIO), "%s: %v", key, gotErr)
			assert.Equal(t, wantErr.Error(), gotErr.Error(), key)
		}
		assert.Equal(t, Content{}, got, key)
		return
	}
	assert.NoError(t, gotErr, key)
	assert.Equal(t, want, got, key)
}

// putFile writes text at p, making its directory.
func putFile(t *testing.T, p, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
}

// sparseFile makes a file of size zero bytes at p, without writing them.
func sparseFile(t *testing.T, p string, size int64) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	fh, err := os.Create(p)
	require.NoError(t, err)
	require.NoError(t, fh.Truncate(size))
	require.NoError(t, fh.Close())
}

// zeroSum is the SHA-256 of size zero bytes.
func zeroSum(size int64) string {
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for size > 0 {
		n := min(size, int64(len(buf)))
		h.Write(buf[:n])
		size -= n
	}
	return hexString(h.Sum(nil))
}

// lstatFile is what lstat says of the absolute path p.
func lstatFile(t *testing.T, p string) FileInfo {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st))
	return infoOf(&st)
}

// join is the run-relative key of name in the directory base ("" for the
// run itself).
func join(base, name string) string {
	if base == "" {
		return name
	}
	return path.Join(base, name)
}

// equivalenceCase is a key of the equivalence fixture and what Hash says
// of it.
type equivalenceCase struct {
	name  string
	key   string // relative to the fixture's base
	limit int64
	want  Content
	// wantErr is a class the error without prefetch is of; nil: none.
	wantErr error
	// check says what the looker must have found.
	check func(t *testing.T, it *prefetchItem)
}

// makeEquivalenceFixture lays out, in base, a path of every kind the
// equivalence test hashes, and returns the cases.
func makeEquivalenceFixture(t *testing.T, r *Run, base string) []equivalenceCase {
	t.Helper()
	dir := r.abs(base) // the run itself for ""
	require.NoError(t, os.MkdirAll(dir, 0o755))
	at := func(name string) string { return filepath.Join(dir, filepath.FromSlash(name)) }

	putFile(t, at("file"), "regular bytes\n")
	putFile(t, at("empty"), "")
	putFile(t, at("real/file"), "in real\n")
	require.NoError(t, os.Mkdir(at("real/sub"), 0o755))
	require.NoError(t, os.Symlink("file", at("link-to-file")))
	require.NoError(t, os.Symlink("real", at("link-to-dir")))
	require.NoError(t, os.Symlink("nowhere", at("dangling")))
	require.NoError(t, os.Symlink("real", at("via-link")))
	require.NoError(t, os.Mkdir(at("nested"), 0o755))
	require.NoError(t, os.Symlink("../real", at("nested/via-link")))
	require.NoError(t, os.Symlink("nowhere", at("via-dangling")))
	require.NoError(t, syscall.Mkfifo(at("fifo"), 0o644))
	putFile(t, at("big"), "0123456789abcdef")
	sparseFile(t, at("huge"), prefetchMaxRead+1)
	sparseFile(t, at("huge-over"), prefetchMaxRead+1)

	left := func(t *testing.T, it *prefetchItem) {
		assert.False(t, it.ok, "a link on the way must be left to the replay, not followed nor taken for missing")
	}
	kind := func(k FileKind) func(t *testing.T, it *prefetchItem) {
		return func(t *testing.T, it *prefetchItem) {
			assert.True(t, it.ok)
			assert.Equal(t, k, it.info.Kind)
			assert.Empty(t, it.sum, "only a regular file is read")
		}
	}
	read := func(sum string) func(t *testing.T, it *prefetchItem) {
		return func(t *testing.T, it *prefetchItem) {
			assert.True(t, it.ok)
			assert.Equal(t, Regular, it.info.Kind)
			assert.Equal(t, sum, it.sum)
		}
	}
	// A file where a directory belongs is nothing at the key; a looker may
	// say so, or leave it to the replay with what else ENOTDIR may mean.
	missingOrLeft := func(t *testing.T, it *prefetchItem) {
		if it.ok {
			assert.Equal(t, Missing, it.info.Kind)
		}
	}
	unread := func(t *testing.T, it *prefetchItem) {
		assert.True(t, it.ok)
		assert.Equal(t, Regular, it.info.Kind)
		assert.Equal(t, int64(prefetchMaxRead+1), it.info.Size)
		assert.Empty(t, it.sum, "a file over prefetchMaxRead is not read by a looker")
	}
	hugeSum := zeroSum(prefetchMaxRead + 1)

	cases := []equivalenceCase{
		{name: "regular", key: "file", limit: -1,
			want: Content{Kind: Regular, Size: 14, SHA256: sum64("regular bytes\n")}, check: read(sum64("regular bytes\n"))},
		{name: "regular under a limit it fits", key: "file", limit: 14,
			want: Content{Kind: Regular, Size: 14, SHA256: sum64("regular bytes\n")}},
		{name: "empty", key: "empty", limit: -1,
			want: Content{Kind: Regular, SHA256: sum64("")}, check: read(sum64(""))},
		{name: "missing", key: "missing", limit: -1, want: Content{}, check: kind(Missing)},
		{name: "in a missing directory", key: "no-dir/file", limit: -1, want: Content{}, check: kind(Missing)},
		{name: "under a regular file", key: "file/under", limit: -1, want: Content{}, check: missingOrLeft},
		{name: "under a pipe", key: "fifo/under", limit: -1, want: Content{}, check: missingOrLeft},
		{name: "in a subdirectory", key: "real/file", limit: -1,
			want: Content{Kind: Regular, Size: 8, SHA256: sum64("in real\n")}, check: read(sum64("in real\n"))},
		{name: "link to a file", key: "link-to-file", limit: -1, want: Content{Kind: Link}, check: kind(Link)},
		{name: "link to a directory", key: "link-to-dir", limit: -1, want: Content{Kind: Link}, check: kind(Link)},
		{name: "dangling link", key: "dangling", limit: -1, want: Content{Kind: Link}, check: kind(Link)},
		{name: "file whose directory is a link", key: "via-link/file", limit: -1, wantErr: ErrLink, check: left},
		{name: "directory whose parent is a link", key: "via-link/sub", limit: -1, wantErr: ErrLink, check: left},
		{name: "link deeper on the way", key: "nested/via-link/file", limit: -1, wantErr: ErrLink, check: left},
		{name: "dangling link on the way", key: "via-dangling/x", limit: -1, wantErr: ErrLink, check: left},
		{name: "pipe", key: "fifo", limit: -1, want: Content{Kind: Pipe}, check: kind(Pipe)},
		{name: "directory", key: "real", limit: -1, want: Content{Kind: Directory}, check: kind(Directory)},
		{name: "over the limit", key: "big", limit: 4,
			want: Content{Kind: Regular, Size: 16, Over: true}, check: read(sum64("0123456789abcdef"))},
		{name: "over prefetchMaxRead", key: "huge", limit: -1,
			want: Content{Kind: Regular, Size: prefetchMaxRead + 1, SHA256: hugeSum}, check: unread},
		{name: "over prefetchMaxRead and the limit", key: "huge-over", limit: prefetchMaxRead,
			want: Content{Kind: Regular, Size: prefetchMaxRead + 1, Over: true}, check: unread},
	}
	if os.Geteuid() != 0 {
		putFile(t, at("unreadable"), "secret")
		require.NoError(t, os.Chmod(at("unreadable"), 0))
		t.Cleanup(func() { _ = os.Chmod(at("unreadable"), 0o644) })
		cases = append(cases, equivalenceCase{name: "unreadable", key: "unreadable", limit: -1, wantErr: ErrIO,
			check: func(t *testing.T, it *prefetchItem) { assert.False(t, it.ok, "an error is left to the replay") }})
	}
	return cases
}

// TestPrefetch_HashIsAsWithout holds Hash through a prefetch to Hash
// without one, for a path of every kind, whether the lookers lstat each
// name or read the listing of the directory, with one looker and with
// several.
func TestPrefetch_HashIsAsWithout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lookers int
		listing bool // enough unknown keys in the directory to list it
	}{
		{"one looker", 1, false},
		{"three lookers", 3, false},
		{"one looker, listed", 1, true},
		{"three lookers, listed", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useLookers(t, tc.lookers)
			r := newPrefetchRun(t)
			base := ""
			if tc.listing {
				base = "crowd"
			}
			cases := makeEquivalenceFixture(t, r, base)
			var keys []string
			for _, c := range cases {
				keys = append(keys, join(base, c.key))
			}
			if tc.listing {
				for i := range minListing + 6 {
					name := fmt.Sprintf("pad-%02d", i)
					putFile(t, r.abs(join(base, name)), name)
					keys = append(keys, join(base, name))
				}
			}

			type answer struct {
				c   Content
				err error
			}
			want := map[string]answer{}
			for _, c := range cases {
				key := join(base, c.key)
				got, err := plainHash(t, r, key, c.limit)
				if c.wantErr != nil {
					require.ErrorIs(t, err, c.wantErr, "%s: without a prefetch", c.name)
				} else {
					require.NoError(t, err, "%s: without a prefetch", c.name)
					require.Equal(t, c.want, got, "%s: without a prefetch", c.name)
				}
				want[c.name] = answer{got, err}
			}

			f := r.Files()
			f.Prefetch(keys)
			waitLookers(t, f)
			if tc.listing {
				l := f.pre.listings[base]
				require.NotNil(t, l)
				assert.GreaterOrEqual(t, l.unknown, minListing)
				assert.NotNil(t, l.names, "the lookers did not list %s", base)
			} else {
				assert.Nil(t, f.pre.listings["."].names, "a directory of few keys is not listed")
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					key := join(base, c.key)
					it := requireDone(t, f, key)
					if c.check != nil {
						c.check(t, it)
					}
					// As an output, the looker's answer stands; as any
					// other file, an lstat checks it first: both are as
					// without a prefetch.
					got, err := f.HashOutput(key, c.limit)
					assertSameHash(t, key, want[c.name].c, want[c.name].err, got, err)
					got, err = f.Hash(key, c.limit)
					assertSameHash(t, key, want[c.name].c, want[c.name].err, got, err)
				})
			}
			for _, key := range keys[len(cases):] {
				got, err := f.Hash(key, -1)
				require.NoError(t, err, key)
				assert.Equal(t, sum64(path.Base(key)), got.SHA256, key)
			}
			f.Settle()
		})
	}
}

// TestPrefetch_HashAgainIsTheSame holds a key hashed twice through one
// prefetch to the same answer: the second time it is the looker's again,
// or the cache's, never a mix.
func TestPrefetch_HashAgainIsTheSame(t *testing.T) {
	useLookers(t, 2)
	r := newPrefetchRun(t)
	putFile(t, r.abs("a"), "a bytes")
	putFile(t, r.abs("big"), "0123456789")
	f := r.Files()
	f.Prefetch([]string{"a", "big"})
	waitLookers(t, f)
	requireDone(t, f, "a")
	requireDone(t, f, "big")
	for _, tc := range []struct {
		key   string
		limit int64
		want  Content
	}{
		{"a", -1, Content{Kind: Regular, Size: 7, SHA256: sum64("a bytes")}},
		{"a", -1, Content{Kind: Regular, Size: 7, SHA256: sum64("a bytes")}},
		{"big", 3, Content{Kind: Regular, Size: 10, Over: true}},
		{"big", -1, Content{Kind: Regular, Size: 10, SHA256: sum64("0123456789")}},
		{"big", 3, Content{Kind: Regular, Size: 10, Over: true}},
	} {
		got, err := f.Hash(tc.key, tc.limit)
		require.NoError(t, err, tc.key)
		assert.Equal(t, tc.want, got, "%s, limit %d", tc.key, tc.limit)
	}
	i := f.cache.find("a")
	require.GreaterOrEqual(t, i, 0, "a looker's hash is stored in the cache")
	assert.Equal(t, sum64("a bytes"), f.cache.entries[i].sum)
	f.Settle()
}

// cachedRun makes a run whose hash cache holds key, hashed by a command
// that began at begun (zero: as it did), with sum in place of the file's
// own when sum is not empty, and saved.
func cachedRun(t *testing.T, r *Run, key string, begun time.Time, sum string) {
	t.Helper()
	f := r.Files()
	if !begun.IsZero() {
		f.begun = begun.UnixNano()
	}
	_, err := f.Hash(key, -1)
	require.NoError(t, err)
	i := f.cache.find(key)
	require.GreaterOrEqual(t, i, 0)
	if sum != "" {
		f.cache.entries[i].sum = sum
	}
	require.NoError(t, f.Save())
}

// TestPrefetch_TrustsTheCacheAsHashDoes: an entry the cache may trust is
// given without a read (a wrong sum planted in it comes back, which no
// read would give), and one it may not trust, too young by the racy rule,
// is read again.
func TestPrefetch_TrustsTheCacheAsHashDoes(t *testing.T) {
	wrong := sum64("not the file's bytes")
	for _, tc := range []struct {
		name    string
		begun   time.Time // when the command that cached it began
		trusted bool
	}{
		{"old enough", time.Now().Add(time.Hour), true},
		{"racy", time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useLookers(t, 2)
			r := newPrefetchRun(t)
			lockRun(t, r)
			putFile(t, r.abs("f"), "the file's bytes")
			cachedRun(t, r, "f", tc.begun, wrong)

			want, err := plainHash(t, r, "f", -1)
			require.NoError(t, err)
			if tc.trusted {
				require.Equal(t, wrong, want.SHA256, "precondition: the entry is trusted without prefetch")
			} else {
				require.Equal(t, sum64("the file's bytes"), want.SHA256, "precondition: the racy entry is not trusted")
			}

			f := r.Files()
			f.Prefetch([]string{"f"})
			waitLookers(t, f)
			it := requireDone(t, f, "f")
			assert.True(t, it.ok)
			assert.GreaterOrEqual(t, it.entry, int32(0))
			assert.Equal(t, tc.trusted, it.known)
			assert.Equal(t, wrong, it.cachedSum)
			if tc.trusted {
				assert.Equal(t, it.cachedSum, it.sum, "a trusted entry is answered without a read")
			} else {
				assert.Equal(t, sum64("the file's bytes"), it.sum, "a racy entry is read again")
			}
			got, err := f.Hash("f", -1)
			assertSameHash(t, "f", want, nil, got, err)
			f.Settle()
		})
	}
}

// TestPrefetch_TrustedEntryNeedsNoRead: a file that cannot be read is
// hashed all the same when the cache trusts its entry.
func TestPrefetch_TrustedEntryNeedsNoRead(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a file of mode 000")
	}
	useLookers(t, 2)
	r := newPrefetchRun(t)
	lockRun(t, r)
	putFile(t, r.abs("f"), "the file's bytes")
	cachedRun(t, r, "f", time.Now().Add(time.Hour), "")
	require.NoError(t, os.Chmod(r.abs("f"), 0))
	t.Cleanup(func() { _ = os.Chmod(r.abs("f"), 0o644) })
	_, err := os.ReadFile(r.abs("f"))
	require.Error(t, err, "precondition: the file cannot be read")

	f := r.Files()
	f.Prefetch([]string{"f"})
	waitLookers(t, f)
	it := requireDone(t, f, "f")
	assert.True(t, it.ok)
	got, err := f.Hash("f", -1)
	require.NoError(t, err)
	assert.Equal(t, Content{Kind: Regular, Size: 16, SHA256: sum64("the file's bytes")}, got)
	f.Settle()
}

// TestPrefetch_ChangedFileIsReadAgain: a file changed after it was cached,
// to the same size and with its modification time put back, differs from
// its entry by its change time (or, replaced, by its inode): a looker
// reads it again, however old the entry.
func TestPrefetch_ChangedFileIsReadAgain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p string)
	}{
		{"written in place", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, []byte("bbbb"), 0o644))
		}},
		{"replaced by a rename", func(t *testing.T, p string) {
			putFile(t, p+".new", "bbbb")
			require.NoError(t, os.Rename(p+".new", p))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useLookers(t, 2)
			r := newPrefetchRun(t)
			lockRun(t, r)
			p := r.abs("f")
			putFile(t, p, "aaaa")
			cachedRun(t, r, "f", time.Now().Add(time.Hour), "")
			before := lstatFile(t, p)

			// Past the granularity of the change time.
			time.Sleep(20 * time.Millisecond)
			tc.change(t, p)
			mtime := time.Unix(0, before.Mtime)
			require.NoError(t, os.Chtimes(p, mtime, mtime))
			after := lstatFile(t, p)
			require.Equal(t, before.Size, after.Size, "precondition: same size")
			require.Equal(t, before.Mtime, after.Mtime, "precondition: same mtime")
			require.NotEqual(t, before, after, "precondition: the identity changed")

			want, err := plainHash(t, r, "f", -1)
			require.NoError(t, err)
			require.Equal(t, sum64("bbbb"), want.SHA256, "precondition: without a prefetch the new bytes are hashed")

			f := r.Files()
			f.Prefetch([]string{"f"})
			waitLookers(t, f)
			it := requireDone(t, f, "f")
			assert.True(t, it.known, "precondition: the old entry is old enough to trust")
			assert.Equal(t, sum64("aaaa"), it.cachedSum)
			assert.Equal(t, sum64("bbbb"), it.sum, "the looker took the stale entry")
			got, err := f.Hash("f", -1)
			assertSameHash(t, "f", want, nil, got, err)
			f.Settle()
		})
	}
}

// TestPrefetch_CacheIsSavedWithWhatLookersHashed: the hashes lookers
// found are stored in the cache and saved, so that the next command finds
// them, with the files' identities.
func TestPrefetch_CacheIsSavedWithWhatLookersHashed(t *testing.T) {
	useLookers(t, 3)
	r := newPrefetchRun(t)
	lockRun(t, r)
	texts := map[string]string{"a": "a bytes", "b": "", "sub/c": "c bytes", "sub/deeper/d": "d bytes"}
	var keys []string
	for key, text := range texts {
		putFile(t, r.abs(key), text)
		keys = append(keys, key)
	}
	// Not regular files: hashed, but never cached.
	require.NoError(t, os.Symlink("a", r.abs("link")))
	require.NoError(t, syscall.Mkfifo(r.abs("fifo"), 0o644))
	keys = append(keys, "link", "fifo", "missing")

	f := r.Files()
	f.begun = time.Now().Add(time.Hour).UnixNano() // what it stores is trusted next time
	f.Prefetch(keys)
	waitLookers(t, f)
	for _, key := range keys {
		requireDone(t, f, key)
		_, err := f.Hash(key, -1)
		require.NoError(t, err, key)
	}
	f.Settle()
	require.NoError(t, f.Save())

	next := r.Files()
	for key, text := range texts {
		i := next.cache.find(key)
		if !assert.GreaterOrEqual(t, i, 0, "%s is not in the saved cache", key) {
			continue
		}
		e := next.cache.entries[i]
		assert.Equal(t, sum64(text), e.sum, key)
		assert.Equal(t, lstatFile(t, r.abs(key)), e.info, key)
	}
	for _, key := range []string{"link", "fifo", "missing"} {
		assert.Negative(t, next.cache.find(key), "%s is no regular file, yet cached", key)
	}

	// The next command's lookers take the saved entries on trust.
	next.Prefetch(keys)
	waitLookers(t, next)
	for key, text := range texts {
		it := requireDone(t, next, key)
		assert.True(t, it.known, key)
		assert.Equal(t, sum64(text), it.sum, key)
		got, err := next.Hash(key, -1)
		require.NoError(t, err, key)
		assert.Equal(t, sum64(text), got.SHA256, key)
	}
	next.Settle()
}

// TestPrefetch_ListedDirectory: a directory of more keys unknown to the
// cache than minListing is listed by a looker, which spares their lstats;
// every file in it is hashed as without a prefetch, and a name that is no
// regular file (a link, a pipe, a directory, nothing) is still told as
// such.
func TestPrefetch_ListedDirectory(t *testing.T) {
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d lookers", n), func(t *testing.T) {
			useLookers(t, n)
			r := newPrefetchRun(t)
			want := map[string]Content{}
			var keys []string
			for i := range minListing + 16 {
				key := fmt.Sprintf("many/file-%03d", i)
				text := fmt.Sprintf("bytes of %d\n", i)
				putFile(t, r.abs(key), text)
				want[key] = Content{Kind: Regular, Size: int64(len(text)), SHA256: sum64(text)}
				keys = append(keys, key)
			}
			require.NoError(t, os.Symlink("file-000", r.abs("many/link")))
			require.NoError(t, syscall.Mkfifo(r.abs("many/fifo"), 0o644))
			require.NoError(t, os.Mkdir(r.abs("many/dir"), 0o755))
			putFile(t, r.abs("many/empty"), "")
			for key, c := range map[string]Content{
				"many/link": {Kind: Link}, "many/fifo": {Kind: Pipe}, "many/dir": {Kind: Directory},
				"many/missing": {}, "many/empty": {Kind: Regular, SHA256: sum64("")},
			} {
				want[key] = c
				keys = append(keys, key)
			}
			for key, c := range want {
				got, err := plainHash(t, r, key, -1)
				require.NoError(t, err, key)
				require.Equal(t, c, got, "%s: without a prefetch", key)
			}

			f := r.Files()
			f.Prefetch(keys)
			waitLookers(t, f)
			l := f.pre.listings["many"]
			require.NotNil(t, l)
			assert.Equal(t, len(keys), l.unknown)
			require.NotNil(t, l.names, "the directory was not listed")
			assert.Equal(t, Link, l.names["link"])
			assert.Equal(t, Pipe, l.names["fifo"])
			for _, key := range keys {
				it := requireDone(t, f, key)
				assert.True(t, it.ok, key)
				assert.Equal(t, want[key].Kind, it.info.Kind, key)
				got, err := f.Hash(key, -1)
				require.NoError(t, err, key)
				assert.Equal(t, want[key], got, key)
			}
			f.Settle()
		})
	}
}

// TestPrefetch_Settle: once settled, every Hash asks the file system, so
// a file changed since a looker looked is seen as it is; settling twice,
// or without a prefetch, does nothing; and a prefetch of no lookers is
// none.
func TestPrefetch_Settle(t *testing.T) {
	t.Run("a change after settling is seen", func(t *testing.T) {
		useLookers(t, 2)
		r := newPrefetchRun(t)
		putFile(t, r.abs("f"), "old")
		putFile(t, r.abs("g"), "old")
		f := r.Files()
		f.Prefetch([]string{"f", "g"})
		waitLookers(t, f)
		requireDone(t, f, "f")
		requireDone(t, f, "g")
		putFile(t, r.abs("f"), "new, longer")
		putFile(t, r.abs("g"), "new, longer")

		// Until settled, what a looker found of an output stands for it;
		// any other file, which the definition's code may write, is looked
		// at again.
		got, err := f.HashOutput("f", -1)
		require.NoError(t, err)
		assert.Equal(t, Content{Kind: Regular, Size: 3, SHA256: sum64("old")}, got, "the snapshot of an output")
		fresh := Content{Kind: Regular, Size: 11, SHA256: sum64("new, longer")}
		got, err = f.Hash("g", -1)
		require.NoError(t, err)
		assert.Equal(t, fresh, got, "another file is looked at again")

		f.Settle()
		assert.Nil(t, f.pre)
		for _, key := range []string{"g", "f"} {
			got, err := f.Hash(key, -1)
			require.NoError(t, err, key)
			assert.Equal(t, fresh, got, "%s: a stale snapshot after Settle", key)
		}
	})
	t.Run("a removal after settling is seen", func(t *testing.T) {
		useLookers(t, 2)
		r := newPrefetchRun(t)
		putFile(t, r.abs("f"), "bytes")
		f := r.Files()
		f.Prefetch([]string{"f"})
		waitLookers(t, f)
		requireDone(t, f, "f")
		require.NoError(t, os.Remove(r.abs("f")))
		require.NoError(t, os.Symlink("elsewhere", r.abs("f")))
		f.Settle()
		got, err := f.Hash("f", -1)
		require.NoError(t, err)
		assert.Equal(t, Content{Kind: Link}, got)
	})
	t.Run("twice", func(t *testing.T) {
		useLookers(t, 2)
		r := newPrefetchRun(t)
		putFile(t, r.abs("f"), "bytes")
		f := r.Files()
		f.Prefetch([]string{"f"})
		f.Settle()
		assert.NotPanics(t, f.Settle)
		assert.Nil(t, f.pre)
		got, err := f.Hash("f", -1)
		require.NoError(t, err)
		assert.Equal(t, sum64("bytes"), got.SHA256)
	})
	t.Run("without a prefetch", func(t *testing.T) {
		r := newPrefetchRun(t)
		putFile(t, r.abs("f"), "bytes")
		f := r.Files()
		assert.NotPanics(t, f.Settle)
		assert.Nil(t, f.pre)
		got, err := f.Hash("f", -1)
		require.NoError(t, err)
		assert.Equal(t, sum64("bytes"), got.SHA256)
	})
	t.Run("prefetch again after settling", func(t *testing.T) {
		useLookers(t, 2)
		r := newPrefetchRun(t)
		putFile(t, r.abs("f"), "old")
		f := r.Files()
		f.Prefetch([]string{"f"})
		waitLookers(t, f)
		f.Settle()
		putFile(t, r.abs("f"), "new, longer")
		f.Prefetch([]string{"f"})
		waitLookers(t, f)
		requireDone(t, f, "f")
		got, err := f.Hash("f", -1)
		require.NoError(t, err)
		assert.Equal(t, sum64("new, longer"), got.SHA256)
		f.Settle()
	})
	for _, n := range []int{0, -1} {
		t.Run(fmt.Sprintf("%d lookers", n), func(t *testing.T) {
			useLookers(t, n)
			r := newPrefetchRun(t)
			putFile(t, r.abs("f"), "bytes")
			f := r.Files()
			f.Prefetch([]string{"f", "missing"})
			assert.Nil(t, f.pre, "a prefetch without lookers started")
			got, err := f.Hash("f", -1)
			require.NoError(t, err)
			assert.Equal(t, Content{Kind: Regular, Size: 5, SHA256: sum64("bytes")}, got)
			got, err = f.Hash("missing", -1)
			require.NoError(t, err)
			assert.Equal(t, Content{}, got)
			assert.NotPanics(t, f.Settle)
		})
	}
	t.Run("no keys", func(t *testing.T) {
		useLookers(t, 2)
		r := newPrefetchRun(t)
		f := r.Files()
		f.Prefetch(nil)
		assert.Nil(t, f.pre)
		f.Settle()
	})
}

// raceFixture lays out a few hundred keys of every kind, in directories
// few and many, and returns them.
func raceFixture(t *testing.T, r *Run) []string {
	t.Helper()
	var keys []string
	for i := range 300 {
		dir := []string{"many", "few", "deep/er/still"}[min(i/100, 2)]
		if dir == "few" && i%10 != 0 {
			dir = "others"
		}
		key := fmt.Sprintf("%s/f-%03d", dir, i)
		switch i % 25 {
		case 3:
			require.NoError(t, os.MkdirAll(r.abs(dir), 0o755))
			require.NoError(t, os.Symlink("f-000", r.abs(key)))
		case 7:
			require.NoError(t, os.MkdirAll(r.abs(dir), 0o755))
			require.NoError(t, syscall.Mkfifo(r.abs(key), 0o644))
		case 11:
			// missing
		case 13:
			require.NoError(t, os.MkdirAll(r.abs(key), 0o755))
		default:
			putFile(t, r.abs(key), fmt.Sprintf("%d\n", i*i))
		}
		keys = append(keys, key)
	}
	require.NoError(t, os.Symlink("many", r.abs("via-link")))
	keys = append(keys, "via-link/f-001", "missing-dir/x", "many/f-001/under")
	return keys
}

// TestPrefetch_ReplayFirst: the replay hashes keys right after the
// prefetch begins, so that it takes some before a looker does, waits for
// some a looker is at, and takes others from lookers; every answer is as
// without a prefetch. Run it with -race.
func TestPrefetch_ReplayFirst(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lookers  int
		reversed bool // the replay starts where the lookers end
	}{
		{"one looker", 1, false},
		{"four lookers", 4, false},
		{"four lookers, reversed", 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useLookers(t, tc.lookers)
			r := newPrefetchRun(t)
			keys := raceFixture(t, r)
			type answer struct {
				c   Content
				err error
			}
			want := map[string]answer{}
			for _, key := range keys {
				c, err := plainHash(t, r, key, -1)
				want[key] = answer{c, err}
			}
			order := keys
			if tc.reversed {
				order = make([]string, len(keys))
				for i, key := range keys {
					order[len(keys)-1-i] = key
				}
			}
			taken := map[int32]int{}
			for range 5 {
				f := r.Files()
				f.Prefetch(keys)
				require.NotNil(t, f.pre)
				for i, key := range order {
					hash := f.Hash
					if i%2 == 0 {
						hash = f.HashOutput
					}
					got, err := hash(key, -1)
					assertSameHash(t, key, want[key].c, want[key].err, got, err)
				}
				p := f.pre
				f.Settle()
				assert.False(t, f.Stale(), "nothing changed, yet a file taken on trust was found changed")
				for i := range p.items {
					s := p.items[i].state.Load()
					assert.Contains(t, []int32{itemDone, itemReplay, itemTrusted}, s, p.items[i].key)
					if s == itemTrusted {
						s = itemDone // a looker's, taken on trust
					}
					taken[s]++
				}
				// Settled, the same Files asks the file system.
				for _, key := range order[:20] {
					got, err := f.Hash(key, -1)
					assertSameHash(t, key, want[key].c, want[key].err, got, err)
				}
			}
			t.Logf("items taken: %d by lookers, %d by the replay", taken[itemDone], taken[itemReplay])
		})
	}
}

// TestPrefetch_SettleWhileLooking: settling at once stops the lookers;
// what they had not taken is the replay's, and Hash is as without a
// prefetch.
func TestPrefetch_SettleWhileLooking(t *testing.T) {
	useLookers(t, 4)
	r := newPrefetchRun(t)
	keys := raceFixture(t, r)
	f := r.Files()
	f.Prefetch(keys)
	p := f.pre
	require.NotNil(t, p)
	f.Settle()
	for i := range p.items {
		s := p.items[i].state.Load()
		assert.Contains(t, []int32{itemWaiting, itemDone}, s, "%s: a looker is still at it after Settle", p.items[i].key)
	}
	for _, key := range keys {
		want, wantErr := plainHash(t, r, key, -1)
		got, err := f.Hash(key, -1)
		assertSameHash(t, key, want, wantErr, got, err)
	}
}

// TestPrefetch_KeysItSkips: keys outside the run, unclean keys and
// repeated keys are skipped without a panic, and Hash of each is as
// without a prefetch.
func TestPrefetch_KeysItSkips(t *testing.T) {
	useLookers(t, 2)
	r := newPrefetchRun(t)
	putFile(t, r.abs("a"), "a")
	putFile(t, r.abs("b"), "b")
	outside := filepath.Join(t.TempDir(), "outside")
	putFile(t, outside, "outside")
	for _, tc := range []struct {
		name  string
		keys  []string
		items []string // what is prefetched, in order
	}{
		{"repeated", []string{"a", "b", "a", "a", "b"}, []string{"a", "b"}},
		{"outside the run", []string{"/abs/path", outside, "a", "/"}, []string{"a"}},
		{"unclean", []string{"a/../b", "./a", "a/", "a//b", "../a", "", ".", "..", "a/.", "a\nb", "b"}, []string{"b"}},
		{"only skipped", []string{"/abs/path", "a/../b", ""}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := r.Files()
			require.NotPanics(t, func() { f.Prefetch(tc.keys) })
			require.NotNil(t, f.pre)
			waitLookers(t, f)
			var items []string
			for i := range f.pre.items {
				items = append(items, f.pre.items[i].key)
			}
			assert.Equal(t, tc.items, items)
			assert.Len(t, f.pre.index, len(tc.items))
			for _, key := range tc.keys {
				want, wantErr := plainHash(t, r, key, -1)
				var got Content
				var err error
				require.NotPanics(t, func() { got, err = f.Hash(key, -1) }, key)
				assertSameHash(t, key, want, wantErr, got, err)
			}
			f.Settle()
		})
	}
}

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// TestPrefetch_ClosesWhatItOpens: once a prefetch is settled, and the
// lookers' own descriptor of the run closed behind them, the process
// holds as many descriptors as before, whether the lookers finished or
// were stopped.
func TestPrefetch_ClosesWhatItOpens(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	for _, tc := range []struct {
		name string
		wait bool // let the lookers finish before settling
		hash bool // hash every key before settling
	}{
		{"finished", true, true},
		{"finished, nothing hashed", true, false},
		{"stopped at once", false, false},
		{"replay first", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useLookers(t, 4)
			r := newPrefetchRun(t)
			keys := raceFixture(t, r)
			// More directories than a looker keeps open.
			for i := range maxDirs + 10 {
				key := fmt.Sprintf("dirs/d-%02d/f", i)
				putFile(t, r.abs(key), key)
				keys = append(keys, key)
			}
			// The tree opens its own directories, and keeps them: open them
			// before counting.
			warm := r.Files()
			for _, key := range keys {
				_, _ = warm.Hash(key, -1)
			}
			for range 3 {
				f := r.Files()
				before := openFDs(t)
				f.Prefetch(keys)
				require.NotNil(t, f.pre)
				if tc.wait {
					waitLookers(t, f)
				}
				if tc.hash {
					for _, key := range keys {
						_, _ = f.Hash(key, -1)
					}
				}
				f.Settle()
				after := openFDs(t)
				for deadline := time.Now().Add(time.Second); after != before && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
					after = openFDs(t)
				}
				require.Equal(t, before, after, "descriptors left open by a settled prefetch")
			}
		})
	}
}

// TestPrefetch_RacyFileIsReadAgain: a looker's hash of a file other than
// an output is taken only for a file older, by the racy window, than the
// command; a younger one could have been rewritten at the same size within
// the tick of the looker's read, keeping its times. An output's is taken
// as it is.
func TestPrefetch_RacyFileIsReadAgain(t *testing.T) {
	const planted = "0000000000000000000000000000000000000000000000000000000000000000"
	tests := []struct {
		name   string
		begun  time.Duration // the command's start, from now
		output bool
		want   string // "planted": the looker's answer was taken
	}{
		{"an input older than the window", time.Hour, false, "planted"},
		{"an input within the window", 0, false, "real"},
		{"an output within the window", 0, true, "planted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			useLookers(t, 1)
			r := newPrefetchRun(t)
			putFile(t, r.abs("f"), "bytes")
			f := lookedAt(t, r, tt.begun, "f")
			it := requireDone(t, f, "f")
			require.Equal(t, sum64("bytes"), it.sum)
			// What the looker found is put in its place, so that an answer
			// taken from it shows.
			it.sum = planted
			hash := f.Hash
			if tt.output {
				hash = f.HashOutput
			}
			got, err := hash("f", -1)
			require.NoError(t, err)
			want := sum64("bytes")
			if tt.want == "planted" {
				want = planted
			}
			assert.Equal(t, want, got.SHA256)
		})
	}
}
