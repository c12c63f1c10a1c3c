package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/custodian-run/custodian/internal/names"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Every record of a run is untrusted input: a worker may have written it.
// A fuzz test per record decoder feeds it what a worker could leave and
// holds it to three properties: it never panics; a record it accepts
// encodes and decodes back to the same value; and it never accepts a
// record that names a path outside the run or a name that is not one. The
// hash cache is held to its own: it never fails (a damaged cache is an
// empty one) and never gives a hash for a file whose identity it does not
// hold.
//
// The records are written with os.WriteFile, as a worker would write them,
// rather than through the run, which writes only under its lock.

// fuzzID is the id of the run the fuzz tests read records in. Seeds name
// it, so that mutations of records that belong to the run reach past the
// check of the run's id.
const fuzzID = "0123456789abcdef0123456789abcdef"

// fuzzRun makes a run whose id is fuzzID and returns it, open.
func fuzzRun(f *testing.F) *Run {
	f.Helper()
	dir := filepath.Join(f.TempDir(), "run")
	r, err := Create(dir, RunRecord{Definition: "def", Version: "test"}, NewState(1))
	require.NoError(f, err)
	rec := r.Record
	r.Close()
	rec.ID = fuzzID
	data, err := encode(rec)
	require.NoError(f, err)
	require.NoError(f, os.WriteFile(filepath.Join(dir, StateDir, "run.json"), data, 0o644))
	r, err = Open(dir)
	require.NoError(f, err)
	f.Cleanup(r.Close)
	return r
}

func sum64(text string) string {
	s := sha256.Sum256([]byte(text))
	return hex.EncodeToString(s[:])
}

func mustEncode(f *testing.F, v any) []byte {
	f.Helper()
	data, err := encode(v)
	require.NoError(f, err)
	return data
}

// sampleState is a state with every part filled in, as a run of a few
// steps leaves it.
func sampleState() *State {
	st := NewState(1)
	st.Run = fuzzID
	st.Steps, st.Replayed, st.Seq, st.Reports, st.Kept = 3, 3, 4, 1, 1
	st.Named = []string{"a", "b"}
	in := Inputs{Output: "a.md", Prompt: sum64("prompt"), Launch: `{"model":"small"}`,
		Files: []FileHash{{Path: "source.md", SHA256: sum64("source")}, {Path: "/elsewhere/x", SHA256: ""}}}
	st.Jobs["a"] = &JobState{Handouts: 2, Input: &in, Outstanding: &Handout{Prompt: sum64("prompt file")},
		Trouble: &Trouble{Failures: 1, BlocksTowardLimit: 1, Blocks: 1, Messages: []string{"m\nwith \"quotes\""}, History: []string{"h"},
			LastFailure: &Failure{Kind: "no-output", Reason: "no output"},
			Stopped:     &Stop{Kind: "no-output", Reason: "r", Record: ".custodian/jobs/a/block-1.md", Changes: map[string]string{}}}}
	in2 := Inputs{Output: "sub/b.md", Prompt: sum64("b"), Launch: "{}", Files: []FileHash{}}
	st.Jobs["b"] = &JobState{Handouts: 1, Input: &in2, Accepted: sum64("b output")}
	st.Effects["publish"] = EffectSeen{Status: EffectCompleted, Runs: 1}
	st.Workflow.Places["stalled"] = 1
	st.Workflow.Stopped = &Stop{Kind: "workflow-stop", Reason: "r", Record: ".custodian/workflow/block-1.md", Changes: map[string]string{"a": "patch x"}}
	st.Unreached = []string{"publish"}
	st.Moves = []Move{{Source: "a.md", Target: ".custodian/jobs/a/kept/1-a.md", Identity: sum64("a")}}
	st.Resolving = sampleEffect()
	st.Abandoned = &Abandon{At: "2026-01-01T00:00:00Z", Text: "enough\nsaid"}
	st.Build = Build{ID: "AAAAAAAAAAAAAAAAAAAA/BBBBBBBBBBBBBBBBBBBB", Revision: "3f9c2a7d1e04", Modified: true}
	st.Checked = st.Build
	st.Last = "blocked"
	st.Questions["ship-it"] = Question{Text: "Ship it?\nRead a.md first.", Choices: []string{"ship", "hold"}}
	st.Decisions["pay-it"] = Decision{Choice: "pay", Text: "worth it", At: "2026-01-01T00:00:00Z"}
	return st
}

