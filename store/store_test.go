package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newRun starts a run in a fresh directory and returns it, open.
func newRun(t *testing.T) *store.Run {
	t.Helper()
	r, err := store.Create(filepath.Join(t.TempDir(), "run"), store.RunRecord{Definition: "def", Version: "test"}, store.NewState(1))
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r
}

// locked takes r's lock for the rest of the test, as a command that writes
// records holds it.
func locked(t *testing.T, r *store.Run) {
	t.Helper()
	unlock, err := r.Lock()
	require.NoError(t, err)
	t.Cleanup(unlock)
}

// newState returns a state of r's run.
func newState(r *store.Run) *store.State {
	st := store.NewState(1)
	st.Run = r.Record.ID
	return st
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func sha(text string) string {
	s := sha256.Sum256([]byte(text))
	return hex.EncodeToString(s[:])
}

// savedState is the JSON of a state with one job, as a step saves it, in
// generic form for the tests to spoil.
func savedState(t *testing.T, r *store.Run) map[string]any {
	t.Helper()
	st := newState(r)
	st.Jobs["a"] = &store.JobState{Handouts: 1}
	locked(t, r)
	require.NoError(t, r.SaveState("state", st))
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(readFile(t, r.StatePath("state.json"))), &m))
	return m
}

func TestStateRoundTrips(t *testing.T) {
	r := newRun(t)
	st := newState(r)
	in := store.Inputs{Output: "a.md", Prompt: sha("p"), Launch: `{"model":"small"}`, Files: []store.FileHash{{Path: "source.md", SHA256: sha("s")}, {Path: "/elsewhere/x", SHA256: ""}}}
	st.Jobs["a"] = &store.JobState{
		Handouts: 2, Input: &in, Outstanding: &store.Handout{Prompt: sha("prompt file"), Launches: []string{"finished, exit 0"}, Worked: true},
		Trouble: &store.Trouble{Failures: 1, BlocksTowardLimit: 1, Blocks: 1, Messages: []string{"m\nwith \"quotes\""}, History: []string{"h"},
			Stopped: &store.Stop{Kind: "no-output", Reason: "r", Record: ".custodian/jobs/a/block-1.md", Changes: map[string]string{}}},
	}
	st.Jobs["b"] = &store.JobState{Handouts: 1, Input: &in, Accepted: sha("output")}
	st.Kept = 3
	st.Moves = []store.Move{{Source: "a.md", Target: ".custodian/jobs/a/kept/3-a.md", Identity: sha("x")}}
	locked(t, r)
	require.NoError(t, r.SaveState("state", st))

	got, err := r.LoadState()
	require.NoError(t, err)
	assert.EqualExportedValues(t, st, got)
}

func TestLoadStateOfARunWithoutSteps(t *testing.T) {
	// Create writes the state it is given as the run's first state.
	initial := store.NewState(7)
	r, err := store.Create(filepath.Join(t.TempDir(), "run"), store.RunRecord{Definition: "def", Version: "test"}, initial)
	require.NoError(t, err)
	defer r.Close()
	st, err := r.LoadState()
	require.NoError(t, err)
	want := store.NewState(7)
	want.Run = r.Record.ID
	assert.Equal(t, want, st, "no step has committed, so the state is the initial one")
}

func TestLoadStateOfARunWhoseStateWasRemovedIsUntrusted(t *testing.T) {
	for name, journaled := range map[string]bool{"no effect journaled": false, "an effect journaled": true} {
		t.Run(name, func(t *testing.T) {
			r := newRun(t)
			if journaled {
				writeFile(t, r.StatePath("effects", "publish.json"), "{}")
			}
			require.NoError(t, os.Remove(r.StatePath("state.json")))

			// Every run has a state from its start: a missing one was lost,
			// and is never taken for a run on which no step has committed.
			st, err := r.LoadState()
			assert.ErrorIs(t, err, store.ErrUntrusted)
			assert.Nil(t, st)
			var rec *store.RecordError
			if assert.ErrorAs(t, err, &rec) {
				assert.Equal(t, r.StatePath("state.json"), rec.Path)
			}
		})
	}
}

