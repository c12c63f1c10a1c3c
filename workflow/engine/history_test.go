package engine_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// historyLog reads the run's history through a freshly opened run and
// checks what every event must carry: a time, and a step no later than the
// steps the run has taken.
func historyLog(t *testing.T, reg *workflow.Registry, dir string) []store.Event {
	t.Helper()
	o, err := engine.Open(reg, dir)
	require.NoError(t, err)
	events, err := o.Log()
	require.NoError(t, err)
	require.NotEmpty(t, events)
	require.Equal(t, store.EventStart, events[0].Type, "the history begins with the start")
	steps := 0
	for i, e := range events {
		assert.NotEmpty(t, e.At, "event %d (%s) has no time", i, e.Type)
		if e.Type == "step" {
			steps++
			assert.Equal(t, steps, e.Step, "step events are numbered in order")
		} else {
			assert.Equal(t, steps, e.Step, "event %d (%s %s) belongs to the step before it", i, e.Type, e.Subject)
		}
	}
	return events
}

// historyLines renders events as compact lines, one an event, with the
// fields that matter for its type and without times: what a test compares.
func historyLines(events []store.Event) []string {
	lines := make([]string, 0, len(events))
	for _, e := range events {
		var line string
		switch e.Type {
		case "start":
			line = "start " + e.Subject
		case "step":
			line = fmt.Sprintf("step %d %s", e.Step, e.Text)
		case "handout":
			line = fmt.Sprintf("handout %s #%d %s", e.Subject, e.Attempt, e.Path)
		case "accept":
			line = fmt.Sprintf("accept %s #%d", e.Subject, e.Attempt)
		case "refuse":
			line = fmt.Sprintf("refuse %s #%d %s", e.Subject, e.Attempt, e.Kind)
		case "reopen":
			line = fmt.Sprintf("reopen %s: %s", e.Subject, e.Text)
		case "keep":
			line = fmt.Sprintf("keep %s %s -> %s", e.Subject, e.Text, e.Path)
		case "block":
			line = fmt.Sprintf("block %s %s %s: %s", e.Subject, e.Kind, e.Path, e.Text)
		case "effect":
			line = fmt.Sprintf("effect %s #%d %s by %s", e.Subject, e.Attempt, e.Text, e.Kind)
		case "release", "resolve":
			line = strings.TrimSpace(fmt.Sprintf("%s %s %s", e.Type, e.Subject, e.Text))
		case "report":
			line = fmt.Sprintf("report %d %s %s after step %d: %s", e.Attempt, e.Kind, e.Subject, e.Step, e.Text)
		case "launch":
			line = strings.TrimSpace(fmt.Sprintf("launch %s #%d %s %s", e.Subject, e.Attempt, e.Kind, e.Path))
		case "carry":
			line = fmt.Sprintf("carry %s from %s", e.Subject, e.Text)
		case "spare":
			line = fmt.Sprintf("spare %s #%d: %s", e.Subject, e.Attempt, e.Text)
		default:
			line = "unknown " + string(e.Type)
		}
		lines = append(lines, line)
	}
	return lines
}

// historyDef names job a (source.md) and job notes (incoming.md, which the
// run lacks at first), waits on both, and then publishes release.md, a file no
// job owns, as an effect.
var historyDef = &workflow.Definition{Name: "history", Run: func(ctx *workflow.Context) error {
	notes := job("notes")
	notes.Inputs = []string{"incoming.md"}
	ctx.Wait(ctx.Agent(job("a")), ctx.Agent(notes))
	dir := ctx.RunDir()
	ctx.Effect("publish", func() error {
		return effectTally(dir, "publish.runs")
	}, workflow.EffectInputs("release.md"))
	return nil
}}