func sampleEffect() *Effect {
	return &Effect{Format: EffectFormat, Run: fuzzID, Name: "publish", Status: EffectAbsent,
		Inputs: []FileHash{{Path: "reconciled.md", SHA256: sum64("r")}, {Path: "/abs/in", SHA256: ""}},
		State:  sum64("state"), Required: true, Runs: 1, At: "2026-01-01T00:00:00Z", By: "operator"}
}

// spoiled returns data with each of the replacements made in turn, one seed
// each: records a hostile worker would write, which the decoders must
// refuse, and which the fuzzer mutates from.
func spoiled(data []byte, replacements ...string) [][]byte {
	var out [][]byte
	for i := 0; i+1 < len(replacements); i += 2 {
		out = append(out, bytes.Replace(data, []byte(replacements[i]), []byte(replacements[i+1]), 1))
	}
	return out
}

// inside says whether rel is a path inside the run: clean and relative,
// and so joined to the run directory, still under it.
func inside(rel string) bool {
	if !Clean(rel) {
		return false
	}
	joined := filepath.Join("/run", filepath.FromSlash(rel))
	return strings.HasPrefix(joined, "/run/")
}

// inStateDirectory says whether rel is a path under .custodian/.
func inStateDirectory(rel string) bool { return inside(rel) && strings.HasPrefix(rel, StateDir+"/") }

// assertKey holds an input's key to its rule: a path inside the run, or a
// clean absolute path outside it, read as the definition declared.
func assertKey(t *testing.T, key, what string) {
	t.Helper()
	if strings.HasPrefix(key, "/") {
		assert.Equal(t, path.Clean(key), key, "%s: absolute key %q is not clean", what, key)
		return
	}
	assert.True(t, inside(key), "%s: key %q is not inside the run", what, key)
}