// Strict decoding: encoding/json alone would read a missing field as zero,
// an unknown one as nothing, which for a record means inventing state.
func TestStateDecodingIsStrict(t *testing.T) {
	job := func(m map[string]any) map[string]any { return m["jobs"].(map[string]any)["a"].(map[string]any) }
	cases := []struct {
		name  string
		spoil func(m map[string]any) string // returns the bytes to store; "" to marshal m
	}{
		{"missing top-level field", func(m map[string]any) string { delete(m, "moves"); return "" }},
		{"missing job field", func(m map[string]any) string { delete(job(m), "trouble"); return "" }},
		{"missing nested workflow field", func(m map[string]any) string {
			delete(m["workflow"].(map[string]any), "places")
			return ""
		}},
		{"unknown top-level field", func(m map[string]any) string { m["repairs"] = 1; return "" }},
		{"unknown job field", func(m map[string]any) string { job(m)["repairs"] = 1; return "" }},
		{"another format", func(m map[string]any) string { m["format"] = store.StateFormat + 1; return "" }},
		{"another run", func(m map[string]any) string { m["run"] = strings.Repeat("0", 32); return "" }},
		{"a job whose name is a path", func(m map[string]any) string {
			m["jobs"].(map[string]any)["../a"] = job(m)
			return ""
		}},
		{"a move out of the run", func(m map[string]any) string {
			m["moves"] = []any{map[string]any{"source": "../victim.txt", "target": ".custodian/jobs/a/kept/1-victim.txt", "identity": "x"}}
			return ""
		}},
		{"a move into the run", func(m map[string]any) string {
			m["moves"] = []any{map[string]any{"source": "a.md", "target": "b.md", "identity": "x"}}
			return ""
		}},
		{"a field given twice", func(m map[string]any) string {
			b, _ := json.Marshal(m)
			return strings.Replace(string(b), `"kept":0`, `"kept":0,"kept":1`, 1)
		}},
		{"format zero", func(m map[string]any) string { m["format"] = 0; return "" }},
		{"format as a string", func(m map[string]any) string { m["format"] = "2"; return "" }},
		{"a count as a string", func(m map[string]any) string { job(m)["handouts"] = "1"; return "" }},
		{"a count as a bool", func(m map[string]any) string { job(m)["handouts"] = true; return "" }},
		{"a count that is null", func(m map[string]any) string { job(m)["handouts"] = nil; return "" }},
		{"a fractional count", func(m map[string]any) string { job(m)["handouts"] = 1.5; return "" }},
		{"a job record that is null", func(m map[string]any) string { m["jobs"].(map[string]any)["a"] = nil; return "" }},
		{"jobs as a list", func(m map[string]any) string { m["jobs"] = []any{}; return "" }},
		{"trailing data", func(m map[string]any) string {
			b, _ := json.Marshal(m)
			return string(b) + "\n{}"
		}},
		{"trailing garbage", func(m map[string]any) string {
			b, _ := json.Marshal(m)
			return string(b) + " x"
		}},
		{"not JSON", func(m map[string]any) string { return "format = 1\n" }},
		{"empty", func(m map[string]any) string { return " " }},
		{"a list", func(m map[string]any) string { return "[]" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun(t)
			m := savedState(t, r)
			m["run"] = r.Record.ID
			data := tc.spoil(m)
			if data == "" {
				b, err := json.Marshal(m)
				require.NoError(t, err)
				data = string(b)
			}
			writeFile(t, r.StatePath("state.json"), data)

			st, err := r.LoadState()
			assert.ErrorIs(t, err, store.ErrUntrusted)
			assert.Nil(t, st)
			var rec *store.RecordError
			if assert.ErrorAs(t, err, &rec) {
				assert.Equal(t, r.StatePath("state.json"), rec.Path)
			}
		})
	}
}

func TestUnspoiledStateLoads(t *testing.T) {
	// The control for the table above: the same bytes, unspoiled, are trusted.
	r := newRun(t)
	m := savedState(t, r)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	writeFile(t, r.StatePath("state.json"), string(b))
	st, err := r.LoadState()
	require.NoError(t, err)
	assert.Equal(t, 1, st.Jobs["a"].Handouts)
}

const (
	runID   = "0123456789abcdef0123456789abcdef"
	goodRun = `{"format":2,"id":"` + runID + `","definition":"def","params":{"k":"v"},"patches":[],"started_at":"2026-01-01T00:00:00Z","version":"v"}`
)

