package store

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cacheWith hashes keys in r, in order, and saves the cache, as a step
// that read them does.
func cacheWith(t *testing.T, r *Run, keys ...string) {
	t.Helper()
	f := r.Files()
	f.begun = time.Now().Add(time.Hour).UnixNano() // trusted by the next command
	for _, key := range keys {
		_, err := f.Hash(key, -1)
		require.NoError(t, err)
	}
	require.NoError(t, f.Save())
}

// cachedKeys lists the keys of r's cache file, in its order.
func cachedKeys(t *testing.T, r *Run) []string {
	t.Helper()
	data, err := os.ReadFile(r.abs(statePath("hashes")))
	require.NoError(t, err)
	var keys []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")[1:] {
		fields := strings.SplitN(line, " ", 7)
		keys = append(keys, fields[6])
	}
	return keys
}

// putOutside writes text to a file outside any run, and returns its path.
func putOutside(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "outside")
	putFile(t, p, text)
	return p
}

// A step's files read the cache on another goroutine and look at what it
// lists, in its order, each item the cache's entry of the same place; a
// key outside the run is left to the replay; and every answer is what a
// command without them gives.
func TestStepFiles_LookAtWhatTheCacheLists(t *testing.T) {
	useLookers(t, 1)
	r := newPrefetchRun(t)
	lockRun(t, r)
	outside := putOutside(t, "outside bytes")
	for _, key := range []string{"b", "a", "d/c"} {
		putFile(t, r.abs(key), key+" bytes")
	}
	cacheWith(t, r, "b", "a", outside, "d/c")

	f := r.StepFiles()
	require.True(t, f.Prefetching())
	waitLookers(t, f)
	require.Nil(t, f.pre.index, "the items are not the cache's entries")
	var keys []string
	for i := range f.pre.items {
		it := &f.pre.items[i]
		keys = append(keys, it.key)
		assert.Equal(t, i, int(it.entry), it.key)
		want := itemDone
		if it.key == outside {
			want = itemReplay
		}
		assert.Equal(t, want, it.state.Load(), it.key)
	}
	assert.Equal(t, []string{"b", "a", outside, "d/c"}, keys)
	for _, key := range keys {
		got, err := f.Hash(key, -1)
		require.NoError(t, err)
		want, err := r.Files().Hash(key, -1)
		require.NoError(t, err)
		assert.Equal(t, want, got, key)
	}
	f.Settle()
}

// On one core, or without a cache, a step's files are a command's.
func TestStepFiles_WithoutLookers(t *testing.T) {
	r := newPrefetchRun(t)
	lockRun(t, r)
	putFile(t, r.abs("a"), "a bytes")
	cacheWith(t, r, "a")

	useLookers(t, 0)
	f := r.StepFiles()
	assert.False(t, f.Prefetching())
	assert.Nil(t, f.loading)
	got, err := f.Hash("a", -1)
	require.NoError(t, err)
	assert.Equal(t, sum64("a bytes"), got.SHA256)

	useLookers(t, 1)
	require.NoError(t, os.Remove(r.abs(statePath("hashes"))))
	f = r.StepFiles()
	assert.False(t, f.Prefetching(), "an empty cache lists nothing to look at")
	f.Settle()
}

// The cache lists its files in the order the command that wrote it first
// asked for them, which is the order the next command's lookers take them
// in; a command that asks in another order rewrites it, even when it hashed
// nothing new, and one that asks in its order leaves it.
func TestCache_KeepsTheOrderOfUse(t *testing.T) {
	r := newPrefetchRun(t)
	lockRun(t, r)
	keys := []string{"in/1", "in/2", "in/3", "in/4", "out/1", "out/2", "out/3", "out/4"}
	for _, key := range keys {
		putFile(t, r.abs(key), key)
	}
	cacheWith(t, r, keys...)
	require.Equal(t, keys, cachedKeys(t, r))

	interleaved := []string{"in/1", "out/1", "in/2", "out/2", "in/3", "out/3", "in/4", "out/4"}
	cacheWith(t, r, interleaved...)
	assert.Equal(t, interleaved, cachedKeys(t, r), "asked in another order, the cache was not rewritten")

	before, err := os.Stat(r.abs(statePath("hashes")))
	require.NoError(t, err)
	cacheWith(t, r, interleaved...)
	after, err := os.Stat(r.abs(statePath("hashes")))
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "asked in its order for nothing new, the cache was written again")
}

// A looker leaves the items just ahead of where the replay is to the
// replay, and looks at those after them.
func TestPrefetch_LeavesTheItemsAheadOfTheReplayToIt(t *testing.T) {
	r := newPrefetchRun(t)
	var keys []string
	for i := range 3 * replayLead {
		key := "f" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		putFile(t, r.abs(key), key)
		keys = append(keys, key)
	}
	f := r.Files()
	useLookers(t, 0) // no looker of its own: the test runs one
	f.Prefetch(keys)
	require.Nil(t, f.pre, "a prefetch began without lookers")

	useLookers(t, 1)
	f.Prefetch(keys)
	p := f.pre
	p.stop.Store(true) // the looker it started stops at once
	p.wg.Wait()
	for i := range p.items {
		p.items[i].state.Store(itemWaiting)
	}
	p.next.Store(0)
	p.stop.Store(false)
	p.replayAt.Store(replayLead) // the replay asked for item replayLead-1
	w := prefetchWalker{root: p.root, dirs: map[string]int{}}
	p.lookAhead(&w)
	w.close()
	for i := range p.items {
		want := itemDone
		if i < 2*replayLead {
			want = itemWaiting
		}
		assert.Equal(t, want, p.items[i].state.Load(), "item %d", i)
	}
	f.pre = nil
}

