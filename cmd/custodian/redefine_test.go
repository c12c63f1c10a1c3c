package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow/engine"
)

// A team ships a new binary while runs of the old one are live. These tests
// build the author's binary of testdata/variant once per variant of its
// notes definition (see its package comment), drive a run to done with the
// base build, and step and check it with another build, one process per
// command, as an operator would.

// variantNames are the variants of testdata/variant that TestMain builds.
var variantNames = []string{"base", "prompt", "launch", "rename", "formerly", "removed", "patched", "unpatched", "clock", "fanout"}

// variantBinaries are the builds of testdata/variant, by variant.
var variantBinaries = map[string]string{}

// variantBuilds returns the go commands that build every variant into dir,
// for TestMain's build list, and notes where each binary will be. The
// builds do not stamp the commit: a run records the version of the binary
// that started it and status names it, and a transcript must not change
// with every commit.
func variantBuilds(dir string) [][]string {
	var builds [][]string
	for _, v := range variantNames {
		path := filepath.Join(dir, "custodian-"+v)
		variantBinaries[v] = path
		builds = append(builds, []string{"build", "-buildvcs=false", "-ldflags", "-X main.variant=" + v, "-o", path, "./testdata/variant"})
	}
	return builds
}

// The notes definition's prompts, as testdata/variant declares them.
const (
	redefSummaryPrompt  = "Summarize the notes in notes.md under a level-one heading."
	redefRewordedPrompt = "Summarize the notes in notes.md under a level-one heading, one bullet per note."
	redefOwnersPrompt   = "Summarize the notes in notes.md under a level-one heading, and name the owner of each note."
)

// redefNotes is the input of every notes run.
const redefNotes = "# Notes\n\n- ship on Friday\n- the vendor's parts are late\n"

// redefRun runs the build of variant with args.
func redefRun(t *testing.T, variant string, args ...string) result {
	t.Helper()
	bin, ok := variantBinaries[variant]
	require.True(t, ok, "no build of variant %s", variant)
	return run(t, bin, nil, args...)
}

// redefOK runs the build of variant with args, requires exit status 0 and
// nothing on stderr, and returns what it printed.
func redefOK(t *testing.T, variant string, args ...string) string {
	t.Helper()
	r := redefRun(t, variant, args...)
	require.Equal(t, 0, r.code, "custodian@%s %s: %s", variant, strings.Join(args, " "), r.stderr)
	require.Empty(t, r.stderr)
	return r.stdout
}

// redefStart starts a run of notes with the build of variant, in a fresh
// directory that holds notes.md, and returns the directory.
func redefStart(t *testing.T, variant string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte(redefNotes), 0o644))
	require.Equal(t, dir+"\n", redefOK(t, variant, "start", "notes", "--run", dir))
	return dir
}

// redefStep runs `step RUN --json` with the build of variant and decodes
// the outcome.
func redefStep(t *testing.T, variant, dir string) engine.Outcome {
	t.Helper()
	out, err := trial.DecodeOutcome([]byte(redefOK(t, variant, "step", dir, "--json")))
	require.NoError(t, err)
	return out
}

// redefWork acts as the workers of a launch: each writes a valid output
// where its hand-out says.
func redefWork(t *testing.T, out engine.Outcome) {
	t.Helper()
	for _, h := range out.Jobs {
		require.NoError(t, trial.Valid(h))
	}
}

// redefFinish steps the run with the build of variant, working every
// launch, until it is done, and returns the jobs it handed out.
func redefFinish(t *testing.T, variant, dir string) []string {
	t.Helper()
	var handed []string
	for range 10 {
		out := redefStep(t, variant, dir)
		if out.Kind == engine.KindDone {
			return handed
		}
		require.Equal(t, engine.KindLaunch, out.Kind, "custodian@%s step: %+v", variant, out)
		redefWork(t, out)
		handed = append(handed, handedOut(out)...)
	}
	require.Fail(t, "the run is not done after ten steps")
	return nil
}

// redefDone returns a run of notes that the base build drove to done.
func redefDone(t *testing.T) string {
	t.Helper()
	dir := redefStart(t, "base")
	require.Equal(t, []string{"summary", "risks"}, redefFinish(t, "base", dir))
	return dir
}