func TestRunRecordDecodingIsStrict(t *testing.T) {
	cases := []struct {
		name string
		data string
		want error
	}{
		{"missing field", `{"format":2,"id":"` + runID + `","definition":"def","params":{},"patches":[],"started_at":"2026-01-01T00:00:00Z"}`, store.ErrUntrusted},
		{"unknown field", strings.Replace(goodRun, `"version"`, `"extra":1,"version"`, 1), store.ErrUntrusted},
		{"another format", strings.Replace(goodRun, `"format":2`, `"format":3`, 1), store.ErrUntrusted},
		{"params not strings", strings.Replace(goodRun, `"params":{"k":"v"}`, `"params":{"n":1}`, 1), store.ErrUntrusted},
		{"a parameter that is not a name", strings.Replace(goodRun, `"params":{"k":"v"}`, `"params":{"../k":"v"}`, 1), store.ErrUntrusted},
		{"trailing data", goodRun + " {}", store.ErrUntrusted},
		{"no definition", strings.Replace(goodRun, `"definition":"def"`, `"definition":""`, 1), store.ErrUntrusted},
		{"a definition that is a path", strings.Replace(goodRun, `"definition":"def"`, `"definition":"../def"`, 1), store.ErrUntrusted},
		{"an id that is no id", strings.Replace(goodRun, runID, "x", 1), store.ErrUntrusted},
		{"not a time", strings.Replace(goodRun, `2026-01-01T00:00:00Z`, `yesterday`, 1), store.ErrUntrusted},
		{"not JSON", `definition: def`, store.ErrUntrusted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun(t)
			writeFile(t, r.StatePath("run.json"), tc.data)
			_, err := store.Open(r.Dir)
			assert.ErrorIs(t, err, tc.want)
		})
	}

	t.Run("control", func(t *testing.T) {
		r := newRun(t)
		writeFile(t, r.StatePath("run.json"), goodRun)
		got, err := store.Open(r.Dir)
		require.NoError(t, err)
		defer got.Close()
		assert.Equal(t, map[string]string{"k": "v"}, got.Record.Params)
	})
}

func TestOpenAndCreate(t *testing.T) {
	dir := t.TempDir()
	_, err := store.Open(dir)
	assert.ErrorIs(t, err, store.ErrNotRun)

	r, err := store.Create(dir, store.RunRecord{Definition: "def", Params: map[string]string{"a": "b"}, Version: "v"}, store.NewState(1))
	require.NoError(t, err)
	defer r.Close()
	opened, err := store.Open(dir)
	require.NoError(t, err)
	defer opened.Close()
	assert.Equal(t, r.Record, opened.Record)
	assert.Equal(t, store.RunFormat, opened.Record.Format)

	_, err = store.Create(dir, store.RunRecord{Definition: "other"}, store.NewState(2))
	assert.ErrorIs(t, err, store.ErrExists)
	again, err := store.Open(dir)
	require.NoError(t, err)
	defer again.Close()
	assert.Equal(t, "def", again.Record.Definition, "a refused start changed run.json")
	st, err := again.LoadState()
	require.NoError(t, err)
	want := store.NewState(1)
	want.Run = r.Record.ID
	assert.Equal(t, want, st, "a refused start changed state.json")
}

func TestReportsAreNumberedInOrder(t *testing.T) {
	r := newRun(t)
	reports, err := r.Reports(0)
	require.NoError(t, err)
	assert.Empty(t, reports)

	locked(t, r)
	for i, event := range []string{"launch-failed", "repair", "stop"} {
		rep, err := r.WriteReport(i, store.Report{Event: event, Job: "a", Text: "t", At: "now", Number: 99})
		require.NoError(t, err)
		assert.Equal(t, i+1, rep.Number, "the store numbers reports, not the caller")
		assert.Equal(t, store.ReportFormat, rep.Format)
	}
	reports, err = r.Reports(3)
	require.NoError(t, err)
	require.Len(t, reports, 3)
	for i, rep := range reports {
		assert.Equal(t, i+1, rep.Number)
	}
	assert.Equal(t, []string{"launch-failed", "repair", "stop"},
		[]string{reports[0].Event, reports[1].Event, reports[2].Event})
}