// assertStateInside holds an accepted state to the rule that it names
// nothing outside the run and no name that is not one.
func assertStateInside(t *testing.T, st *State) {
	t.Helper()
	for _, n := range []int{st.Steps, st.Replayed, st.Seq, st.Reports, st.Kept, st.Workflow.Blocks} {
		assert.GreaterOrEqual(t, n, 0, "a negative count")
	}
	for _, name := range st.Named {
		assert.True(t, names.Valid(name), "named: %q", name)
	}
	for _, name := range st.Unreached {
		assert.True(t, names.Valid(name), "unreached: %q", name)
	}
	for name := range st.Effects {
		assert.True(t, names.Valid(name), "effects: %q", name)
	}
	for name, js := range st.Jobs {
		assert.True(t, names.Valid(name), "jobs: %q", name)
		require.NotNil(t, js, "jobs[%q] is null", name)
		if js.Input != nil {
			assert.True(t, inside(js.Input.Output) && !strings.HasPrefix(js.Input.Output+"/", StateDir+"/"), "jobs[%q].input.output %q", name, js.Input.Output)
			for _, f := range js.Input.Files {
				assertKey(t, f.Path, "jobs["+name+"].input.files")
			}
		}
		if js.Trouble != nil && js.Trouble.Stopped != nil {
			assert.True(t, inStateDirectory(js.Trouble.Stopped.Record), "jobs[%q].trouble.stopped.record %q", name, js.Trouble.Stopped.Record)
		}
	}
	if s := st.Workflow.Stopped; s != nil {
		assert.True(t, inStateDirectory(s.Record), "workflow.stopped.record %q", s.Record)
	}
	for i, m := range st.Moves {
		assert.True(t, inside(m.Source) && !strings.HasPrefix(m.Source+"/", StateDir+"/"), "moves[%d].source %q", i, m.Source)
		parts := strings.Split(m.Target, "/")
		assert.True(t, inside(m.Target) && len(parts) == 5 && parts[0] == StateDir && parts[1] == "jobs" && names.Valid(parts[2]) && parts[3] == "kept",
			"moves[%d].target %q is not in .custodian/jobs/<job>/kept/", i, m.Target)
	}
	if e := st.Resolving; e != nil {
		assertEffectInside(t, e, "resolving")
	}
	for name, q := range st.Questions {
		assert.True(t, names.Valid(name), "questions: %q", name)
		for _, c := range q.Choices {
			assert.True(t, names.Valid(c), "questions[%q].choices: %q", name, c)
		}
		assert.False(t, strings.ContainsFunc(q.Text, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' }), "questions[%q].text %q", name, q.Text)
	}
	for name, d := range st.Decisions {
		assert.True(t, names.Valid(name) && names.Valid(d.Choice), "decisions: %q: %q", name, d.Choice)
		assert.False(t, strings.ContainsFunc(d.Text, func(r rune) bool { return r < 0x20 }), "decisions[%q].text %q", name, d.Text)
	}
}

func assertEffectInside(t *testing.T, e *Effect, what string) {
	t.Helper()
	assert.True(t, names.Valid(e.Name), "%s: name %q", what, e.Name)
	for _, f := range e.Inputs {
		assertKey(t, f.Path, what+".inputs")
	}
}

// roundTrip requires that v, a record a decoder accepted, encodes, and
// that its encoding decodes to the same value and encodes to the same
// bytes.
func roundTrip[T any](t *testing.T, v *T) {
	t.Helper()
	data, err := encode(v)
	require.NoError(t, err, "an accepted record does not encode: %+v", v)
	var again T
	require.NoError(t, decodeStrict(data, &again), "an accepted record's encoding does not decode: %s", data)
	assert.Equal(t, v, &again, "the record changed on its way through the codec: %s", data)
	data2, err := encode(&again)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(data2), "equal records encode differently")
}

// requireUntrusted requires that err refuses a record as untrusted, naming
// it.
func requireUntrusted(t *testing.T, err error, record string) {
	t.Helper()
	require.ErrorIs(t, err, ErrUntrusted)
	var rerr *RecordError
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, record, rerr.Path)
}