// redefCheck runs `check RUN` and `check RUN --json` with the build of
// variant, requires that neither changed a byte of any file under the run,
// .custodian/ included, and that both say the same, and returns the text
// and the decoded check.
func redefCheck(t *testing.T, variant, dir string) (string, engine.Check) {
	t.Helper()
	text, c := redefCheckTwice(t, variant, dir)
	// The object says what the text says: written as text, it is the text.
	var again bytes.Buffer
	require.NoError(t, c.WriteText(&again))
	assert.Equal(t, text, again.String(), "check --json and check disagree")
	return text, c
}

// redefCheckTwice runs `check RUN` and `check RUN --json` with the build
// of variant, requires that neither changed a byte of any file under the
// run, .custodian/ included, and returns the text and the decoded check.
func redefCheckTwice(t *testing.T, variant, dir string) (string, engine.Check) {
	t.Helper()
	before := files(t, dir)
	text := redefOK(t, variant, "check", dir)
	assert.Equal(t, before, files(t, dir), "check wrote in the run")
	data := redefOK(t, variant, "check", dir, "--json")
	assert.Equal(t, before, files(t, dir), "check --json wrote in the run")

	var c engine.Check
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&c), data)
	first, _, _ := strings.Cut(text, "\n")
	assert.Equal(t, c.Changed, first == "changed")
	return text, c
}

// redefStateWrites are the only files under a run that a step which moves
// nothing and hands nothing out may write: its history, the state, the
// hash cache, the verdict cache (a new binary asks every validator again)
// and, when it blocks, the workflow's block record.
var redefStateWrites = regexp.MustCompile(`^\.custodian/(state\.json|hashes|verdicts|history/\d+\.jsonl|workflow/block-\d+\.md)$`)

// redefStepWrote requires that between before and after a step wrote
// nothing outside .custodian/, and inside it only its new history file, the
// state, the caches and, when blocked, a new workflow block record.
func redefStepWrote(t *testing.T, before, after map[string]string, blocked bool) {
	t.Helper()
	var histories, records int
	for rel, data := range after {
		old, existed := before[rel]
		if existed && old == data {
			continue
		}
		if !assert.Regexp(t, redefStateWrites, rel, "the step wrote %s", rel) {
			continue
		}
		switch {
		case strings.HasPrefix(rel, ".custodian/history/"):
			assert.False(t, existed, "the step rewrote the history of an earlier command, %s", rel)
			histories++
		case strings.HasPrefix(rel, ".custodian/workflow/"):
			assert.False(t, existed, "the step rewrote the block record %s", rel)
			records++
		}
	}
	for rel := range before {
		_, ok := after[rel]
		assert.True(t, ok, "the step removed or moved %s", rel)
	}
	assert.Equal(t, 1, histories, "a step commits one history file")
	if !blocked {
		assert.Zero(t, records, "a step that did not block wrote a block record")
	}
	assert.LessOrEqual(t, records, 1)
}

// redefItem is a line that check must print: a subject and what its reason
// says.
type redefItem struct {
	subject engine.Subject
	reason  string // a part of the reason
}

// redefItemsAre requires that check listed exactly these items, in order.
func redefItemsAre(t *testing.T, c engine.Check, want []redefItem) {
	t.Helper()
	var subjects []engine.Subject
	for _, it := range c.Items {
		subjects = append(subjects, it.Subject)
	}
	var wantSubjects []engine.Subject
	for _, w := range want {
		wantSubjects = append(wantSubjects, w.subject)
	}
	if !assert.Equal(t, wantSubjects, subjects, "the subjects check lists") {
		return
	}
	for i, w := range want {
		assert.Contains(t, c.Items[i].Reason, w.reason, "the reason check gives for %s", w.subject)
	}
}