// historyScripted runs historyDef through a retry, a problem report and
// its repair, a stop and its release, and an effect the operator resolves,
// to the end: eleven steps and three reports.
func historyScripted(t *testing.T) *harness {
	t.Helper()
	h := startRun(t, historyDef, map[string]string{"source.md": "text\n", "release.md": "v1\n"})
	_, err := h.o.Report(engine.ReportLaunchFailed, "", "before any step")
	require.NoError(t, err)

	// 1: both handed out. a writes an invalid output; notes cannot find its input.
	h.work(h.launch("a", "notes"), map[string]reply{"a": {output: invalidText}, "notes": {problem: "no incoming.md\n"}})
	// 2: notes blocks on its problem report; a's refusal is counted.
	h.blocked()
	h.write("incoming.md", "the notes\n")
	_, err = h.o.Report(engine.ReportRepair, "notes", "put incoming.md in place")
	require.NoError(t, err)
	// 3: both handed out again; a's refused output is moved aside.
	h.work(h.launch("a", "notes"), map[string]reply{"a": {output: invalidText}})
	// 4: a blocks after its second refusal; notes is accepted.
	h.blocked()
	// 5, 6: a's second cycle.
	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	// 7: a is stopped.
	require.Equal(t, engine.PermitStop, h.blocked()["a"].Permitted)
	_, err = h.o.Report(engine.ReportStop, "a", "a stopped")
	require.NoError(t, err)
	require.NoError(t, h.o.Release("a"))
	// 8: a is handed out once more, and its output is valid.
	h.work(h.launch("a"), nil)
	// 9: a is accepted and the effect runs.
	h.done()
	// 10: the effect's input changed after it completed.
	h.write("release.md", "v2\n")
	require.Equal(t, engine.PermitStop, h.blocked()["effect publish"].Permitted)
	require.NoError(t, h.o.Resolve("publish", workflow.Completed))
	// 11: done again.
	h.done()
	return h
}

// A scripted run with a retry, a problem report and its repair, a stop and
// its release, and an effect the operator resolves: the history holds every
// event exactly once, in order, each with its step.
func TestHistoryOfAScriptedRun(t *testing.T) {
	h := historyScripted(t)
	const refused = string(engine.BlockRefused)
	want := []string{
		"start history",
		"report 1 launch-failed  after step 0: before any step",
		"step 1 launch",
		"handout a #1 .custodian/jobs/a/prompt-1.md",
		"handout notes #1 .custodian/jobs/notes/prompt-1.md",
		"step 2 blocked",
		"refuse a #1 " + refused,
		"keep notes notes.problem.md -> .custodian/jobs/notes/kept/1-notes.problem.md",
		"block notes problem-report .custodian/jobs/notes/block-1.md: the worker wrote a problem report (permits repair)",
		"report 2 repair notes after step 2: put incoming.md in place",
		"step 3 launch",
		"keep a a.md -> .custodian/jobs/a/kept/2-a.md",
		"handout a #2 .custodian/jobs/a/prompt-2.md",
		"handout notes #2 .custodian/jobs/notes/prompt-2.md",
		"step 4 blocked",
		"refuse a #2 " + refused,
		"keep a a.md -> .custodian/jobs/a/kept/3-a.md",
		"accept notes #2",
		"block a " + refused + " .custodian/jobs/a/block-1.md: the output was refused by its validator, attempt 2 of 2 (permits repair)",
		"step 5 launch",
		"handout a #3 .custodian/jobs/a/prompt-3.md",
		"step 6 launch",
		"refuse a #3 " + refused,
		"keep a a.md -> .custodian/jobs/a/kept/4-a.md",
		"handout a #4 .custodian/jobs/a/prompt-4.md",
		"step 7 blocked",
		"refuse a #4 " + refused,
		"keep a a.md -> .custodian/jobs/a/kept/5-a.md",
		"block a " + refused + " .custodian/jobs/a/block-2.md: the output was refused by its validator, attempt 2 of 2 (permits stop)",
		"report 3 stop a after step 7: a stopped",
		"release a",
		"step 8 launch",
		"handout a #5 .custodian/jobs/a/prompt-5.md",
		"step 9 done",
		"accept a #5",
		"effect publish #1 started by step",
		"effect publish #1 completed by step",
		"step 10 blocked",
		"block effect publish effect-inputs-changed .custodian/effect-blocks/publish.md: " +
			"the effect is completed and its inputs have changed since: input release.md (permits stop)",
		"resolve publish completed",
		"step 11 done",
	}
	events := historyLog(t, h.reg, h.dir)
	assert.Equal(t, want, historyLines(events))

	// Every prompt, record and kept file the history names is where it says.
	for _, e := range events {
		if e.Path != "" {
			assert.FileExists(t, h.path(e.Path), "%s %s", e.Type, e.Subject)
		}
	}
	// The step event carries the outcome as step --json prints it.
	var last engine.Outcome
	require.NoError(t, json.Unmarshal(events[len(events)-1].Outcome, &last))
	assert.Equal(t, engine.KindDone, last.Kind)
	// A refusal says why, as the block record does.
	for _, e := range events {
		if e.Type == "refuse" {
			assert.Equal(t, "the output was refused by its validator", e.Text)
		}
	}
}