func FuzzStateRecord(f *testing.F) {
	r := fuzzRun(f)
	rel := statePath("state.json")
	file := r.abs(rel)

	good := mustEncode(f, sampleState())
	f.Add(good)
	// The seed that mutations start from is a state the run accepts.
	require.NoError(f, os.WriteFile(file, good, 0o644))
	_, err := r.LoadState()
	require.NoError(f, err)
	fresh := NewState(1)
	fresh.Run = fuzzID
	f.Add(mustEncode(f, fresh))
	for _, s := range spoiled(good,
		`"source":"a.md"`, `"source":"../victim.txt"`,
		`"target":".custodian/jobs/a/kept/1-a.md"`, `"target":"../victim.txt"`,
		`"target":".custodian/jobs/a/kept/1-a.md"`, `"target":".custodian/jobs/../../kept/x/y"`,
		`"name":"publish"`, `"name":"../../x"`,
		`"record":".custodian/jobs/a/block-1.md"`, `"record":"../outside.md"`,
		`"record":".custodian/workflow/block-1.md"`, `"record":".custodian/../../x"`,
		`"named":["a"`, `"named":["../a"`,
		`"jobs":{"a"`, `"jobs":{"../a"`,
		`"output":"a.md"`, `"output":".custodian/state.json"`,
		`"path":"source.md"`, `"path":"../source.md"`,
		`"path":"/elsewhere/x"`, `"path":"/elsewhere/../x"`,
		`"unreached":["publish"`, `"unreached":["a/b"`,
		`"steps":3`, `"steps":-1`,
		`"run":"`+fuzzID, `"run":"ffffffffffffffffffffffffffffffff`,
		`"format":2`, `"format":1`,
		`"kept":1`, `"kept":1,"kept":2`,
		`"accepted":"`, `"accepted":"x`,
		`"messages":["m\nwith`, `"messages":["m\u2028\ud800with`,
		`"questions":{"ship-it"`, `"questions":{"../ship"`,
		`"choices":["ship"`, `"choices":["Ship It"`,
		`"choices":["ship"`, `"choices":["hold"`,
		`"text":"Ship it?`, `"text":"\u001b[2JShip it?`,
		`"choice":"pay"`, `"choice":"pay\n"`,
		`"last":"blocked"`, `"last":"finished"`,
		`"id":"AAAA`, `"id":"../AAAA`,
	) {
		f.Add(s)
	}
	f.Add([]byte(`{"format":2}`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	f.Add([]byte(strings.Repeat(`[`, 200)))

	f.Fuzz(func(t *testing.T, data []byte) {
		// The codec alone: whatever decodes, even a state that its checks
		// then refuse, goes through the codec unchanged.
		var direct State
		if decodeStrict(data, &direct) == nil {
			roundTrip(t, &direct)
		}
		require.NoError(t, os.WriteFile(file, data, 0o644))
		st, err := r.LoadState()
		if err != nil {
			requireUntrusted(t, err, file)
			return
		}
		assertStateInside(t, st)
		roundTrip(t, st)
		assert.Equal(t, fuzzID, st.Run)
		assert.Equal(t, StateFormat, st.Format)
	})
}

func FuzzRunRecord(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "run")
	require.NoError(f, os.MkdirAll(filepath.Join(dir, StateDir), 0o755))
	file := filepath.Join(dir, StateDir, "run.json")

	good := mustEncode(f, RunRecord{Format: RunFormat, ID: fuzzID, Definition: "trial",
		Params: map[string]string{"scenario": "clean", "launch": `{"model":"small"}`}, Patches: []string{"fix-1"},
		StartedAt: "2026-01-01T00:00:00Z", Version: "v1.2.3"})
	f.Add(good)
	require.NoError(f, os.WriteFile(file, good, 0o644))
	opened, err := Open(dir)
	require.NoError(f, err, "the seed that mutations start from is a run record Open accepts")
	opened.Close()
	for _, s := range spoiled(good,
		`"definition":"trial"`, `"definition":"../trial"`,
		`"scenario":`, `"Scen Ario":`,
		`"fix-1"`, `"../fix"`,
		`"id":"`+fuzzID, `"id":"../../`,
		`"started_at":"2026-01-01T00:00:00Z"`, `"started_at":"yesterday"`,
		`"format":2`, `"format":1`,
		`"version":"v1.2.3"`, `"version":"v1\u0000"`,
	) {
		f.Add(s)
	}
	f.Add([]byte(`{}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		var direct RunRecord
		if decodeStrict(data, &direct) == nil {
			roundTrip(t, &direct)
		}
		require.NoError(t, os.WriteFile(file, data, 0o644))
		r, err := Open(dir)
		if err != nil {
			requireUntrusted(t, err, file)
			return
		}
		defer r.Close()
		rec := r.Record
		assert.Equal(t, RunFormat, rec.Format)
		assert.True(t, isHex(rec.ID, 32), "id %q", rec.ID)
		assert.True(t, names.Valid(rec.Definition), "definition %q", rec.Definition)
		assert.True(t, validTime(rec.StartedAt), "started_at %q", rec.StartedAt)
		for k := range rec.Params {
			assert.True(t, names.Valid(k), "parameter %q", k)
		}
		for _, p := range rec.Patches {
			assert.True(t, names.Valid(p), "patch %q", p)
		}
		roundTrip(t, &rec)
	})
}

func FuzzEffectJournal(f *testing.F) {
	r := fuzzRun(f)
	dir := r.abs(statePath("effects"))
	require.NoError(f, os.MkdirAll(dir, 0o755))

	good := mustEncode(f, sampleEffect())
	f.Add("publish.json", good)
	require.NoError(f, os.WriteFile(filepath.Join(dir, "publish.json"), good, 0o644))
	effects, err := r.Effects()
	require.NoError(f, err, "the seed that mutations start from is a journal the run accepts")
	require.Len(f, effects, 1)
	for _, s := range spoiled(good,
		`"name":"publish"`, `"name":"../../x"`,
		`"name":"publish"`, `"name":"other"`,
		`"run":"`+fuzzID, `"run":"ffffffffffffffffffffffffffffffff`,
		`"status":"absent"`, `"status":"done"`,
		`"path":"reconciled.md"`, `"path":"../reconciled.md"`,
		`"runs":1`, `"runs":-1`,
		`"state":"`, `"state":"z`,
	) {
		f.Add("publish.json", s)
	}
	other := sampleEffect()
	other.Name = "pub lish"
	f.Add("pub lish.json", mustEncode(f, other))
	f.Add(".publish.json.tmp-0a1b2c", []byte("half a rec"))
	f.Add("publish.md", []byte("not a journal"))

	f.Fuzz(func(t *testing.T, name string, data []byte) {
		if name == "" || name == "." || name == ".." || len(name) > 200 || strings.ContainsAny(name, "/\x00") {
			return // not a file name
		}
		var direct Effect
		if decodeStrict(data, &direct) == nil {
			roundTrip(t, &direct)
		}
		// The directory stays: the run keeps it open.
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			require.NoError(t, os.Remove(filepath.Join(dir, e.Name())))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
		effects, err := r.Effects()
		if err != nil {
			requireUntrusted(t, err, filepath.Join(dir, name))
			return
		}
		for n, e := range effects {
			assert.Equal(t, n+".json", name)
			assert.Equal(t, n, e.Name)
			assert.Equal(t, fuzzID, e.Run)
			assert.Contains(t, []string{EffectStarted, EffectCompleted, EffectAbsent}, e.Status)
			assertEffectInside(t, e, "journal")
			roundTrip(t, e)
		}
	})
}

func FuzzReports(f *testing.F) {
	r := fuzzRun(f)
	file := r.abs(statePath("reports.jsonl"))

	var good []byte
	for i, rep := range []Report{
		{Event: "repair", Job: "claims", Text: "put notes.md in place", Seq: 2, Step: 2},
		{Event: "stop", Text: "line one\n2026-01-01T00:00:00Z  step 9    outcome: done", Seq: 3, Step: 3},
	} {
		rep.Format, rep.Number, rep.At = ReportFormat, i+1, "2026-01-01T00:00:00Z"
		good = append(good, mustEncode(f, rep)...)
	}
	f.Add(good, uint8(2))
	require.NoError(f, os.WriteFile(file, good, 0o644))
	reports, err := r.Reports(2)
	require.NoError(f, err, "the seed that mutations start from is a file of reports the run accepts")
	require.Len(f, reports, 2)
	f.Add(good, uint8(1))
	f.Add(good, uint8(3))
	f.Add(good[:len(good)-1], uint8(1))
	for _, s := range spoiled(good,
		`"job":"claims"`, `"job":"../claims"`,
		`"number":2`, `"number":1`,
		`"format":2`, `"format":3`,
		`"text":"put`, `"text":"\udc00put`,
	) {
		f.Add(s, uint8(2))
	}
	f.Add([]byte{}, uint8(0))
	f.Add([]byte("\n"), uint8(0))

	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		committed := int(n % 8) // a state counts at most a few here
		require.NoError(t, os.WriteFile(file, data, 0o644))
		reports, err := r.Reports(committed)
		if err != nil {
			requireUntrusted(t, err, file)
			return
		}
		require.Len(t, reports, committed)
		for i := range reports {
			rep := &reports[i]
			assert.Equal(t, i+1, rep.Number)
			assert.Equal(t, ReportFormat, rep.Format)
			assert.True(t, rep.Job == "" || names.Valid(rep.Job), "job %q", rep.Job)
			assert.True(t, utf8.ValidString(rep.Text))
			roundTrip(t, rep)
		}
	})
}

func FuzzHistory(f *testing.F) {
	r := fuzzRun(f)
	file := r.abs(r.historyPath(1))
	require.NoError(f, os.MkdirAll(filepath.Dir(file), 0o755))

	var good []byte
	for _, e := range []Event{
		{Type: EventStep, Text: "launch", Outcome: []byte(`{"outcome":"launch","jobs":[{"name":"a","attempt":1,"prompt":".custodian/jobs/a/prompt-1.md","output":"a.md","problem":"a.problem.md","launch":{}}]}`)},
		{Type: EventHandout, Subject: "a", Attempt: 1, Path: ".custodian/jobs/a/prompt-1.md"},
		{Type: EventRefuse, Subject: "a", Attempt: 1, Kind: "validator-refused", Text: "refused", Messages: []string{"start with a heading"}},
		{Type: EventKeep, Subject: "a", Text: "a.md", Path: ".custodian/jobs/a/kept/1-a.md"},
	} {
		e.Format, e.Seq, e.At = EventFormat, 1, "2026-01-01T00:00:00Z"
		if e.Messages == nil {
			e.Messages = []string{}
		}
		if e.Outcome == nil {
			e.Outcome = []byte("null")
		}
		good = append(good, mustEncode(f, e)...)
	}
	f.Add(good)
	require.NoError(f, os.WriteFile(file, good, 0o644))
	events, err := r.HistoryOf(1)
	require.NoError(f, err, "the seed that mutations start from is a history the run accepts")
	require.Len(f, events, 4)
	for _, s := range spoiled(good,
		`"path":".custodian/jobs/a/kept/1-a.md"`, `"path":"../../victim"`,
		`"seq":1`, `"seq":2`,
		`"outcome":null`, `"outcome":{"a":[1,2e5,-0.5,"\ud800",true,null]}`,
		`"outcome":null`, `"outcome":01`,
		`"outcome":null`, `"outcome":1e999`,
		`"format":2`, `"format":1`,
	) {
		f.Add(s)
	}
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		require.NoError(t, os.WriteFile(file, data, 0o644))
		events, err := r.HistoryOf(1)
		if err != nil {
			requireUntrusted(t, err, file)
			return
		}
		for i := range events {
			e := &events[i]
			assert.Equal(t, 1, e.Seq)
			assert.Equal(t, EventFormat, e.Format)
			assert.True(t, e.Path == "" || inside(e.Path), "path %q", e.Path)
			roundTrip(t, e)
		}
	})
}

// The hash cache's seeds name the identity of the files it is asked about
// by placeholders, which the fuzz body fills in, so that the fuzzer reaches
// entries whose identity matches as well as entries that differ by a field.
const (
	phDev, phIno, phSize, phMtime, phCtime = "@DEV@", "@INO@", "@SIZE@", "@MTIME@", "@CTIME@"
	phOutside                              = "@OUT@"
)

// parseCache reads a cache's bytes into its stamp and its entries by key,
// or says they are not a cache of run: the cache as FuzzHashCache checks
// it.
func parseCache(data []byte, run string) (stamp int64, entries map[string]cacheEntry, ok bool) {
	c, ok := readCache(data, run)
	if !ok {
		return 0, nil, false
	}
	entries = make(map[string]cacheEntry, len(c.entries))
	for key, e := range c.entries {
		entries[key] = *e
	}
	return c.stamp, entries, true
}

func FuzzHashCache(f *testing.F) {
	r := fuzzRun(f)
	cacheFile := r.abs(statePath("hashes"))
	const text = "# a\n\n- b\n"
	require.NoError(f, os.WriteFile(r.abs("a.md"), []byte(text), 0o644))
	outside := filepath.Join(f.TempDir(), "outside.md")
	require.NoError(f, os.WriteFile(outside, []byte(text+"outside\n"), 0o644))
	truth := map[string]string{"a.md": sum64(text), outside: sum64(text + "outside\n")}
	info, err := r.tree.lstat("a.md")
	require.NoError(f, err)
	var st unix.Stat_t
	require.NoError(f, unix.Stat(outside, &st))
	outInfo := infoOf(&st)

	header := cacheHeader + " " + fuzzID + " 9000000000000000000\n"
	line := func(sum, key string) string {
		return sum + " " + phDev + " " + phIno + " " + phSize + " " + phMtime + " " + phCtime + " " + key + "\n"
	}
	wrong := strings.Repeat("f", 64)
	f.Add([]byte(header + line(wrong, "a.md")))
	f.Add([]byte(header + line(wrong, "a.md") + line(wrong, phOutside)))
	f.Add([]byte(header + line(sum64(text), "a.md")))
	f.Add([]byte(header + strings.Replace(line(wrong, "a.md"), phIno, "1", 1)))
	f.Add([]byte(header + strings.Replace(line(wrong, "a.md"), phMtime, "0", 1)))
	f.Add([]byte(cacheHeader + " " + fuzzID + " 0\n" + line(wrong, "a.md")))
	f.Add([]byte(cacheHeader + " ffffffffffffffffffffffffffffffff 9000000000000000000\n" + line(wrong, "a.md")))
	f.Add([]byte(header + line(wrong, "a.md")[:40]))
	f.Add([]byte(header + line(wrong, "../a.md")))
	f.Add([]byte{})

	// fill puts both files' identities in: an entry can match one of them
	// only by its key.
	fill := func(data []byte) []byte {
		return []byte(strings.NewReplacer(phOutside, outside,
			phDev, strconv.FormatUint(info.Dev, 10), phIno, strconv.FormatUint(info.Ino, 10),
			phSize, strconv.FormatInt(info.Size, 10), phMtime, strconv.FormatInt(info.Mtime, 10),
			phCtime, strconv.FormatInt(info.Ctime, 10)).Replace(string(data)))
	}
	// The seeds reach an entry the cache trusts: with the file's identity
	// and an old enough stamp, its hash is given without a read, even when
	// it is wrong. That is the cache's premise, not a fault.
	require.NoError(f, os.WriteFile(cacheFile, fill([]byte(header+line(wrong, "a.md"))), 0o644))
	c, err := r.Files().Hash("a.md", -1)
	require.NoError(f, err)
	require.Equal(f, wrong, c.SHA256, "the placeholders do not make an entry the cache trusts")

	f.Fuzz(func(t *testing.T, data []byte) {
		filled := fill(data)
		require.NoError(t, os.WriteFile(cacheFile, filled, 0o644))
		files := r.Files()
		stamp, entries, parsed := parseCache(filled, fuzzID)
		for key, real := range map[string]FileInfo{"a.md": info, outside: outInfo} {
			c, err := files.Hash(key, -1)
			require.NoError(t, err, "a damaged cache is an empty one, never an error")
			assert.Equal(t, Regular, c.Kind)
			if c.SHA256 == truth[key] {
				continue
			}
			// A hash other than the file's is the cache's, which it may give
			// only for an entry whose identity is the file's, old enough to
			// trust.
			e, has := entries[key]
			require.True(t, parsed && has, "the cache gave %s for %s, which it holds no entry for", c.SHA256, key)
			assert.Equal(t, real, e.info, "the cache gave %s for %s, whose identity differs from its entry's", c.SHA256, key)
			assert.Equal(t, e.sum, c.SHA256)
			assert.Less(t, max(real.Mtime, real.Ctime), stamp-racyWindow, "the cache gave a racy entry for %s", key)
		}
	})
}