func TestReportsDecodingIsStrict(t *testing.T) {
	good := `{"format":2,"number":1,"event":"repair","job":"","text":"t","at":"now","seq":0,"step":0}`
	second := strings.Replace(good, `"number":1`, `"number":2`, 1)
	cases := map[string]struct {
		data      string
		committed int
	}{
		"numbering gap":        {good + "\n" + strings.Replace(good, `"number":1`, `"number":3`, 1) + "\n", 2},
		"numbering restart":    {good + "\n" + good + "\n", 2},
		"unknown field":        {strings.Replace(good, `{`, `{"x":1,`, 1) + "\n", 1},
		"missing field":        {strings.Replace(good, `"job":"",`, ``, 1) + "\n", 1},
		"another format":       {strings.Replace(good, `"format":2`, `"format":3`, 1) + "\n", 1},
		"incomplete line":      {good, 1},
		"not JSON":             {"repair\n", 1},
		"two values a line":    {good + " " + good + "\n", 1},
		"a job that is a path": {strings.Replace(good, `"job":""`, `"job":"../x"`, 1) + "\n", 1},
		"cut at a line":        {good + "\n", 2},
		"missing":              {"", 1},
		"a report not UTF-8":   {strings.Replace(good, `"text":"t"`, "\"text\":\"\xff\"", 1) + "\n", 1},
		"the second one cut":   {good + "\n" + second[:20], 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRun(t)
			if tc.data != "" {
				writeFile(t, r.StatePath("reports.jsonl"), tc.data)
			}
			_, err := r.Reports(tc.committed)
			assert.ErrorIs(t, err, store.ErrUntrusted)
			locked(t, r)
			_, err = r.WriteReport(tc.committed, store.Report{Event: "stop", At: "now"})
			assert.ErrorIs(t, err, store.ErrUntrusted, "a report was appended to untrusted reports")
		})
	}

	// A line past the committed ones is not read: a report that ended
	// before its commit left it, and the next report replaces it.
	r := newRun(t)
	writeFile(t, r.StatePath("reports.jsonl"), good+"\n"+second+"\n")
	reports, err := r.Reports(1)
	require.NoError(t, err)
	assert.Len(t, reports, 1)
	locked(t, r)
	rep, err := r.WriteReport(1, store.Report{Event: "stop", At: "now"})
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Number)
	reports, err = r.Reports(2)
	require.NoError(t, err)
	assert.Equal(t, "stop", reports[1].Event)
}

func TestPerformMovesAndSkips(t *testing.T) {
	cases := []struct {
		name        string
		source      string // "" for no source file
		target      string // "" for no target file
		planned     string // the bytes the move was planned for
		wantSource  string // "" for gone
		wantTarget  string // "" for absent
		description string
	}{
		{"moves a planned file", "refused\n", "", "refused\n", "", "refused\n",
			"the source is moved to the target"},
		{"an existing target is the receipt", "same bytes\n", "same bytes\n", "same bytes\n", "same bytes\n", "same bytes\n",
			"a new file with the moved bytes stays where it is"},
		{"an existing target is never overwritten", "new\n", "kept\n", "new\n", "new\n", "kept\n",
			"the kept copy is never replaced"},
		{"a source with other bytes is not moved", "a new output\n", "", "refused\n", "a new output\n", "",
			"a file that came later stays where it is"},
		{"a missing source is skipped", "", "", "refused\n", "", "",
			"nothing to move is no error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun(t)
			source := filepath.Join(r.Dir, "a.md")
			target := r.StatePath("jobs", "a", "kept", "1-a.md")
			if tc.source != "" {
				writeFile(t, source, tc.source)
			}
			if tc.target != "" {
				writeFile(t, target, tc.target)
			}

			locked(t, r)
			err := r.Perform([]store.Move{{Source: "a.md", Target: ".custodian/jobs/a/kept/1-a.md", Identity: sha(tc.planned)}})
			require.NoError(t, err)
			assertContent(t, source, tc.wantSource, tc.description)
			assertContent(t, target, tc.wantTarget, tc.description)
		})
	}
}

func TestPerformCarriesOutEveryMoveInOrder(t *testing.T) {
	r := newRun(t)
	writeFile(t, filepath.Join(r.Dir, "sub", "x.problem.md"), "problem\n")
	writeFile(t, filepath.Join(r.Dir, "sub", "x.md"), "output\n")
	moves := []store.Move{
		{Source: "sub/x.problem.md", Target: ".custodian/jobs/x/kept/1-x.problem.md", Identity: sha("problem\n")},
		{Source: "sub/x.md", Target: ".custodian/jobs/x/kept/2-x.md", Identity: sha("output\n")},
	}
	locked(t, r)
	require.NoError(t, r.Perform(moves))
	assertContent(t, r.StatePath("jobs", "x", "kept", "1-x.problem.md"), "problem\n", "")
	assertContent(t, r.StatePath("jobs", "x", "kept", "2-x.md"), "output\n", "")

	// Performing the same list again, as recovery would, changes nothing.
	writeFile(t, filepath.Join(r.Dir, "sub", "x.md"), "output\n")
	require.NoError(t, r.Perform(moves))
	assertContent(t, filepath.Join(r.Dir, "sub", "x.md"), "output\n", "a later file with the same bytes was moved")
}