// redefBlockedOnDefinition requires that out is the definition-changed
// block, naming each subject, and returns its record's text.
func redefBlockedOnDefinition(t *testing.T, out engine.Outcome, subjects ...string) string {
	t.Helper()
	require.Equal(t, engine.KindBlocked, out.Kind, "%+v", out)
	require.Len(t, out.Blocks, 1)
	b := out.Blocks[0]
	assert.Equal(t, engine.WorkflowSubject, b.Subject)
	assert.Equal(t, engine.BlockDefinitionChanged, b.Kind)
	assert.Equal(t, engine.PermitStop, b.Permitted)
	for _, s := range subjects {
		assert.Contains(t, b.Reason, s)
	}
	assert.Empty(t, out.Jobs, "a blocked step handed out")
	return fileText(t, b.Record)
}

func TestDefinitionChangedThroughTheBinary(t *testing.T) {
	tests := []struct {
		name    string
		variant string
		// earlier are builds that step the run, in order, after the base
		// build finished it and before variant meets it.
		earlier []string
		changed bool
		items   []redefItem
		// blocks lists what the definition-changed block names; none when
		// the step goes on.
		blocks []string
		// record is a part of the block record: what changed.
		record string
		// reopened are the jobs the first step after the release hands out.
		reopened []string
		launch   string // the launch parameters of the first of them
	}{
		{
			name: "prompt", variant: "prompt", changed: true,
			items:  []redefItem{{"summary", "the definition changed it: the prompt changed; the next step blocks on the changed definition"}},
			blocks: []string{"job summary"},
			record: "```diff\n--- .custodian/jobs/summary/prompt-1.md\n+++ the prompt now\n@@ -1 +1 @@\n" +
				"-" + redefSummaryPrompt + "\n+" + redefRewordedPrompt + "\n```\n",
			reopened: []string{"summary"}, launch: "{}",
		},
		{
			name: "launch parameters", variant: "launch", changed: true,
			items:    []redefItem{{"risks", `the definition changed it: the launch parameters changed: {} → {"model":"large"}`}},
			blocks:   []string{"job risks"},
			record:   "- the launch parameters changed: {} → {\"model\":\"large\"}\n",
			reopened: []string{"risks"}, launch: `{"model":"large"}`,
		},
		{
			// risks is named risk-list now, and risk-list writes risks.md:
			// without Formerly the step would take risks' accepted output
			// away and have it made again.
			name: "rename without Formerly", variant: "rename", changed: true,
			items: []redefItem{
				{"risk-list", "a new job"},
				// A job's line is "- NAME: reason", as step prints it.
				{"risks", `it is no longer named, and job risk-list writes its output risks.md; if risk-list is risks renamed, declare Formerly: []string{"risks"} on it`},
			},
			blocks:   []string{"job risks"},
			record:   "## job risks\n\n- it is no longer named, and job risk-list writes its output risks.md",
			reopened: []string{"risk-list"}, launch: "{}",
		},
		{
			// The output carries over: check lists the carry-over (the
			// issue names it among check's lines), so its first line is
			// changed, though only the job's record changes; the step
			// goes on and moves nothing.
			name: "rename with Formerly", variant: "formerly", changed: true,
			items: []redefItem{{"risk-list", "carried over from its former name risks, accepted as it was"}},
		},
		{
			// A job the definition's code no longer names, while nothing
			// of the run changed, blocks; after the release it is dropped,
			// its output kept, and nothing is handed out.
			name: "removed job", variant: "removed", changed: true,
			items:  []redefItem{{"risks", "the definition changed it: the definition no longer names it, and nothing of the run changed since the last step"}},
			blocks: []string{"job risks"},
			record: "## job risks\n\n- the definition no longer names it",
		},
		{
			// The run was started without the patch and takes the old
			// branch: nothing changes for it.
			name: "patch added", variant: "patched", changed: false,
		},
		{
			// The run, started without the patch, was stepped by the
			// build that declared it, and meets the build that removed it
			// and its old branch.
			name: "patch removed", variant: "unpatched", earlier: []string{"patched"}, changed: true,
			items: []redefItem{
				{"summary", "the definition changed it: the prompt changed"},
				{"workflow", "the definition changed patch asks-for-owners: the definition no longer declares it, and this run was started without it"},
			},
			blocks:   []string{"patch asks-for-owners", "job summary"},
			record:   "## patch asks-for-owners\n",
			reopened: []string{"summary"}, launch: "{}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := redefDone(t)
			for _, v := range tt.earlier {
				require.Equal(t, engine.KindDone, redefStep(t, v, dir).Kind, "custodian@%s step", v)
			}

			text, c := redefCheck(t, tt.variant, dir)
			assert.Equal(t, tt.changed, c.Changed, text)
			redefItemsAre(t, c, tt.items)
			require.NotNil(t, c.Next, text)

			if len(tt.blocks) == 0 {
				assert.Equal(t, engine.KindDone, c.Next.Kind, text)
				before := files(t, dir)
				assert.Equal(t, engine.KindDone, redefStep(t, tt.variant, dir).Kind)
				redefStepWrote(t, before, files(t, dir), false)
				text, again := redefCheck(t, tt.variant, dir)
				assert.False(t, again.Changed, "the step left a change for the next: %s", text)
				assert.True(t, strings.HasSuffix(text, "next step: done\n"), text)
				if tt.variant == "patched" {
					assert.Contains(t, text, "\npatches: the run lacks asks-for-owners, which this binary declares: in this run, ctx.Patched says false\n")
				}
				return
			}

			// Check foresees the block; every step gives it, changes
			// nothing the step may not change, and moves nothing, until
			// the operator releases the workflow.
			assert.Equal(t, engine.KindBlocked, c.Next.Kind, text)
			for i := range 2 {
				before := files(t, dir)
				out := redefStep(t, tt.variant, dir)
				record := redefBlockedOnDefinition(t, out, tt.blocks...)
				assert.Contains(t, record, tt.record)
				assert.Equal(t, *c.Next, out, "the step did not give the outcome check foresaw")
				redefStepWrote(t, before, files(t, dir), i == 0)
			}
			text, again := redefCheck(t, tt.variant, dir)
			assert.False(t, again.Changed, "a standing block is no change: %s", text)

			// The operator lets the changes through: the next step reopens
			// the changed jobs, and the run goes on with the new build.
			assert.Empty(t, redefOK(t, tt.variant, "release", dir, "workflow"))
			out := redefStep(t, tt.variant, dir)
			if tt.reopened == nil {
				// Nothing to make again: the job is dropped, its output kept.
				assert.Equal(t, engine.KindDone, out.Kind, "%+v", out)
				text, _ = redefCheck(t, tt.variant, dir)
				assert.Equal(t, "unchanged\nnext step: done\n", text)
				return
			}
			require.Equal(t, engine.KindLaunch, out.Kind, "%+v", out)
			assert.Equal(t, tt.reopened, handedOut(out))
			assert.JSONEq(t, tt.launch, string(out.Jobs[0].Launch))
			redefWork(t, out)
			redefFinish(t, tt.variant, dir)
			text, _ = redefCheck(t, tt.variant, dir)
			assert.Equal(t, "unchanged\nnext step: done\n", text)
		})
	}
}