// keptRaw gives a record's bytes back only while the record says what
// they say: a change to any of its fields, at any depth, is noticed.
func TestKeptRaw_NoticesEveryChange(t *testing.T) {
	in := Inputs{Output: "o", Prompt: "p", Launch: "{}", Files: []FileHash{{Path: "f", SHA256: "s"}, {Path: "g", SHA256: "t"}}}
	read := func() *JobState {
		js := &JobState{Handouts: 1, Input: &in, Outstanding: &Handout{Prompt: "h"}, Accepted: "a"}
		clone := *js
		i := *js.Input
		i.Files = append([]FileHash(nil), in.Files...)
		clone.Input = &i
		o := *js.Outstanding
		clone.Outstanding = &o
		clone.keepRaw([]byte("raw"))
		return &clone
	}
	require.Equal(t, []byte("raw"), read().keptRaw())

	// Every field a record holds, found by reflection, so that a field
	// added later is held too: each is changed in turn.
	var paths []string
	leaves(reflect.ValueOf(read()), "", func(_ reflect.Value, at string) { paths = append(paths, at) })
	require.NotEmpty(t, paths)
	for _, at := range paths {
		t.Run(at, func(t *testing.T) {
			js := read()
			leaves(reflect.ValueOf(js), "", func(v reflect.Value, path string) {
				if path != at {
					return
				}
				switch v.Kind() {
				case reflect.String:
					v.SetString(v.String() + "!")
				case reflect.Int:
					v.SetInt(v.Int() + 1)
				default:
					t.Fatalf("%s is a %s: say how to change it", at, v.Kind())
				}
			})
			assert.Nil(t, js.keptRaw(), "a change of %s was not noticed", at)
		})
	}

	for name, change := range map[string]func(js *JobState){
		"trouble":        func(js *JobState) { js.Trouble = &Trouble{} },
		"no input":       func(js *JobState) { js.Input = nil },
		"no outstanding": func(js *JobState) { js.Outstanding = nil },
		"a file more":    func(js *JobState) { js.Input.Files = append(js.Input.Files, FileHash{}) },
		"a file fewer":   func(js *JobState) { js.Input.Files = js.Input.Files[:1] },
		"another input":  func(js *JobState) { js.Input = &Inputs{} },
	} {
		js := read()
		change(js)
		assert.Nil(t, js.keptRaw(), name)
	}
	withTrouble := &JobState{Trouble: &Trouble{}}
	withTrouble.keepRaw([]byte("raw"))
	assert.Nil(t, withTrouble.keptRaw(), "a record with trouble is encoded anew")
}

// A state's unchanged job is written as it was read, and a changed one,
// in place or replaced, is encoded anew: a record read with spaces in it
// shows which.
func TestKeptRaw_UnchangedJobsAreWrittenAsRead(t *testing.T) {
	st := sampleState()
	for _, name := range []string{"c", "d", "e"} {
		in := Inputs{Output: name + ".md", Prompt: sum64(name), Launch: "{}", Files: []FileHash{}}
		st.Jobs[name] = &JobState{Handouts: 1, Input: &in, Accepted: sum64(name)}
	}
	data := string(mustEncodeT(t, st))
	for _, name := range []string{"c", "d", "e"} {
		data = strings.Replace(data, `"`+name+`":{"handouts":1,`, `"`+name+`":{ "handouts" : 1 ,`, 1)
	}
	var read State
	require.NoError(t, decodeStrict([]byte(data), &read))
	read.Jobs["d"].Handouts = 2 // in place
	e := *read.Jobs["e"]
	e.Accepted = sum64("other")
	read.Jobs["e"] = &e // replaced by a changed copy

	out := string(mustEncodeT(t, &read))
	assert.Contains(t, out, `"c":{ "handouts" : 1 ,`, "an unchanged job was encoded anew")
	assert.Contains(t, out, `"d":{"handouts":2,`)
	assert.Contains(t, out, `"e":{"handouts":1,`)
	var again State
	require.NoError(t, decodeStrict([]byte(out), &again))
	assert.EqualExportedValues(t, read, again)
}

// leaves calls visit with every exported field of v that holds no other,
// named by its path from v; a list's last element stands for the list.
// Nil pointers (a job's trouble, which is never kept) have none.
func leaves(v reflect.Value, at string, visit func(v reflect.Value, at string)) {
	switch v.Kind() {
	case reflect.Invalid:
	case reflect.Pointer:
		leaves(v.Elem(), at, visit)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				leaves(v.Field(i), at+"."+f.Name, visit)
			}
		}
	case reflect.Slice:
		if v.Len() > 0 {
			leaves(v.Index(v.Len()-1), at+"[last]", visit)
		}
	default:
		visit(v, at)
	}
}
