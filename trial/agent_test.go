package trial_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

const (
	sourceText = "Teams that write decision records revisit fewer decisions. " +
		"A record names the options that were weighed and why one won, so a newcomer " +
		"can see that a question was settled and on what grounds.\n"
	notesText = "# Notes\n\n- records are short\n- records are kept beside the code\n"
)

// startTrial starts a run of the trial definition in a fresh directory with
// what the scenario needs on disk, and returns a runner on it in process.
func startTrial(t *testing.T, params workflow.Params) (trial.Runner, string) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "source.md"), sourceText)
	if params["scenario"] == "problem" {
		writeFile(t, filepath.Join(dir, "incoming", "notes.md"), notesText)
	}
	o, err := engine.Start(definitions.Builtin(), "trial", dir, params)
	require.NoError(t, err)
	return trial.InProcess(o), o.Dir()
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// reported summarizes reports as "event job".
func reported(reports []trial.Report) []string {
	var lines []string
	for _, r := range reports {
		lines = append(lines, strings.TrimSpace(r.Event+" "+r.Job))
	}
	return lines
}

func TestAgentDrivesTrialScenarios(t *testing.T) {
	var repairedStopOnly int
	cases := []struct {
		name    string
		params  workflow.Params
		script  trial.Script
		course  []string
		reports []string
		check   func(t *testing.T, dir string, tr trial.Transcript)
	}{
		{
			name:   "clean reaches done in three steps",
			params: workflow.Params{"scenario": "clean"},
			course: []string{"launch assumptions claims", "launch reconcile", "done"},
			check: func(t *testing.T, _ string, tr trial.Transcript) {
				handouts := map[string]int{}
				for _, o := range tr.Steps {
					for _, h := range o.Jobs {
						handouts[h.Name]++
						assert.Equal(t, 1, h.Attempt, "job %s", h.Name)
					}
				}
				assert.Equal(t, map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}, handouts)
			},
		},
		{
			name:   "retry hands reconcile out again with the validator's message",
			params: workflow.Params{"scenario": "retry"},
			script: trial.Script{Workers: map[string][]trial.Behaviour{
				"reconcile": {trial.Valid, trial.ValidWith("# reconcile\n\n- a point\n- another point\n\nChecked: yes\n")},
			}},
			course: []string{"launch assumptions claims", "launch reconcile", "launch reconcile", "done"},
			check: func(t *testing.T, _ string, tr trial.Transcript) {
				first, second := tr.Steps[1].Jobs[0], tr.Steps[2].Jobs[0]
				assert.Equal(t, []int{1, 2}, []int{first.Attempt, second.Attempt})
				require.NotEqual(t, first.Prompt, second.Prompt, "every hand-out writes a new prompt file")
				assert.NotContains(t, readFile(t, first.Prompt), "Checked: yes")
				_, why, found := strings.Cut(readFile(t, second.Prompt), "## Why the previous attempt was refused\n")
				require.True(t, found, "the retry prompt says why the first attempt was refused")
				assert.Contains(t, why, "Checked: yes")
			},
		},
		{
			name:   "problem is repaired in scope and reported",
			params: workflow.Params{"scenario": "problem"},
			script: trial.Script{
				Workers: map[string][]trial.Behaviour{"notes": {trial.Problem("I cannot read notes.md: it does not exist.\n"), trial.Valid}},
				Repairs: map[string]trial.Repair{"notes": trial.PutNotesInPlace},
			},
			course: []string{
				"launch assumptions claims",
				"launch notes",
				"blocked notes:problem-report:repair",
				"launch notes",
				"launch reconcile",
				"done",
			},
			reports: []string{"repair notes"},
			check: func(t *testing.T, dir string, _ trial.Transcript) {
				assert.Equal(t, notesText, readFile(t, filepath.Join(dir, "notes.md")))
				run, err := store.Open(dir)
				require.NoError(t, err)
				defer run.Close()
				st, err := run.LoadState()
				require.NoError(t, err)
				reports, err := run.Reports(st.Reports)
				require.NoError(t, err)
				require.Len(t, reports, 1)
				assert.Equal(t, [3]string{"repair", "notes", "copied incoming/notes.md to notes.md"},
					[3]string{reports[0].Event, reports[0].Job, reports[0].Text})
			},
		},
		{
			name:    "stop is reported on the job when no repair helps",
			params:  workflow.Params{"scenario": "stop"},
			course:  []string{"launch assumptions claims", "launch assumptions", "blocked assumptions:validator-refused:repair"},
			reports: []string{"stop assumptions"},
		},
		{
			name:   "stop-only permits no repair, even a scripted one",
			params: workflow.Params{"scenario": "stop-only"},
			script: trial.Script{Repairs: map[string]trial.Repair{
				"assumptions": func(string, engine.Block) (string, error) {
					repairedStopOnly++
					return "removed the output", nil
				},
			}},
			course:  []string{"launch assumptions claims", "launch assumptions", "blocked assumptions:validator-refused:stop"},
			reports: []string{"stop assumptions"},
			check: func(t *testing.T, _ string, _ trial.Transcript) {
				assert.Zero(t, repairedStopOnly)
			},
		},
		{
			name:   "parameters reach claims only",
			params: workflow.Params{"scenario": "parameters", "launch": `{"tools":["read"],"model":"small"}`},
			course: []string{"launch assumptions claims", "launch reconcile", "done"},
			check: func(t *testing.T, _ string, tr trial.Transcript) {
				jobs := tr.Steps[0].Jobs
				require.Equal(t, []string{"assumptions", "claims"}, []string{jobs[0].Name, jobs[1].Name})
				assert.JSONEq(t, `{}`, string(jobs[0].Launch))
				assert.JSONEq(t, `{"model":"small","tools":["read"]}`, string(jobs[1].Launch))
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runner, dir := startTrial(t, tc.params)
			agent := &trial.Agent{Runner: runner, RunDir: dir, Script: tc.script}

			tr, err := agent.Drive()

			require.NoError(t, err)
			assert.Equal(t, tc.course, tr.Course())
			assert.Equal(t, tc.reports, reported(tr.Reports))
			require.NotEmpty(t, tr.Steps)
			assert.Equal(t, tr.Steps[len(tr.Steps)-1], tr.Final)
			if tc.check != nil {
				tc.check(t, dir, tr)
			}
		})
	}
}

