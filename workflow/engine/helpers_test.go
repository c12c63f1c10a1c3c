package engine_test

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
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
	o   *engine.Run
	// opened is the registry o was opened with, and build the build it acts
	// as: a registry swapped for another is another build's code.
	opened *workflow.Registry
	build  engine.Build
}

// builds numbers the builds that a test's swapped registries stand for.
var builds atomic.Int64

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
	o, err := engine.Start(reg, def.Name, dir, nil)
	require.NoError(t, err)
	return &harness{t: t, reg: reg, dir: o.Dir(), o: o, opened: reg, build: engine.ThisBuild()}
}

// reopen replaces the open run with a fresh one, as a new process would
// have: nothing carries over but the records on disk.
//
// A registry the test swapped in since is another build's code, as a new
// binary's would be: the run is opened as a build of its own.
func (h *harness) reopen() {
	h.t.Helper()
	o, err := engine.Open(h.reg, h.dir)
	require.NoError(h.t, err)
	if h.reg != h.opened {
		h.opened = h.reg
		h.build = engine.Build{ID: fmt.Sprintf("test-build-%d", builds.Add(1))}
	}
	o.AsBuild(h.build)
	h.o = o
}

// asAnotherBuild makes the open run's next steps act as a new build's, as a
// rebuilt binary's would, whatever code the test changed in place.
func (h *harness) asAnotherBuild() {
	h.build = engine.Build{ID: fmt.Sprintf("test-build-%d", builds.Add(1))}
	h.o.AsBuild(h.build)
}

// step runs one step that must not fail.
func (h *harness) step() engine.Outcome {
	h.t.Helper()
	out, err := h.o.Step()
	require.NoError(h.t, err)
	return out
}

// launch runs one step that must hand out exactly the jobs named, and
// returns the hand-outs by name.
func (h *harness) launch(names ...string) map[string]engine.Handout {
	h.t.Helper()
	out := h.step()
	require.Equal(h.t, engine.KindLaunch, out.Kind, "outcome: %+v", out)
	require.Equal(h.t, names, handoutNames(out))
	byName := map[string]engine.Handout{}
	for _, j := range out.Jobs {
		byName[j.Name] = j
	}
	return byName
}

// blocked runs one step that must block, and returns its blocks by subject.
func (h *harness) blocked() map[string]engine.Block {
	h.t.Helper()
	out := h.step()
	require.Equal(h.t, engine.KindBlocked, out.Kind, "outcome: %+v", out)
	require.Empty(h.t, out.Jobs, "a blocked step hands nothing out")
	return blocksBySubject(h.t, out)
}

// done runs one step that must find the run finished.
func (h *harness) done() {
	h.t.Helper()
	out := h.step()
	require.Equal(h.t, engine.KindDone, out.Kind, "outcome: %+v", out)
}

// reply is what one worker does with its hand-out.
type reply struct {
	output  string // written to the output path unless empty
	problem string // written to the problem path unless empty
}

