package workflow_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/require"
)

// effectRun is one run in a temporary directory. Every step opens the run
// afresh, as a new `custodian step` process would, so nothing carries over
// between steps but the records on disk.
type effectRun struct {
	t   *testing.T
	reg *workflow.Registry
	dir string // the run directory, absolute
}

// effectStart writes files (run-relative path → content) into a new run
// directory and starts a run of the definition name there. The run is a
// child of the test's temporary directory, so that <run>.outside, the world
// the effects change, is a sibling of it.
func effectStart(t *testing.T, reg *workflow.Registry, name string, params workflow.Params, files map[string]string) *effectRun {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	for rel, text := range files {
		effectWriteFile(t, filepath.Join(dir, filepath.FromSlash(rel)), text)
	}
	o, err := workflow.Start(reg, name, dir, params)
	require.NoError(t, err)
	return &effectRun{t: t, reg: reg, dir: o.Dir()}
}

// effectStartDef starts a run of a definition built by the test itself.
func effectStartDef(t *testing.T, def *workflow.Definition, files map[string]string) *effectRun {
	t.Helper()
	reg, err := workflow.NewRegistry(def)
	require.NoError(t, err)
	return effectStart(t, reg, def.Name, nil, files)
}

// effectSource is the input most runs start with.
var effectSource = map[string]string{"source.md": "the source text\n"}

func (r *effectRun) open() *workflow.Orchestrator {
	r.t.Helper()
	o, err := workflow.Open(r.reg, r.dir)
	require.NoError(r.t, err)
	return o
}

// step runs one step in this process; it must not fail.
func (r *effectRun) step() workflow.Outcome {
	r.t.Helper()
	out, err := r.open().Step()
	require.NoError(r.t, err)
	return out
}

// stepErr runs one step and returns its error.
func (r *effectRun) stepErr() error {
	r.t.Helper()
	_, err := r.open().Step()
	return err
}

// expect runs one step whose outcome must be kind.
func (r *effectRun) expect(kind workflow.Kind) workflow.Outcome {
	r.t.Helper()
	out := r.step()
	require.Equal(r.t, kind, out.Kind, "outcome: %+v", out)
	return out
}

// launch runs one step that must hand out exactly the jobs named, and plays
// their workers unless told not to: each writes a heading to its output.
func (r *effectRun) launch(work bool, names ...string) workflow.Outcome {
	r.t.Helper()
	out := r.expect(workflow.KindLaunch)
	got := []string{}
	for _, j := range out.Jobs {
		got = append(got, j.Name)
	}
	require.Equal(r.t, names, got)
	if work {
		for _, j := range out.Jobs {
			effectWriteFile(r.t, j.Output, "# "+j.Name+"\n")
		}
	}
	return out
}

// blocked runs one step that must block, and returns its blocks by subject.
func (r *effectRun) blocked() map[string]workflow.Block {
	r.t.Helper()
	out := r.expect(workflow.KindBlocked)
	require.Empty(r.t, out.Jobs, "a blocked step hands nothing out")
	return effectBlocksBySubject(r.t, out.Blocks)
}

func (r *effectRun) resolve(name string, what workflow.Recognition) error {
	r.t.Helper()
	return r.open().Resolve(name, what)
}

func (r *effectRun) path(rel string) string { return filepath.Join(r.dir, filepath.FromSlash(rel)) }

func (r *effectRun) write(rel, text string) {
	r.t.Helper()
	effectWriteFile(r.t, r.path(rel), text)
}

func (r *effectRun) read(rel string) string {
	r.t.Helper()
	b, err := os.ReadFile(r.path(rel))
	require.NoError(r.t, err)
	return string(b)
}

// bytesOf returns a file's bytes, or nil when there is none.
func (r *effectRun) bytesOf(rel string) []byte {
	r.t.Helper()
	b, err := os.ReadFile(r.path(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(r.t, err)
	return b
}

// state returns state.json's bytes.
func (r *effectRun) state() []byte {
	r.t.Helper()
	b := r.bytesOf(".custodian/state.json")
	require.NotNil(r.t, b, "state.json is missing; a run has one from its start")
	return b
}

// countedState returns state.json without the history's bookkeeping (the
// step count, the history sequence and the effects it has recorded): what
// an uncertain step must leave alone, since it commits only its history.
func (r *effectRun) countedState() string {
	r.t.Helper()
	var st store.State
	require.NoError(r.t, json.Unmarshal(r.state(), &st))
	st.Steps, st.Seq, st.Effects = 0, 0, nil
	b, err := json.Marshal(st)
	require.NoError(r.t, err)
	return string(b)
}

// journalPath is where the engine journals an effect.
func (r *effectRun) journalPath(name string) string {
	return r.path(".custodian/effects/" + name + ".json")
}

// journal reads an effect's journal the way the engine reads it.
func (r *effectRun) journal(name string) *store.Effect {
	r.t.Helper()
	run, err := store.Open(r.dir)
	require.NoError(r.t, err)
	effects, err := run.Effects()
	require.NoError(r.t, err)
	e := effects[name]
	require.NotNil(r.t, e, "effect %s is not journaled", name)
	return e
}

// runs counts how often the effect's do was entered; asked how often its
// recognizer was asked. Both are tallied outside the run.
func (r *effectRun) runs(effect string) int {
	r.t.Helper()
	return effectLines(r.t, effectOutside(r.dir, effect+".runs"))
}

func (r *effectRun) asked(effect string) int {
	r.t.Helper()
	return effectLines(r.t, effectOutside(r.dir, effect+".asked"))
}

// published reads a file the publishing effects wrote outside the run, or ""
// when there is none.
func (r *effectRun) published(name string) string {
	r.t.Helper()
	b, err := os.ReadFile(effectOutside(r.dir, "published", name))
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	require.NoError(r.t, err)
	return string(b)
}

func effectLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	require.NoError(t, err)
	defer f.Close()
	n := 0
	for s := bufio.NewScanner(f); s.Scan(); {
		n++
	}
	return n
}

func effectWriteFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

func effectBlocksBySubject(t *testing.T, blocks []workflow.Block) map[string]workflow.Block {
	t.Helper()
	by := map[string]workflow.Block{}
	for _, b := range blocks {
		_, dup := by[string(b.Subject)]
		require.False(t, dup, "two blocks on %s", b.Subject)
		by[string(b.Subject)] = b
	}
	return by
}

func effectNames(effects []workflow.EffectState) []string {
	names := []string{}
	for _, e := range effects {
		names = append(names, e.Name)
	}
	return names
}

// effectPublishRun starts a run of effect-publish with the recognizer named
// and brings it to the point where the draft is written and the next step
// reaches the effect.
func effectPublishRun(t *testing.T, recognizer string) *effectRun {
	t.Helper()
	params := workflow.Params{}
	if recognizer != "" {
		params["recognizer"] = recognizer
	}
	r := effectStart(t, effectRegistry(), "effect-publish", params, effectSource)
	r.launch(true, "draft")
	return r
}
