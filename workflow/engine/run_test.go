package engine_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// editJSON rewrites the JSON record at rel through edit, as a person or a
// program of another version might have left it.
func editJSON(t *testing.T, h *harness, rel string, edit func(m map[string]any)) {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(h.read(rel)), &m))
	edit(m)
	data, err := json.Marshal(m)
	require.NoError(t, err)
	h.write(rel, string(data))
}

// replaceWithDir puts a directory where a record file belongs, which makes
// it unreadable even to a process that may read anything.
func replaceWithDir(t *testing.T, h *harness, rel string) {
	t.Helper()
	require.NoError(t, os.Remove(h.path(rel)))
	require.NoError(t, os.MkdirAll(h.path(rel), 0o755))
}

// stoppedRun is a run whose job a is stopped and has a report, so that
// Step, Report and Release each have something they would do on good records.
func stoppedRun(t *testing.T) *harness {
	t.Helper()
	h := startRun(t, oneJob(job("a")), source)
	for range 6 {
		h.step()
	}
	require.NotNil(t, stopped(h.state().Jobs["a"]))
	_, err := h.o.Report("stop", "a", "stopped at the block")
	require.NoError(t, err)
	return h
}

// A record that cannot be trusted must stop every command: reading it as an
// ordinary state would invent or forget acceptances.
func TestUntrustedRecordsAreRefusedByEveryCommand(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(t *testing.T, h *harness)
	}{
		{"state.json is not JSON", func(t *testing.T, h *harness) { h.write(".custodian/state.json", "{not json") }},
		{"state.json is empty", func(t *testing.T, h *harness) { h.write(".custodian/state.json", "") }},
		{"state.json is truncated", func(t *testing.T, h *harness) {
			s := h.read(".custodian/state.json")
			h.write(".custodian/state.json", s[:len(s)/2])
		}},
		{"state.json has trailing data", func(t *testing.T, h *harness) {
			h.write(".custodian/state.json", h.read(".custodian/state.json")+"{}\n")
		}},
		{"state.json has another format", func(t *testing.T, h *harness) {
			editJSON(t, h, ".custodian/state.json", func(m map[string]any) { m["format"] = 99 })
		}},
		{"state.json has another input-state version", func(t *testing.T, h *harness) {
			editJSON(t, h, ".custodian/state.json", func(m map[string]any) { m["input_state"] = 2 })
		}},
		{"state.json has an unknown field", func(t *testing.T, h *harness) {
			editJSON(t, h, ".custodian/state.json", func(m map[string]any) { m["repairs"] = 0 })
		}},
		{"state.json lacks a field", func(t *testing.T, h *harness) {
			editJSON(t, h, ".custodian/state.json", func(m map[string]any) { delete(m, "kept") })
		}},
		{"a job record lacks a field", func(t *testing.T, h *harness) {
			editJSON(t, h, ".custodian/state.json", func(m map[string]any) {
				delete(m["jobs"].(map[string]any)["a"].(map[string]any), "handouts")
			})
		}},
		{"a job record is null", func(t *testing.T, h *harness) {
			editJSON(t, h, ".custodian/state.json", func(m map[string]any) { m["jobs"].(map[string]any)["a"] = nil })
		}},
		{"a count has the wrong type", func(t *testing.T, h *harness) {
			editJSON(t, h, ".custodian/state.json", func(m map[string]any) {
				m["jobs"].(map[string]any)["a"].(map[string]any)["handouts"] = "four"
			})
		}},
		{"state.json is unreadable", func(t *testing.T, h *harness) { replaceWithDir(t, h, ".custodian/state.json") }},
		// A run has a state from its start: a missing one was lost, and
		// reading it as a new run would forget the stop and every record.
		{"state.json is missing", func(t *testing.T, h *harness) { h.remove(".custodian/state.json") }},
		{"reports.jsonl is not JSON", func(t *testing.T, h *harness) { h.write(".custodian/reports.jsonl", "garbage\n") }},
		{"reports.jsonl has another format", func(t *testing.T, h *harness) {
			h.write(".custodian/reports.jsonl", strings.Replace(h.read(".custodian/reports.jsonl"), `"format":2`, `"format":3`, 1))
		}},
		{"reports.jsonl has an unknown field", func(t *testing.T, h *harness) {
			h.write(".custodian/reports.jsonl", strings.Replace(h.read(".custodian/reports.jsonl"), `{`, `{"extra":1,`, 1))
		}},
		{"reports.jsonl lacks a field", func(t *testing.T, h *harness) {
			h.write(".custodian/reports.jsonl", strings.Replace(h.read(".custodian/reports.jsonl"), `"job":"a",`, ``, 1))
		}},
		{"reports.jsonl numbers a report wrongly", func(t *testing.T, h *harness) {
			h.write(".custodian/reports.jsonl", strings.Replace(h.read(".custodian/reports.jsonl"), `"number":1`, `"number":2`, 1))
		}},
		{"reports.jsonl ends in an incomplete line", func(t *testing.T, h *harness) {
			h.write(".custodian/reports.jsonl", strings.TrimSuffix(h.read(".custodian/reports.jsonl"), "\n"))
		}},
		{"reports.jsonl is unreadable", func(t *testing.T, h *harness) { replaceWithDir(t, h, ".custodian/reports.jsonl") }},
	}
	for _, tc := range cases {
		for _, cmd := range everyCommand {
			t.Run(tc.name+"/"+cmd.name, func(t *testing.T) {
				h := stoppedRun(t)
				tc.corrupt(t, h)
				requireRefusedUntrusted(t, h, cmd.run)
			})
		}
	}
}