// The block tells the agent orchestrator to stop, and the operator what to
// do: read the record, go back to the starting binary, or release.
func TestDefinitionChangedStatusSaysWhatToDo(t *testing.T) {
	dir := redefDone(t)
	redefBlockedOnDefinition(t, redefStep(t, "prompt", dir), "job summary")

	before := files(t, dir)
	status := redefOK(t, "prompt", "status", dir)
	assert.Equal(t, before, files(t, dir), "status wrote in the run")
	record := filepath.Join(dir, ".custodian", "workflow", "block-1.md")
	assert.Contains(t, status, "workflow: stopped: the definition changed under the run: job summary (definition-changed); permits only stopping\n"+
		"  record: "+record+"\n")
	assert.Contains(t, status, "\nagent orchestrator: stop and report it: a block permits only stopping (workflow)\n")
	assert.Regexp(t, `\noperator: read `+regexp.QuoteMeta(record)+`; .*custodian release `+regexp.QuoteMeta(dir)+` workflow\n$`, status)

	var s engine.Status
	require.NoError(t, json.Unmarshal([]byte(redefOK(t, "prompt", "status", dir, "--json")), &s))
	require.NotNil(t, s.Workflow)
	assert.Equal(t, engine.BlockDefinitionChanged, s.Workflow.Kind)
}