func assertContent(t *testing.T, path, want, msg string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if want == "" {
		assert.True(t, os.IsNotExist(err), "%s: %s exists; %s", path, b, msg)
		return
	}
	if assert.NoError(t, err, msg) {
		assert.Equal(t, want, string(b), msg)
	}
}

func TestFiles_Hash(t *testing.T) {
	r := newRun(t)
	writeFile(t, filepath.Join(r.Dir, "f"), "bytes")
	writeFile(t, filepath.Join(r.Dir, "big"), strings.Repeat("x", 100))
	require.NoError(t, os.Mkdir(filepath.Join(r.Dir, "dir"), 0o755))
	require.NoError(t, os.Symlink("f", filepath.Join(r.Dir, "link")))
	outside := filepath.Join(t.TempDir(), "outside")
	writeFile(t, outside, "outside bytes")
	cases := map[string]store.Content{
		"f":           {Kind: store.Regular, Size: 5, SHA256: sha("bytes")},
		"missing":     {},
		"dir":         {Kind: store.Directory},
		"link":        {Kind: store.Link},
		"f/under-one": {},
		"big":         {Kind: store.Regular, Size: 100, Over: true},
		outside:       {Kind: store.Regular, Size: 13, SHA256: sha("outside bytes")},
	}
	files := r.Files()
	for key, want := range cases {
		got, err := files.Hash(key, 50)
		require.NoError(t, err, key)
		assert.Equal(t, want, got, key)
	}
}

// flock locks belong to an open file description, so a second Open in the
// same process conflicts just as another process would.
func TestLockIsExclusive(t *testing.T) {
	r := newRun(t)
	other, err := store.Open(r.Dir)
	require.NoError(t, err)
	defer other.Close()

	unlock, err := r.Lock()
	require.NoError(t, err)
	_, err = other.Lock()
	assert.ErrorIs(t, err, store.ErrBusy)

	unlock()
	unlockOther, err := other.Lock()
	require.NoError(t, err, "the lock was not released")
	_, err = r.Lock()
	assert.ErrorIs(t, err, store.ErrBusy)
	unlockOther()
	assert.FileExists(t, r.StatePath("lock"), "the lock file is never deleted")
}

func TestWriteRecordReplacesWhole(t *testing.T) {
	r := newRun(t)
	locked(t, r)
	require.NoError(t, r.WriteText("block", store.JobBlockPath("a", 1), []byte("first, and longer\n")))
	require.NoError(t, r.WriteText("block", store.JobBlockPath("a", 1), []byte("second\n")))
	assert.Equal(t, "second\n", readFile(t, r.StatePath("jobs", "a", "block-1.md")))
	entries, err := os.ReadDir(r.StatePath("jobs", "a"))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "a temporary file was left beside the record")

	// Records are the engine's: none is written outside the state directory.
	require.Error(t, r.WriteText("block", "a.md", []byte("x\n")))
	assert.NoFileExists(t, filepath.Join(r.Dir, "a.md"))
}

// A record of another format says so, whatever else differs in it, so that
// the operator learns which custodian reads the run rather than which field
// this one lacks.
func TestARecordOfAnotherFormatSaysSo(t *testing.T) {
	r := newRun(t)
	writeFile(t, r.StatePath("state.json"), `{"format":1,"a field of format 1":true}`)

	_, err := r.LoadState()
	require.ErrorIs(t, err, store.ErrUntrusted)
	assert.Contains(t, err.Error(), fmt.Sprintf("it has format 1; this custodian reads format %d", store.StateFormat))
}