// fakeRunner plays the engine from a list of outcomes and records the
// reports it is given. When the list runs out it gives repeat, if set.
type fakeRunner struct {
	steps     []fakeStep
	repeat    *fakeStep
	reports   []trial.Report
	decisions []string // "NAME CHOICE", as the operator made them
}

type fakeStep struct {
	out engine.Outcome
	err error
}

var errNoMoreSteps = errors.New("the fake runner has no more steps")

func (f *fakeRunner) Step() (engine.Outcome, error) {
	if len(f.steps) == 0 {
		if f.repeat == nil {
			return engine.Outcome{}, errNoMoreSteps
		}
		return f.repeat.out, f.repeat.err
	}
	s := f.steps[0]
	f.steps = f.steps[1:]
	return s.out, s.err
}

func (f *fakeRunner) Report(event, job, text string) error {
	f.reports = append(f.reports, trial.Report{Event: event, Job: job, Text: text})
	return nil
}

func (f *fakeRunner) Decide(name, choice, _ string) error {
	f.decisions = append(f.decisions, name+" "+choice)
	return nil
}

// question is the block of a question the definition asks.
func question(name string) engine.Block {
	return engine.Block{Subject: engine.DecisionSubject(name), Kind: engine.BlockAwaitingDecision, Permitted: engine.PermitStop,
		Reason: "the definition asks the operator: Ship it? (choices: ship, hold)"}
}

// handout writes a prompt file for job in dir, as the engine would, and
// returns the hand-out that names it.
func handout(t *testing.T, dir, job string) engine.Handout {
	t.Helper()
	h := engine.Handout{
		Name:    job,
		Attempt: 1,
		Prompt:  filepath.Join(dir, ".custodian", "jobs", job, "prompt-1.md"),
		Output:  filepath.Join(dir, job+".md"),
		Problem: filepath.Join(dir, job+".problem.md"),
		Launch:  []byte("{}"),
	}
	writeFile(t, h.Prompt, "Do the task.\n\n## Where to write\n\n"+
		"Write the result to `"+h.Output+"`.\n"+
		"If you cannot finish the task, write why to `"+h.Problem+"` instead.\n\n"+
		"Reply in one line that names the file you wrote. Do not repeat or summarize its content.\n")
	return h
}

func fakeLaunch(jobs ...engine.Handout) fakeStep {
	return fakeStep{out: engine.Outcome{Kind: engine.KindLaunch, Jobs: jobs}}
}

func fakeBlocked(blocks ...engine.Block) fakeStep {
	return fakeStep{out: engine.Outcome{Kind: engine.KindBlocked, Blocks: blocks}}
}

var fakeDone = fakeStep{out: engine.Outcome{Kind: engine.KindDone}}

func repairable(subject string) engine.Block {
	return engine.Block{Subject: engine.Subject(subject), Kind: engine.BlockNoOutput, Reason: "no output, attempt 2 of 2", Permitted: engine.PermitRepair}
}