// The operator may instead go back to the binary that started the run
// (status offers it): that binary finds nothing changed, so its step goes
// on without a release.
func TestDefinitionChangedGoingBackToTheStartingBinary(t *testing.T) {
	dir := redefDone(t)
	redefBlockedOnDefinition(t, redefStep(t, "prompt", dir), "job summary")
	_, base := variantBuild(t, "base")
	assert.Contains(t, redefOK(t, "base", "status", dir), "go back to the binary whose definition the run last agreed with ("+base+")")

	before := files(t, dir)
	text, _ := redefCheck(t, "base", dir)
	assert.Equal(t, "changed\n- workflow: the stop of a changed definition is lifted: this binary finds the definition as the run recorded it, and lets nothing through\n"+
		"next step: done\n", text, "the binary that started the run still sees a changed definition")
	out := redefStep(t, "base", dir)
	assert.Equal(t, engine.KindDone, out.Kind, "the binary that started the run is still blocked: %+v", out)
	for rel, data := range before {
		if !strings.HasPrefix(rel, ".custodian/") {
			assert.Equal(t, data, fileText(t, filepath.Join(dir, rel)), "going back changed %s", rel)
		}
	}

	// Going back let nothing through: the new build still finds its
	// change, and blocks again rather than reopen summary.
	redefBlockedOnDefinition(t, redefStep(t, "prompt", dir), "job summary")
}

func TestPatchesThroughTheBinary(t *testing.T) {
	t.Run("definitions lists the patch", func(t *testing.T) {
		assert.Equal(t, "approval  drafts draft.md, then asks the operator whether to publish it\n"+
			"audit     audits each package manifest.txt names, one job per line PACKAGE FROM TO\n"+
			"notes     summarizes notes.md, then lists the risks the summary names\n"+
			"  patches: asks-for-owners\n", redefOK(t, "patched", "definitions"))
		assert.NotContains(t, redefOK(t, "base", "definitions"), "patches")
	})
	t.Run("a run started before the patch keeps the old branch", func(t *testing.T) {
		dir := redefStart(t, "base")
		out := redefStep(t, "patched", dir)
		require.Equal(t, []string{"summary"}, handedOut(out))
		p, err := engine.ParsePrompt([]byte(fileText(t, out.Jobs[0].Prompt)))
		require.NoError(t, err)
		assert.Equal(t, redefSummaryPrompt, p.Task)

		_, c := redefCheck(t, "patched", dir)
		assert.Equal(t, engine.CheckPatches{Run: []string{}, Definition: []string{"asks-for-owners"}}, c.Patches)
	})
	t.Run("a run started with the patch takes the new branch", func(t *testing.T) {
		dir := redefStart(t, "patched")
		out := redefStep(t, "patched", dir)
		require.Equal(t, []string{"summary"}, handedOut(out))
		p, err := engine.ParsePrompt([]byte(fileText(t, out.Jobs[0].Prompt)))
		require.NoError(t, err)
		assert.Equal(t, redefOwnersPrompt, p.Task)

		_, c := redefCheck(t, "patched", dir)
		assert.Equal(t, engine.CheckPatches{Run: []string{"asks-for-owners"}, Definition: []string{"asks-for-owners"}}, c.Patches)
		var s engine.Status
		require.NoError(t, json.Unmarshal([]byte(redefOK(t, "patched", "status", dir, "--json")), &s))
		assert.Equal(t, []string{"asks-for-owners"}, s.Patches)

		// Once every run without the patch is done, the old branch goes:
		// a run that has the patch loses nothing.
		redefWork(t, out)
		text, c := redefCheck(t, "unpatched", dir)
		assert.Equal(t, []string{"risks", "summary"}, redefSubjects(c), text)
		assert.NotContains(t, text, "patch asks-for-owners")
		redefFinish(t, "unpatched", dir)
	})
}

// redefSubjects are the subjects of a check's items, in order.
func redefSubjects(c engine.Check) []string {
	var out []string
	for _, it := range c.Items {
		out = append(out, string(it.Subject))
	}
	return out
}

