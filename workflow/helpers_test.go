package workflow_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/require"
)

// validText passes hasHeading; invalidText does not.
const (
	validText   = "# Heading\n\nbody\n"
	invalidText = "no heading here\n"
	headingMsg  = "start with a level-one heading"
)

// hasHeading is the validator most tests give their jobs: it refuses an
// output whose first line is not a level-one heading.
func hasHeading(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(b), "# ") {
		return workflow.Refuse(headingMsg)
	}
	return nil
}

// harness is one run of one definition in a temporary directory, driven the
// way the agent orchestrator drives it: step, act on the outcome, step again.
type harness struct {
	t   *testing.T
	reg *workflow.Registry
	dir string
	o   *workflow.Orchestrator
}

// startRun writes files (run-relative path → content) into a fresh run
// directory and starts a run of def there. The run directory is a child of
// the test's temporary directory so that tests can place files outside the
// run, and move the run.
func startRun(t *testing.T, def *workflow.Definition, files map[string]string) *harness {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for rel, text := range files {
		writeFile(t, filepath.Join(dir, rel), text)
	}
	reg, err := workflow.NewRegistry(def)
	require.NoError(t, err)
	o, err := workflow.Start(reg, def.Name, dir, nil)
	require.NoError(t, err)
	return &harness{t: t, reg: reg, dir: o.Dir(), o: o}
}

// reopen replaces the orchestrator with a fresh one, as a new process would
// have: nothing carries over but the records on disk.
func (h *harness) reopen() {
	h.t.Helper()
	o, err := workflow.Open(h.reg, h.dir)
	require.NoError(h.t, err)
	h.o = o
}

// step runs one step that must not fail.
func (h *harness) step() workflow.Outcome {
	h.t.Helper()
	out, err := h.o.Step()
	require.NoError(h.t, err)
	return out
}

// launch runs one step that must hand out exactly the jobs named, and
// returns the hand-outs by name.
func (h *harness) launch(names ...string) map[string]workflow.Handout {
	h.t.Helper()
	out := h.step()
	require.Equal(h.t, workflow.KindLaunch, out.Kind, "outcome: %+v", out)
	require.Equal(h.t, names, handoutNames(out))
	byName := map[string]workflow.Handout{}
	for _, j := range out.Jobs {
		byName[j.Name] = j
	}
	return byName
}

// blocked runs one step that must block, and returns its blocks by subject.
func (h *harness) blocked() map[string]workflow.Block {
	h.t.Helper()
	out := h.step()
	require.Equal(h.t, workflow.KindBlocked, out.Kind, "outcome: %+v", out)
	require.Empty(h.t, out.Jobs, "a blocked step hands nothing out")
	return blocksBySubject(h.t, out)
}

// done runs one step that must find the run finished.
func (h *harness) done() {
	h.t.Helper()
	out := h.step()
	require.Equal(h.t, workflow.KindDone, out.Kind, "outcome: %+v", out)
}

// reply is what one worker does with its hand-out.
type reply struct {
	output  string // written to the output path unless empty
	problem string // written to the problem path unless empty
}

// work plays the workers of a launch: each job's reply comes from replies,
// and a job without one writes validText.
func (h *harness) work(jobs map[string]workflow.Handout, replies map[string]reply) {
	h.t.Helper()
	for name, j := range jobs {
		r, ok := replies[name]
		if !ok {
			r = reply{output: validText}
		}
		if r.output != "" {
			writeFile(h.t, j.Output, r.output)
		}
		if r.problem != "" {
			writeFile(h.t, j.Problem, r.problem)
		}
	}
}

// runToDone steps and answers every hand-out with a valid output until the
// run is done, and returns how often each job was handed out.
func (h *harness) runToDone() map[string]int {
	h.t.Helper()
	handed := map[string]int{}
	for range 50 {
		out := h.step()
		switch out.Kind {
		case workflow.KindDone:
			return handed
		case workflow.KindLaunch:
			for _, j := range out.Jobs {
				handed[j.Name]++
				writeFile(h.t, j.Output, validText)
			}
		default:
			require.FailNow(h.t, "the run did not get through", "outcome: %+v", out)
		}
	}
	require.FailNow(h.t, "the run did not finish in 50 steps")
	return nil
}

func (h *harness) path(rel string) string { return filepath.Join(h.dir, filepath.FromSlash(rel)) }

func (h *harness) write(rel, text string) {
	h.t.Helper()
	writeFile(h.t, h.path(rel), text)
}

func (h *harness) read(rel string) string {
	h.t.Helper()
	b, err := os.ReadFile(h.path(rel))
	require.NoError(h.t, err)
	return string(b)
}

func (h *harness) remove(rel string) {
	h.t.Helper()
	require.NoError(h.t, os.Remove(h.path(rel)))
}

func (h *harness) exists(rel string) bool {
	_, err := os.Lstat(h.path(rel))
	return err == nil
}

// state reads state.json as the store reads it.
func (h *harness) state() *store.State {
	h.t.Helper()
	run, err := store.Open(h.dir)
	require.NoError(h.t, err)
	st, err := run.LoadState()
	require.NoError(h.t, err)
	require.NotNil(h.t, st)
	return st
}

// stateBytes returns state.json's bytes. A run has one from its start, so
// a missing one fails the test.
func (h *harness) stateBytes() []byte {
	h.t.Helper()
	b, err := os.ReadFile(h.path(".custodian/state.json"))
	require.NoError(h.t, err)
	return b
}

// recordText reads a block record or prompt file by its absolute path.
func recordText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

func handoutNames(out workflow.Outcome) []string {
	names := []string{}
	for _, j := range out.Jobs {
		names = append(names, j.Name)
	}
	return names
}

func blocksBySubject(t *testing.T, out workflow.Outcome) map[string]workflow.Block {
	t.Helper()
	bySubject := map[string]workflow.Block{}
	for _, b := range out.Blocks {
		_, dup := bySubject[string(b.Subject)]
		require.False(t, dup, "two blocks on %s", b.Subject)
		bySubject[string(b.Subject)] = b
	}
	return bySubject
}

func subjects(blocks map[string]workflow.Block) []string {
	out := make([]string, 0, len(blocks))
	for s := range blocks {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// job is the job most tests name: it reads source.md and writes <name>.md,
// judged by hasHeading.
func job(name string) workflow.Job {
	return workflow.Job{
		Name:     name,
		Prompt:   "Do " + name + ".",
		Output:   name + ".md",
		Inputs:   []string{"source.md"},
		Validate: hasHeading,
	}
}

// oneJob is a definition that names one job and waits on it.
func oneJob(j workflow.Job) *workflow.Definition {
	return &workflow.Definition{Name: "one", Run: func(ctx *workflow.Context) error {
		ctx.Agent(j).Wait()
		return nil
	}}
}

// source is the input file most runs start with.
var source = map[string]string{"source.md": "the source text\n"}

// decodeState reads state.json bytes kept from an earlier step.
func decodeState(t *testing.T, data []byte) *store.State {
	t.Helper()
	var st store.State
	require.NoError(t, json.Unmarshal(data, &st))
	return &st
}