// historyWriteFuture writes the history file a command numbered past the
// committed count would have left had it ended before its state's rename.
func historyWriteFuture(t *testing.T, h *harness, text string) string {
	t.Helper()
	seq := h.state().Seq + 1
	rel := fmt.Sprintf(".custodian/history/%d.jsonl", seq)
	line, err := json.Marshal(store.Event{Format: store.EventFormat, Seq: seq, Step: 99, At: "2000-01-01T00:00:00Z",
		Type: "release", Subject: text, Outcome: json.RawMessage("null")})
	require.NoError(t, err)
	h.write(rel, string(line)+"\n")
	return rel
}

// A command that ends between writing its history and renaming the state
// leaves a history file the state does not count. It is not history: Log
// does not read it, and the next command replaces it.
func TestHistoryIgnoresAndReplacesAnUncommittedFile(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	before := historyLines(historyLog(t, h.reg, h.dir))

	status := h.status()
	rel := historyWriteFuture(t, h, "never released")
	assert.Equal(t, before, historyLines(historyLog(t, h.reg, h.dir)), "an uncommitted history file is not history")
	assert.Equal(t, status, h.status(), "nor does the status read it")

	h.write("a.md", validText)
	h.done()
	assert.NotContains(t, h.read(rel), "never released", "the next command replaced the file")
	after := historyLines(historyLog(t, h.reg, h.dir))
	assert.Equal(t, append(before, "step 2 done", "accept a #1"), after)
	for _, line := range after {
		assert.NotContains(t, line, "never released")
	}
}

// historyDropSeenEffect edits state.json as a process that ended after an
// effect's journal changed and before its command committed would have
// left it: the history has not seen the journal's last change.
func historyDropSeenEffect(t *testing.T, r *effectRun, name string) {
	t.Helper()
	var st map[string]any
	require.NoError(t, json.Unmarshal(r.state(), &st))
	effects, ok := st["effects"].(map[string]any)
	require.True(t, ok, "state.json has an effects map")
	require.Contains(t, effects, name)
	delete(effects, name)
	data, err := json.Marshal(st)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(r.path(".custodian/state.json"), data, 0o644))
}