// Check reads the last committed records as status does: it takes no lock,
// so it answers beside a loop that holds the run.
func TestCheckBesideAHeldLock(t *testing.T) {
	dir := redefDone(t)
	want, _ := redefCheck(t, "prompt", dir)

	// Hold the run as a step does: the lock file, and the state directory
	// itself, which is the lock the engine counts on.
	lock := flock.New(filepath.Join(dir, ".custodian", "lock"))
	require.NoError(t, lock.Lock())
	defer lock.Unlock()
	stateDir, err := os.Open(filepath.Join(dir, ".custodian"))
	require.NoError(t, err)
	defer stateDir.Close()
	require.NoError(t, syscall.Flock(int(stateDir.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))

	r := redefRun(t, "prompt", "step", dir)
	require.Equal(t, engine.ExitBusy, r.code, "the lock is not held: step got through: %s%s", r.stdout, r.stderr)

	got, _ := redefCheck(t, "prompt", dir)
	assert.Equal(t, want, got)
	assert.True(t, strings.HasPrefix(got, "changed\n- summary: the definition changed it: the prompt changed"), got)
}

// Check works on a run the operator abandoned, and says that its next step
// refuses it; step refuses it with exit 1.
func TestCheckOfAnAbandonedRun(t *testing.T) {
	dir := redefDone(t)
	assert.Empty(t, redefOK(t, "base", "abandon", dir, "--text", "the notes were withdrawn"))

	text, c := redefCheck(t, "prompt", dir)
	assert.True(t, c.Changed, text)
	assert.True(t, strings.HasPrefix(text, "changed\n- summary: the definition changed it: the prompt changed"), text)

	before := files(t, dir)
	r := redefRun(t, "prompt", "step", dir)
	assert.Equal(t, engine.ExitFailed, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "abandoned by the operator")
	assert.Equal(t, before, files(t, dir), "a step of an abandoned run wrote in it")

	// The last line of a check is what the next step would give; the next
	// step of an abandoned run gives no outcome but a refusal.
	assert.Contains(t, text[strings.LastIndex(text, "next step: "):], "abandoned", "check promises an outcome that the next step refuses")
}

// A definition that reads the clock names summary with another prompt at
// every replay: check reports it, naming the job and both sides. (Each
// check reads the clock anew, so the text and the object differ in the
// times: they are compared in everything else.)
func TestCheckFindsANonDeterministicDefinition(t *testing.T) {
	dir := redefStart(t, "clock")
	text, c := redefCheckTwice(t, "clock", dir)
	require.True(t, c.Changed, text)
	require.NotEmpty(t, c.Items)
	it := c.Items[0]
	assert.Equal(t, engine.Subject("summary"), it.Subject)
	assert.Contains(t, it.Reason, "non-deterministic definition: the two replays gave it different tasks")
	assert.Contains(t, it.Details, "--- first replay's prompt")
	assert.Contains(t, it.Details, "+++ second replay's prompt")
	// Both sides: the first replay's prompt removed, the second's added,
	// each with its own time.
	asked := regexp.MustCompile(`^([-+])` + regexp.QuoteMeta(redefSummaryPrompt) + ` Asked at (\d+)\.$`)
	var sides, times []string
	for _, d := range it.Details {
		if m := asked.FindStringSubmatch(d); m != nil {
			sides, times = append(sides, m[1]), append(times, m[2])
		}
	}
	require.Equal(t, []string{"-", "+"}, sides, "both replays' prompts: %q", it.Details)
	assert.NotEqual(t, times[0], times[1])

	clock := regexp.MustCompile(`Asked at \d+\.`)
	var object bytes.Buffer
	require.NoError(t, c.WriteText(&object))
	assert.Equal(t, clock.ReplaceAllString(text, "Asked at T."), clock.ReplaceAllString(object.String(), "Asked at T."),
		"check --json and check disagree in more than the times")
	assert.True(t, slices.ContainsFunc(strings.Split(text, "\n"), func(l string) bool {
		return strings.HasPrefix(l, "- summary: non-deterministic definition: the two replays gave it different tasks")
	}), text)
}