func TestAgentFollowsTheLoop(t *testing.T) {
	var repaired []string
	repair := func(_ string, b engine.Block) (string, error) {
		repaired = append(repaired, b.Subject.String())
		return "fixed " + b.Subject.String(), nil
	}
	var behaved []string
	behaviour := func(name string) trial.Behaviour {
		return func(engine.Handout) error { behaved = append(behaved, name); return nil }
	}
	cases := []struct {
		name      string
		steps     func(dir string) []fakeStep
		script    trial.Script
		reports   []trial.Report
		repaired  []string
		behaved   []string
		decisions []string
		check     func(t *testing.T, dir string)
	}{
		{
			name: "the agent stops at a question, and a scripted operator's choice resumes it",
			steps: func(string) []fakeStep {
				return []fakeStep{fakeBlocked(question("ship-it")), fakeDone}
			},
			script:    trial.Script{Decisions: map[string]trial.Decision{"ship-it": {Choice: "ship", Text: "it is good enough"}}},
			reports:   []trial.Report{{Event: "stop", Text: "decision ship-it: the definition asks the operator: Ship it? (choices: ship, hold); the block permits only stopping"}},
			decisions: []string{"ship-it ship"},
		},
		{
			name: "a question the script does not answer waits for the operator",
			steps: func(string) []fakeStep {
				return []fakeStep{fakeBlocked(question("ship-it"), question("pay-it"))}
			},
			script:  trial.Script{Decisions: map[string]trial.Decision{"ship-it": {Choice: "ship"}}},
			reports: []trial.Report{{Event: "stop", Text: "decision ship-it: the definition asks the operator: Ship it? (choices: ship, hold); the block permits only stopping"}},
		},
		{
			name:    "a stop on the workflow names no job",
			steps:   func(string) []fakeStep { return []fakeStep{fakeBlocked(repairable("workflow"))} },
			reports: []trial.Report{{Event: "stop", Text: "workflow: no output, attempt 2 of 2; no change within the repair scope fixes it"}},
		},
		{
			name: "one block without a repair stops before any repair",
			steps: func(string) []fakeStep {
				return []fakeStep{fakeBlocked(repairable("notes"), repairable("claims"))}
			},
			script:  trial.Script{Repairs: map[string]trial.Repair{"notes": repair}},
			reports: []trial.Report{{Event: "stop", Job: "claims", Text: "claims: no output, attempt 2 of 2; no change within the repair scope fixes it"}},
		},
		{
			name: "a block that permits only stopping stops the others' repairs",
			steps: func(string) []fakeStep {
				stop := repairable("effect publish")
				stop.Permitted, stop.Reason = engine.PermitStop, "the effect is completed and its inputs have changed since"
				return []fakeStep{fakeBlocked(repairable("notes"), stop)}
			},
			script:  trial.Script{Repairs: map[string]trial.Repair{"notes": repair}},
			reports: []trial.Report{{Event: "stop", Text: "effect publish: the effect is completed and its inputs have changed since; the block permits only stopping"}},
		},
		{
			name: "every block is repaired and reported before the next step",
			steps: func(string) []fakeStep {
				return []fakeStep{fakeBlocked(repairable("notes"), repairable("workflow")), fakeDone}
			},
			script:   trial.Script{Repairs: map[string]trial.Repair{"notes": repair, "workflow": repair}},
			repaired: []string{"notes", "workflow"},
			reports: []trial.Report{
				{Event: "repair", Job: "notes", Text: "fixed notes"},
				{Event: "repair", Text: "fixed workflow"},
			},
		},
		{
			name: "an uncertain effect stops with a report",
			steps: func(string) []fakeStep {
				return []fakeStep{{out: engine.Outcome{Kind: engine.KindUncertain, Effects: []engine.EffectState{{Name: "publish", Detail: "unknown"}}}}}
			},
			reports: []trial.Report{{Event: "stop", Text: "it is uncertain whether effect publish took place"}},
		},
		{
			name: "a failed launch is reported and the round goes on",
			steps: func(dir string) []fakeStep {
				return []fakeStep{fakeLaunch(handout(t, dir, "claims"), handout(t, dir, "assumptions")), fakeDone}
			},
			script: trial.Script{Workers: map[string][]trial.Behaviour{
				"claims": {trial.LaunchFailed("model small is not available")},
			}},
			reports: []trial.Report{{Event: "launch-failed", Job: "claims", Text: "model small is not available"}},
			check: func(t *testing.T, dir string) {
				assert.NoFileExists(t, filepath.Join(dir, "claims.md"))
				assert.Equal(t, "# assumptions\n\n- a point\n- another point\n", readFile(t, filepath.Join(dir, "assumptions.md")))
			},
		},
		{
			name: "each launch takes the next behaviour and the last repeats",
			steps: func(dir string) []fakeStep {
				h := handout(t, dir, "claims")
				return []fakeStep{fakeLaunch(h), fakeLaunch(h), fakeLaunch(h), fakeDone}
			},
			script:  trial.Script{Workers: map[string][]trial.Behaviour{"claims": {behaviour("first"), behaviour("second")}}},
			behaved: []string{"first", "second", "second"},
		},
		{
			name: "the script's default behaviour serves unnamed jobs",
			steps: func(dir string) []fakeStep {
				return []fakeStep{fakeLaunch(handout(t, dir, "claims")), fakeDone}
			},
			script:  trial.Script{Default: behaviour("default")},
			behaved: []string{"default"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repaired, behaved = nil, nil
			dir := t.TempDir()
			runner := &fakeRunner{steps: tc.steps(dir)}
			agent := &trial.Agent{Runner: runner, RunDir: dir, Script: tc.script}

			tr, err := agent.Drive()

			require.NoError(t, err)
			assert.Equal(t, tc.reports, runner.reports)
			assert.Equal(t, tc.reports, tr.Reports)
			assert.Equal(t, tc.repaired, repaired)
			assert.Equal(t, tc.behaved, behaved)
			assert.Equal(t, tc.decisions, runner.decisions)
			if tc.check != nil {
				tc.check(t, dir)
			}
		})
	}
}