// An effect journal that changed without a committed history is recorded by
// the next command that commits, once: a step, a release or a resolve.
func TestHistoryRecordsAnUnseenJournalOnce(t *testing.T) {
	r := effectPublishRun(t, "files")
	r.expect(engine.KindDone)
	effectLines := func(events []store.Event) []string {
		var out []string
		for _, line := range historyLines(events) {
			if strings.HasPrefix(line, "effect ") {
				out = append(out, line)
			}
		}
		return out
	}
	recorded := []string{"effect publish #1 started by step", "effect publish #1 completed by step"}
	require.Equal(t, recorded, effectLines(historyLog(t, r.reg, r.dir)))

	historyDropSeenEffect(t, r, "publish")
	// Reading commits nothing, so it records nothing.
	require.Equal(t, recorded, effectLines(historyLog(t, r.reg, r.dir)))

	r.expect(engine.KindDone)
	events := historyLog(t, r.reg, r.dir)
	assert.Equal(t, append(recorded, recorded...), effectLines(events), "the next step records the journal it had not seen")
	tail := historyLines(events[len(events)-3:])
	assert.Equal(t, []string{"step 3 done", "effect publish #1 started by step", "effect publish #1 completed by step"}, tail)

	r.expect(engine.KindDone)
	assert.Equal(t, append(recorded, recorded...), effectLines(historyLog(t, r.reg, r.dir)), "and only once")
}

// A process that ends inside an effect leaves its start journaled and no
// history of it. The next committing step records what took place, each run
// once, including a run the journal has moved past.
func TestHistoryOfAProcessThatEndedInsideAnEffect(t *testing.T) {
	cases := []struct {
		point string
		want  []string // the effect events of the step after the crash
	}{
		{"full", []string{
			"step 2 done",
			"effect publish #1 started by step",
			"effect publish #1 completed by recognizer",
		}},
		// The recognizer finds nothing published: the first run is absent and
		// a second runs.
		{"begin", []string{
			"step 2 done",
			"effect publish #1 started by step",
			"effect publish #1 absent by recognizer",
			"effect publish #2 started by step",
			"effect publish #2 completed by step",
		}},
		{"part", []string{
			"step 2 uncertain",
			"effect publish #1 started by step",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.point, func(t *testing.T) {
			r := effectPublishRun(t, "files")
			r.crashStep(tc.point)
			before := historyLines(historyLog(t, r.reg, r.dir))
			for _, line := range before {
				assert.NotContains(t, line, "effect ", "the ended process committed no history")
			}

			r.step()
			after := historyLines(historyLog(t, r.reg, r.dir))
			require.Equal(t, before, after[:len(before)], "earlier history is never rewritten")
			var got []string
			for _, line := range after[len(before):] {
				if strings.HasPrefix(line, "step ") || strings.HasPrefix(line, "effect ") {
					got = append(got, line)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// The operator's absent withdraws the effect: the resolve is recorded, and
// the run that follows is recorded as the second.
func TestHistoryOfAnEffectResolvedAbsent(t *testing.T) {
	r := effectPublishRun(t, "files")
	r.crashStep("part")
	r.expect(engine.KindUncertain)
	require.NoError(t, r.resolve("publish", workflow.Absent))
	r.expect(engine.KindDone)

	var got []string
	for _, line := range historyLines(historyLog(t, r.reg, r.dir)) {
		if strings.HasPrefix(line, "effect ") || strings.HasPrefix(line, "resolve ") {
			got = append(got, line)
		}
	}
	assert.Equal(t, []string{
		"effect publish #1 started by step",
		"resolve publish absent",
		"effect publish #2 started by step",
		"effect publish #2 completed by step",
	}, got)
}

// A report is placed after the command that preceded it, however many
// reports follow one command.
func TestHistoryPlacesReportsAfterTheirCommand(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	report := func(text string) {
		t.Helper()
		_, err := h.o.Report(engine.ReportLaunchFailed, "", text)
		require.NoError(t, err)
	}
	report("zero")
	h.launch("a")
	report("one")
	report("two")
	h.launch("a")

	lines := historyLines(historyLog(t, h.reg, h.dir))
	assert.Equal(t, []string{
		"start one",
		"report 1 launch-failed  after step 0: zero",
		"step 1 launch",
		"handout a #1 .custodian/jobs/a/prompt-1.md",
		"report 2 launch-failed  after step 1: one",
		"report 3 launch-failed  after step 1: two",
		"step 2 launch",
		"refuse a #1 no-output",
		"handout a #2 .custodian/jobs/a/prompt-2.md",
	}, lines)
}