// everyCommand is every command of the engine on a run, read-only ones too.
var everyCommand = []struct {
	name string
	run  func(o *engine.Run) error
}{
	{"step", func(o *engine.Run) error { _, err := o.Step(); return err }},
	{"report", func(o *engine.Run) error { _, err := o.Report("repair", "a", "repaired"); return err }},
	{"release", func(o *engine.Run) error { return o.Release("a") }},
	{"status", func(o *engine.Run) error { _, err := o.Status(); return err }},
	{"log", func(o *engine.Run) error { _, err := o.Log(); return err }},
}

// requireRefusedUntrusted runs a command on h's run, whose records cannot be
// trusted, and requires that it refuses and changes nothing.
func requireRefusedUntrusted(t *testing.T, h *harness, run func(o *engine.Run) error) {
	t.Helper()
	before := snapshot(t, h)
	o, err := engine.Open(h.reg, h.dir)
	if err != nil {
		// Refusing at Open is as good as refusing at the command.
		assert.ErrorIs(t, err, store.ErrUntrusted)
		return
	}
	assert.ErrorIs(t, run(o), store.ErrUntrusted)
	assert.Equal(t, before, snapshot(t, h), "a command on untrusted records changed them")
}

// Start writes the run's first state; a run on which no step has committed
// has it, and without it no command may take the run for a new one.
func TestAStartedRunWhoseStateIsMissingIsRefusedByEveryCommand(t *testing.T) {
	for _, cmd := range everyCommand {
		t.Run(cmd.name, func(t *testing.T) {
			h := startRun(t, oneJob(job("a")), source)
			want := store.NewState(engine.InputStateVersion)
			want.Run = h.state().Run
			assert.Equal(t, want, h.state(), "start writes the initial state")
			h.remove(".custodian/state.json")

			requireRefusedUntrusted(t, h, cmd.run)
			assert.NoFileExists(t, h.path(".custodian/state.json"), "a command took the run for a new one")
		})
	}
}

func TestOpen_untrustedRunRecord(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(t *testing.T, h *harness)
		want    error
	}{
		{"run.json is missing", func(t *testing.T, h *harness) { h.remove(".custodian/run.json") }, store.ErrNotRun},
		{"run.json is not JSON", func(t *testing.T, h *harness) { h.write(".custodian/run.json", "definition: one\n") }, store.ErrUntrusted},
		{"run.json has another format", func(t *testing.T, h *harness) {
			editJSON(t, h, ".custodian/run.json", func(m map[string]any) { m["format"] = store.RunFormat + 1 })
		}, store.ErrUntrusted},
		{"run.json has an unknown field", func(t *testing.T, h *harness) {
			editJSON(t, h, ".custodian/run.json", func(m map[string]any) { m["class"] = "x" })
		}, store.ErrUntrusted},
		{"run.json lacks its parameters", func(t *testing.T, h *harness) {
			editJSON(t, h, ".custodian/run.json", func(m map[string]any) { delete(m, "params") })
		}, store.ErrUntrusted},
		{"run.json names no definition", func(t *testing.T, h *harness) {
			editJSON(t, h, ".custodian/run.json", func(m map[string]any) { m["definition"] = "" })
		}, store.ErrUntrusted},
		{"run.json has trailing data", func(t *testing.T, h *harness) {
			h.write(".custodian/run.json", h.read(".custodian/run.json")+"x")
		}, store.ErrUntrusted},
		{"run.json is unreadable", func(t *testing.T, h *harness) { replaceWithDir(t, h, ".custodian/run.json") }, store.ErrUntrusted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := stoppedRun(t)
			tc.corrupt(t, h)
			before := snapshot(t, h)

			_, err := engine.Open(h.reg, h.dir)
			assert.ErrorIs(t, err, tc.want)
			assert.Equal(t, before, snapshot(t, h))
		})
	}
}

func TestOpen_notARun(t *testing.T) {
	reg, err := workflow.NewRegistry(oneJob(job("a")))
	require.NoError(t, err)
	dir := t.TempDir()

	_, err = engine.Open(reg, dir)
	assert.ErrorIs(t, err, store.ErrNotRun)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "opening a directory that is no run wrote into it")
}

// snapshot is every record file's bytes, by path under .custodian/.
func snapshot(t *testing.T, h *harness) map[string]string {
	t.Helper()
	files := map[string]string{}
	root := h.path(".custodian")
	require.NoError(t, walkFiles(root, func(rel string, data []byte) { files[rel] = string(data) }))
	return files
}

func walkFiles(root string, fn func(rel string, data []byte)) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(root, e.Name())
		if e.IsDir() {
			if err := walkFiles(p, func(rel string, data []byte) { fn(e.Name()+"/"+rel, data) }); err != nil {
				return err
			}
			continue
		}
		if e.Name() == "lock" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fn(e.Name(), data)
	}
	return nil
}