func TestAgentStepFailures(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		reports []trial.Report
	}{
		{name: "a named status is handed over without a report", status: 3},
		{name: "an unnamed ending is reported as a stop", status: 9,
			reports: []trial.Report{{Event: "stop", Text: "step ended with exit status 9"}}},
		{name: "a signal is an unnamed ending", status: -1,
			reports: []trial.Report{{Event: "stop", Text: "step ended with exit status -1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			exit := &trial.ExitError{Args: []string{"step", "RUN"}, Status: tc.status, Stderr: "custodian: something\n"}
			runner := &fakeRunner{steps: []fakeStep{{err: exit}}}
			agent := &trial.Agent{Runner: runner}

			tr, err := agent.Drive()

			var got *trial.ExitError
			require.ErrorAs(t, err, &got)
			assert.Equal(t, tc.status, got.Status)
			assert.Empty(t, tr.Steps, "a failed step has no outcome")
			assert.Equal(t, tc.reports, runner.reports)
		})
	}
}

func TestAgentStopsAtTheRoundLimit(t *testing.T) {
	dir := t.TempDir()
	again := fakeLaunch(handout(t, dir, "claims"))
	runner := &fakeRunner{repeat: &again}
	agent := &trial.Agent{Runner: runner, RunDir: dir, Script: trial.Script{MaxRounds: 3}}

	tr, err := agent.Drive()

	require.ErrorIs(t, err, trial.ErrMaxRounds)
	assert.Len(t, tr.Steps, 3)
}

func TestAgentRefusesAHandoutItsPromptContradicts(t *testing.T) {
	dir := t.TempDir()
	h := handout(t, dir, "claims")
	h.Output = filepath.Join(dir, "elsewhere.md")
	agent := &trial.Agent{Runner: &fakeRunner{steps: []fakeStep{fakeLaunch(h)}}, RunDir: dir}

	_, err := agent.Drive()

	require.ErrorContains(t, err, "elsewhere.md")
	assert.NoFileExists(t, h.Output, "no worker runs on a contradicted hand-out")
}

func TestAgentLogsEachRound(t *testing.T) {
	runner, dir := startTrial(t, workflow.Params{"scenario": "clean"})
	var log strings.Builder
	agent := &trial.Agent{Runner: runner, RunDir: dir, Log: &log}

	_, err := agent.Drive()

	require.NoError(t, err)
	assert.Equal(t, strings.Join([]string{
		"round 1: custodian step",
		"worker assumptions: wrote assumptions.md",
		"worker claims: wrote claims.md",
		"round 2: custodian step",
		"worker reconcile: wrote reconciled.md",
		"round 3: custodian step",
		"the run is finished",
	}, "\n")+"\n", log.String())
}

func TestPutNotesInPlace(t *testing.T) {
	dir := t.TempDir()
	_, err := trial.PutNotesInPlace(dir, engine.Block{Subject: "notes"})
	require.ErrorIs(t, err, os.ErrNotExist, "nothing to put in place")

	writeFile(t, filepath.Join(dir, "incoming", "notes.md"), notesText)
	changed, err := trial.PutNotesInPlace(dir, engine.Block{Subject: "notes"})
	require.NoError(t, err)
	assert.Equal(t, "copied incoming/notes.md to notes.md", changed)
	assert.Equal(t, notesText, readFile(t, filepath.Join(dir, "notes.md")))
	assert.FileExists(t, filepath.Join(dir, "incoming", "notes.md"), "the copy keeps the file setup placed")
}