// A state of an older format is read with what the custodian that wrote
// it knew: format 2 nothing looked at, formats 2 and 3 no launches of a
// hand-out and no hand-out spared. One that has a field its format lacks
// is no state of that format, and is refused.
func TestAStateOfAnOlderFormatIsRead(t *testing.T) {
	r := newRun(t)
	locked(t, r)
	st := store.NewState(1)
	st.Run = r.Record.ID
	st.Steps = 3
	in := &store.Inputs{Output: "a.md", Prompt: sha("p"), Launch: "{}", Files: []store.FileHash{}}
	st.Jobs["a"] = &store.JobState{Handouts: 2, Input: in, Outstanding: &store.Handout{Prompt: sha("prompt"), Launches: []string{}},
		Trouble: &store.Trouble{Failures: 1, Messages: []string{}, History: []string{}}}
	require.NoError(t, r.SaveState("state", st))
	now := readFile(t, r.StatePath("state.json"))
	current := fmt.Sprintf(`"format":%d`, store.StateFormat)
	format5 := `,"build":{"id":"","revision":"","modified":false},"checked":{"id":"","revision":"","modified":false},"last":"","questions":{},"decisions":{}`
	for _, drop := range []string{`"looked":{},`, `,"launches":[],"worked":false,"spare":""`, `,"spared":0`, format5} {
		require.Contains(t, now, drop)
	}
	format4 := strings.NewReplacer(current, `"format":4`, format5, "").Replace(now)
	format3 := strings.NewReplacer(`"format":4`, `"format":3`, `,"launches":[],"worked":false,"spare":""`, "", `,"spared":0`, "").Replace(format4)
	format2 := strings.Replace(format3, `"format":3`, `"format":2`, 1)
	format2 = strings.Replace(format2, `"looked":{},`, "", 1)

	for _, old := range []string{format2, format3, format4} {
		writeFile(t, r.StatePath("state.json"), old)
		got, err := r.LoadState()
		require.NoError(t, err, old)
		assert.Equal(t, store.StateFormat, got.Format)
		assert.Equal(t, 3, got.Steps)
		assert.Empty(t, got.Looked)
		a := got.Jobs["a"]
		require.NotNil(t, a.Outstanding)
		assert.Empty(t, a.Outstanding.Launches)
		assert.False(t, a.Outstanding.Worked)
		assert.Empty(t, a.Outstanding.Spare)
		assert.Zero(t, a.Trouble.Spared)
		assert.Equal(t, 1, a.Trouble.Failures)
		assert.Zero(t, got.Build)
		assert.Empty(t, got.Last)
	}

	for name, bad := range map[string]string{
		"format 2 with looked":   strings.Replace(now, current, `"format":2`, 1),
		"format 3 with launches": strings.Replace(now, current, `"format":3`, 1),
		"format 3 given twice":   strings.Replace(format3, `"steps":3`, `"steps":3,"steps":4`, 1),
		"format 4 with a build":  strings.Replace(now, current, `"format":4`, 1),
	} {
		writeFile(t, r.StatePath("state.json"), bad)
		_, err := r.LoadState()
		assert.ErrorIs(t, err, store.ErrUntrusted, name)
	}
}

// Launches lists the launch directories kept for a job, by number, and
// nothing else that lies beside them.
func TestLaunches(t *testing.T) {
	r := newRun(t)
	got, err := r.Launches("a")
	require.NoError(t, err)
	assert.Empty(t, got, "a job with no directory has no launches")

	for _, name := range []string{"launch-2", "launch-10", "launch-1", "launch-01", "launch-0", "launch-x", "prompt-1.md", "kept"} {
		require.NoError(t, os.MkdirAll(filepath.Join(r.Dir, ".custodian", "jobs", "a", name), 0o755))
	}
	got, err = r.Launches("a")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 10}, got)
	next, err := r.NextLaunch("a")
	require.NoError(t, err)
	assert.Equal(t, 11, next)

	_, err = r.Launches("not a name")
	assert.Error(t, err)
}

// A launch record is held to the run, job and launch it is kept for: one
// copied from elsewhere cannot be trusted.
func TestLoadLaunchChecksWhoseRecordItIs(t *testing.T) {
	r := newRun(t)
	locked(t, r)
	_, err := r.SaveLaunch(&store.Launch{Job: "a", Attempt: 1, Launch: 1, Outcome: "finished"}, []byte("out"), nil)
	require.NoError(t, err)
	l, err := r.LoadLaunch("a", 1)
	require.NoError(t, err)
	assert.Equal(t, "finished", l.Outcome)

	record := filepath.Join(r.Dir, ".custodian", "jobs", "a", "launch-1", "launch.json")
	good := readFile(t, record)
	for _, tt := range []struct{ name, from, to, says string }{
		{"another run", `"run":"` + r.Record.ID + `"`, `"run":"` + strings.Repeat("0", 32) + `"`, "belongs to run"},
		{"another job", `"job":"a"`, `"job":"b"`, "job b"},
		{"another launch", `"launch":1`, `"launch":2`, "launch 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Contains(t, good, tt.from)
			writeFile(t, record, strings.Replace(good, tt.from, tt.to, 1))
			_, err := r.LoadLaunch("a", 1)
			require.ErrorIs(t, err, store.ErrUntrusted)
			assert.Contains(t, err.Error(), tt.says)
		})
	}
}