// work plays the workers of a launch: each job's reply comes from replies,
// and a job without one writes validText.
func (h *harness) work(jobs map[string]engine.Handout, replies map[string]reply) {
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
		case engine.KindDone:
			return handed
		case engine.KindLaunch:
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

func handoutNames(out engine.Outcome) []string {
	names := []string{}
	for _, j := range out.Jobs {
		names = append(names, j.Name)
	}
	return names
}

func blocksBySubject(t *testing.T, out engine.Outcome) map[string]engine.Block {
	t.Helper()
	bySubject := map[string]engine.Block{}
	for _, b := range out.Blocks {
		_, dup := bySubject[string(b.Subject)]
		require.False(t, dup, "two blocks on %s", b.Subject)
		bySubject[string(b.Subject)] = b
	}
	return bySubject
}

func subjects(blocks map[string]engine.Block) []string {
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
	o, err := engine.Start(reg, name, dir, params)
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

func (r *effectRun) open() *engine.Run {
	r.t.Helper()
	o, err := engine.Open(r.reg, r.dir)
	require.NoError(r.t, err)
	return o
}

// step runs one step in this process; it must not fail.
func (r *effectRun) step() engine.Outcome {
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
func (r *effectRun) expect(kind engine.Kind) engine.Outcome {
	r.t.Helper()
	out := r.step()
	require.Equal(r.t, kind, out.Kind, "outcome: %+v", out)
	return out
}

// launch runs one step that must hand out exactly the jobs named, and plays
// their workers unless told not to: each writes a heading to its output.
func (r *effectRun) launch(work bool, names ...string) engine.Outcome {
	r.t.Helper()
	out := r.expect(engine.KindLaunch)
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
func (r *effectRun) blocked() map[string]engine.Block {
	r.t.Helper()
	out := r.expect(engine.KindBlocked)
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
	st.Steps, st.Seq, st.Effects, st.Last = 0, 0, nil, ""
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

func effectBlocksBySubject(t *testing.T, blocks []engine.Block) map[string]engine.Block {
	t.Helper()
	by := map[string]engine.Block{}
	for _, b := range blocks {
		_, dup := by[string(b.Subject)]
		require.False(t, dup, "two blocks on %s", b.Subject)
		by[string(b.Subject)] = b
	}
	return by
}

func effectNames(effects []engine.EffectState) []string {
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

// The definitions and the outside world shared by the effect tests. The crash
// tests step a run in a child process (effects_process_test.go) and then in
// this one, so both must build the very same definitions: everything here is
// a package-level value or a pure function of the run directory, the run's
// parameters and the environment, never of a test's local state.

const (
	// effectRunEnv names the run a child process steps.
	effectRunEnv = "CUSTODIAN_EFFECT_TEST_RUN"
	// effectCrashEnv names the crash point at which the child ends.
	effectCrashEnv = "CUSTODIAN_EFFECT_TEST_CRASH_AT"
	// effectCrashStatus is the status a child ends with inside an effect.
	effectCrashStatus = 9
)

// effectOutside returns a path in the world outside the run: a sibling
// directory <run>.outside that no step of the run treats as its own.
func effectOutside(runDir string, rel ...string) string {
	return filepath.Join(append([]string{runDir + ".outside"}, rel...)...)
}

// effectTally appends a line to <run>.outside/<file>. Effects tally each time
// their do is entered ("<name>.runs"), recognizers each time they are asked
// ("<name>.asked"). The tally lives outside the run so that nothing the
// engine does to its own records can change it.
func effectTally(runDir, file string) error {
	if err := os.MkdirAll(effectOutside(runDir), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(effectOutside(runDir, file), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, "x"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// effectCrashPoint ends the process, as a power cut would, when the child was
// told to end at point. It leaves a marker first, so that the parent can tell
// that the process ended here and not anywhere else with the same status.
// In the test process itself the variable is never set.
func effectCrashPoint(runDir, point string) {
	if os.Getenv(effectCrashEnv) != point {
		return
	}
	_ = os.MkdirAll(effectOutside(runDir), 0o755)
	_ = os.WriteFile(effectOutside(runDir, "ended-at-"+point), nil, 0o644)
	os.Exit(effectCrashStatus)
}

func effectExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// effectJob is a job that reads inputs and writes <name>.md. No validator:
// the effect tests judge effects, and any output a worker writes will do.
func effectJob(name string, inputs ...string) workflow.Job {
	return workflow.Job{Name: name, Prompt: "Write " + name + ".", Output: name + ".md", Inputs: inputs}
}

// effectPublish is a file-backed effect on the world outside the run: it
// publishes draft.md to <run>.outside/published/ in two writes, the copy and
// then the index. A child may end before the first (begin), between them
// (part) or after both (full), before the engine journals the completion.
func effectPublish(runDir string) error {
	if err := effectTally(runDir, "publish.runs"); err != nil {
		return err
	}
	effectCrashPoint(runDir, "begin")
	draft, err := os.ReadFile(filepath.Join(runDir, "draft.md"))
	if err != nil {
		return err
	}
	pub := effectOutside(runDir, "published")
	if err := os.MkdirAll(pub, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pub, "draft.md"), draft, 0o644); err != nil {
		return err
	}
	effectCrashPoint(runDir, "part")
	if err := os.WriteFile(filepath.Join(pub, "index.md"), []byte("draft.md\n"), 0o644); err != nil {
		return err
	}
	effectCrashPoint(runDir, "full")
	return nil
}

// effectPublishRecognizer returns the recognizer the run's "recognizer"
// parameter asks for. "files" (the default) looks at what was published:
// both files mean completed, neither absent, one alone unknown. The others
// are the ways a recognizer can leave the fate open. Every recognizer tallies
// that it was asked.
func effectPublishRecognizer(runDir, kind string) []workflow.EffectOption {
	asked := func() { _ = effectTally(runDir, "publish.asked") }
	var rec workflow.Recognizer
	switch kind {
	case "none":
		return nil
	case "error":
		// It claims completed, with an error: the error must win.
		rec = func() (workflow.Recognition, error) {
			asked()
			return workflow.Completed, errors.New("the publisher cannot be reached")
		}
	case "panic":
		rec = func() (workflow.Recognition, error) {
			asked()
			panic("the recognizer broke")
		}
	case "unknown":
		rec = func() (workflow.Recognition, error) {
			asked()
			return workflow.Unknown, nil
		}
	default:
		rec = func() (workflow.Recognition, error) {
			asked()
			doc := effectExists(effectOutside(runDir, "published", "draft.md"))
			index := effectExists(effectOutside(runDir, "published", "index.md"))
			switch {
			case doc && index:
				return workflow.Completed, nil
			case !doc && !index:
				return workflow.Absent, nil
			default:
				return workflow.Unknown, nil
			}
		}
	}
	return []workflow.EffectOption{workflow.Recognize(rec)}
}

// effectPublishDef publishes the draft once it is accepted. A file named
// "withdraw" in the run switches the branch: the definition then no longer
// reaches the effect and waits on a notes job instead.
var effectPublishDef = &workflow.Definition{
	Name:   "effect-publish",
	Params: []workflow.Param{{Name: "recognizer", Doc: "how publish is recognized", Default: "files"}},
	Run: func(ctx *workflow.Context) error {
		ctx.Agent(effectJob("draft", "source.md")).Wait()
		if effectExists(ctx.Path("withdraw")) {
			ctx.Agent(effectJob("notes", "source.md")).Wait()
			return nil
		}
		dir := ctx.RunDir()
		opts := append([]workflow.EffectOption{workflow.EffectInputs("draft.md")},
			effectPublishRecognizer(dir, ctx.Param("recognizer"))...)
		ctx.Effect("publish", func() error { return effectPublish(dir) }, opts...)
		return nil
	},
}

// effectStampDef has an effect that writes only inside the run: a value that
// cannot be reproduced (here, random text) goes to stamp.txt, and later code
// reads it from there to name a job. Its recognizer knows the value was made
// when stamp.txt exists.
var effectStampDef = &workflow.Definition{
	Name: "effect-stamp",
	Run: func(ctx *workflow.Context) error {
		dir := ctx.RunDir()
		stampPath := ctx.Path("stamp.txt")
		ctx.Effect("stamp", func() error {
			if err := effectTally(dir, "stamp.runs"); err != nil {
				return err
			}
			if err := os.WriteFile(stampPath, []byte(rand.Text()), 0o644); err != nil {
				return err
			}
			effectCrashPoint(dir, "stamped")
			return nil
		}, workflow.Recognize(func() (workflow.Recognition, error) {
			_ = effectTally(dir, "stamp.asked")
			if effectExists(stampPath) {
				return workflow.Completed, nil
			}
			return workflow.Absent, nil
		}))
		stamp, err := os.ReadFile(stampPath)
		if err != nil {
			return err
		}
		ctx.Agent(workflow.Job{Name: "announce", Prompt: "Announce the stamp " + strings.TrimSpace(string(stamp)) + ".",
			Output: "announce.md", Inputs: []string{"stamp.txt"}}).Wait()
		return nil
	},
}

// effectReleaseDef publishes release.md, a file no job owns, and then names a
// job that does not read it. Changing release.md therefore touches only the
// effect.
var effectReleaseDef = &workflow.Definition{
	Name: "effect-release",
	Run: func(ctx *workflow.Context) error {
		dir := ctx.RunDir()
		ctx.Effect("publish", func() error {
			if err := effectTally(dir, "publish.runs"); err != nil {
				return err
			}
			data, err := os.ReadFile(filepath.Join(dir, "release.md"))
			if err != nil {
				return err
			}
			if err := os.MkdirAll(effectOutside(dir, "published"), 0o755); err != nil {
				return err
			}
			return os.WriteFile(effectOutside(dir, "published", "release.md"), data, 0o644)
		}, workflow.EffectInputs("release.md"))
		ctx.Agent(effectJob("announce", "source.md")).Wait()
		return nil
	},
}

// effectTwoDef has two jobs and two effects on four Parallel paths. The
// effects are reached only when the file "go" is in the run, so that a first
// step hands out the jobs. Each effect's recognizer cannot tell what took
// place; a child ends inside the effect named by the crash point.
var effectTwoDef = &workflow.Definition{
	Name: "effect-two",
	Run: func(ctx *workflow.Context) error {
		dir := ctx.RunDir()
		effect := func(name string) func() {
			return func() {
				if !effectExists(ctx.Path("go-" + name)) {
					return
				}
				ctx.Effect(name, func() error {
					if err := effectTally(dir, name+".runs"); err != nil {
						return err
					}
					effectCrashPoint(dir, name)
					return nil
				}, workflow.Recognize(func() (workflow.Recognition, error) {
					_ = effectTally(dir, name+".asked")
					return workflow.Unknown, nil
				}))
			}
		}
		ctx.Parallel(
			func() { ctx.Agent(effectJob("a", "source.md")).Wait() },
			effect("one"),
			func() { ctx.Agent(effectJob("b", "source.md")).Wait() },
			effect("two"),
		)
		return nil
	},
}

// effectStopDef fails an effect on one path and stops the run on another, in
// the same step, so that the workflow is stopped while the effect's journal
// says started.
var effectStopDef = &workflow.Definition{
	Name: "effect-stop",
	Run: func(ctx *workflow.Context) error {
		dir := ctx.RunDir()
		ctx.Parallel(
			func() {
				ctx.Effect("publish", func() error {
					if err := effectTally(dir, "publish.runs"); err != nil {
						return err
					}
					return errors.New("the publisher refused the upload")
				}, workflow.Recognize(func() (workflow.Recognition, error) {
					_ = effectTally(dir, "publish.asked")
					return workflow.Completed, nil
				}))
			},
			func() { ctx.Stop("no repair within scope can help") },
		)
		return nil
	},
}

// effectRegistry is the registry both the test process and its children use.
func effectRegistry() *workflow.Registry {
	reg, err := workflow.NewRegistry(effectPublishDef, effectStampDef, effectReleaseDef, effectTwoDef, effectStopDef)
	if err != nil {
		panic(err)
	}
	return reg
}

// failures, messages and stopped read a job's record of trouble, which is
// nil while nothing went wrong.
func failures(js *store.JobState) int {
	if js.Trouble == nil {
		return 0
	}
	return js.Trouble.Failures
}

func messages(js *store.JobState) []string {
	if js.Trouble == nil {
		return nil
	}
	return js.Trouble.Messages
}

func stopped(js *store.JobState) *store.Stop {
	if js.Trouble == nil {
		return nil
	}
	return js.Trouble.Stopped
}
