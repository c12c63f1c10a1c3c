package shell_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logOK runs args with reg and requires exit status 0 and a quiet stderr.
func logOK(t *testing.T, reg *workflow.Registry, args ...string) string {
	t.Helper()
	r := run(t, reg, args...)
	require.Equal(t, engine.ExitOK, r.code, "custodian %v: %s", args, r.stderr)
	require.Empty(t, r.stderr)
	return r.stdout
}

// logStart is the first line of every log: the run's start.
func logStart(definition, params string) string {
	return "TIME  start     run of " + definition + " started (version " + engine.Version + ", " + params + ")"
}

// The problem scenario's course, with the agent orchestrator's repair
// report: every step, hand-out, acceptance, keep and block on its own line,
// and the report after the step it followed.
func TestLogPrintsTheHistory(t *testing.T) {
	dir := trialRun(t, "problem")
	ok(t, "step", dir)
	statusBothLenses(t, dir)
	ok(t, "step", dir)
	writeOutput(t, dir, "notes-summary.problem.md", "notes.md is not there\n")
	ok(t, "step", dir)
	require.NoError(t, os.Rename(filepath.Join(dir, "incoming", "notes.md"), filepath.Join(dir, "notes.md")))
	ok(t, "report", dir, "repair", "--job", "notes", "--text", "moved incoming/notes.md to notes.md")
	ok(t, "step", dir)
	writeOutput(t, dir, "notes-summary.md", valid)
	ok(t, "step", dir)
	writeOutput(t, dir, "reconciled.md", valid)
	require.Equal(t, "done\n", ok(t, "step", dir))

	assert.Equal(t, lines(
		logStart("trial", "parameters scenario=problem"),
		"TIME  step 1    outcome: launch",
		"TIME  step 1    handed out claims, attempt 1: .custodian/jobs/claims/prompt-1.md",
		"TIME  step 1    handed out assumptions, attempt 1: .custodian/jobs/assumptions/prompt-1.md",
		"TIME  step 2    outcome: launch",
		"TIME  step 2    accepted claims, attempt 1",
		"TIME  step 2    accepted assumptions, attempt 1",
		"TIME  step 2    handed out notes, attempt 1: .custodian/jobs/notes/prompt-1.md",
		"TIME  step 3    outcome: blocked",
		"TIME  step 3    kept notes-summary.problem.md of notes as .custodian/jobs/notes/kept/1-notes-summary.problem.md",
		"TIME  step 3    blocked notes (problem-report): the worker wrote a problem report (permits repair); record .custodian/jobs/notes/block-1.md",
		"TIME  step 3    report 1, repair on notes: moved incoming/notes.md to notes.md",
		"TIME  step 4    outcome: launch",
		"TIME  step 4    handed out notes, attempt 2: .custodian/jobs/notes/prompt-2.md",
		"TIME  step 5    outcome: launch",
		"TIME  step 5    accepted notes, attempt 2",
		"TIME  step 5    handed out reconcile, attempt 1: .custodian/jobs/reconcile/prompt-1.md",
		"TIME  step 6    outcome: done",
		"TIME  step 6    accepted reconcile, attempt 1",
	), statusUntimed(ok(t, "log", dir)))
}

// A refusal, a stop report without text, and the operator's release.
func TestLogPrintsRefusalsStopsAndReleases(t *testing.T) {
	dir := trialRun(t, "stop-only")
	ok(t, "step", dir)
	statusBothLenses(t, dir)
	ok(t, "step", dir)
	writeOutput(t, dir, "assumptions.md", valid)
	ok(t, "step", dir)
	ok(t, "report", dir, "stop", "--job", "assumptions")
	ok(t, "release", dir, "assumptions")
	ok(t, "step", dir)

	assert.Equal(t, lines(
		logStart("trial", "parameters scenario=stop-only"),
		"TIME  step 1    outcome: launch",
		"TIME  step 1    handed out claims, attempt 1: .custodian/jobs/claims/prompt-1.md",
		"TIME  step 1    handed out assumptions, attempt 1: .custodian/jobs/assumptions/prompt-1.md",
		"TIME  step 2    outcome: launch",
		"TIME  step 2    accepted claims, attempt 1",
		"TIME  step 2    refused assumptions, attempt 1 (validator-refused): the output was refused by its validator (the output must be empty and must also start with a level-one heading)",
		"TIME  step 2    kept assumptions.md of assumptions as .custodian/jobs/assumptions/kept/1-assumptions.md",
		"TIME  step 2    handed out assumptions, attempt 2: .custodian/jobs/assumptions/prompt-2.md",
		"TIME  step 3    outcome: blocked",
		"TIME  step 3    refused assumptions, attempt 2 (validator-refused): the output was refused by its validator (the output must be empty and must also start with a level-one heading)",
		"TIME  step 3    kept assumptions.md of assumptions as .custodian/jobs/assumptions/kept/2-assumptions.md",
		"TIME  step 3    blocked assumptions (validator-refused): the output was refused by its validator, attempt 2 of 2 (permits stop); "+
			"record .custodian/jobs/assumptions/block-1.md",
		"TIME  step 3    report 1, stop on assumptions",
		"TIME  step 3    released assumptions",
		"TIME  step 4    outcome: launch",
		"TIME  step 4    handed out assumptions, attempt 3: .custodian/jobs/assumptions/prompt-3.md",
	), statusUntimed(ok(t, "log", dir)))
}

// An effect's journal and the operator's resolve.
func TestLogPrintsEffectsAndResolves(t *testing.T) {
	reg := statusPublishing(t)
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	writeOutput(t, dir, "release.md", "v1\n")
	writeOutput(t, dir, "down", "")
	logOK(t, reg, "start", "publishing", "--run", dir)
	logOK(t, reg, "step", dir)
	require.NoError(t, os.Remove(filepath.Join(dir, "down")))
	logOK(t, reg, "step", dir)
	logOK(t, reg, "resolve", dir, "publish", "completed")
	require.Equal(t, "done\n", logOK(t, reg, "step", dir))

	assert.Equal(t, lines(
		logStart("publishing", "no parameters"),
		"TIME  step 1    outcome: blocked",
		"TIME  step 1    blocked workflow (workflow-error): error: effect publish: the publisher hung up (permits repair); "+
			"record .custodian/workflow/block-1.md",
		"TIME  step 1    effect publish started, run 1, by step",
		"TIME  step 2    outcome: uncertain (effect publish: the effect started and its completion was not recorded; "+
			"the recognizer could not establish whether it took place)",
		"TIME  step 2    resolved effect publish as completed",
		"TIME  step 3    outcome: done",
	), statusUntimed(logOK(t, reg, "log", dir)))
}

// Before the first step the log holds the start alone, and a report made
// then follows it.
func TestLogBeforeTheFirstStep(t *testing.T) {
	dir := trialRun(t, "clean")
	assert.Equal(t, lines(logStart("trial", "parameters scenario=clean")), statusUntimed(ok(t, "log", dir)))

	ok(t, "report", dir, "launch-failed", "--text", "the harness is not ready")
	assert.Equal(t, lines(
		logStart("trial", "parameters scenario=clean"),
		"TIME  step 0    report 1, launch-failed: the harness is not ready",
	), statusUntimed(ok(t, "log", dir)))
}

// stopOnlyCourse takes a stop-only trial run through a refusal, a block
// that permits only stopping, the stop report and the release, to the
// fourth step, and returns its directory.
func stopOnlyCourse(t *testing.T) string {
	t.Helper()
	dir := trialRun(t, "stop-only")
	ok(t, "step", dir)
	statusBothLenses(t, dir)
	ok(t, "step", dir)
	writeOutput(t, dir, "assumptions.md", valid)
	ok(t, "step", dir)
	ok(t, "report", dir, "stop", "--job", "assumptions")
	ok(t, "release", dir, "assumptions")
	ok(t, "step", dir)
	return dir
}

// --job keeps one job's events and --since the steps from one on; they
// combine, and come before or after the run.
func TestLogFiltersByJobAndStep(t *testing.T) {
	dir := stopOnlyCourse(t)
	refused := "refused assumptions, attempt %d (validator-refused): the output was refused by its validator " +
		"(the output must be empty and must also start with a level-one heading)"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--job", "claims"}, lines(
			"TIME  step 1    handed out claims, attempt 1: .custodian/jobs/claims/prompt-1.md",
			"TIME  step 2    accepted claims, attempt 1",
		)},
		{[]string{"--since", "3"}, lines(
			"TIME  step 3    outcome: blocked",
			"TIME  step 3    "+fmt.Sprintf(refused, 2),
			"TIME  step 3    kept assumptions.md of assumptions as .custodian/jobs/assumptions/kept/2-assumptions.md",
			"TIME  step 3    blocked assumptions (validator-refused): the output was refused by its validator, attempt 2 of 2 (permits stop); "+
				"record .custodian/jobs/assumptions/block-1.md",
			"TIME  step 3    report 1, stop on assumptions",
			"TIME  step 3    released assumptions",
			"TIME  step 4    outcome: launch",
			"TIME  step 4    handed out assumptions, attempt 3: .custodian/jobs/assumptions/prompt-3.md",
		)},
		{[]string{"--job", "assumptions", "--since", "2"}, lines(
			"TIME  step 2    "+fmt.Sprintf(refused, 1),
			"TIME  step 2    kept assumptions.md of assumptions as .custodian/jobs/assumptions/kept/1-assumptions.md",
			"TIME  step 2    handed out assumptions, attempt 2: .custodian/jobs/assumptions/prompt-2.md",
			"TIME  step 3    "+fmt.Sprintf(refused, 2),
			"TIME  step 3    kept assumptions.md of assumptions as .custodian/jobs/assumptions/kept/2-assumptions.md",
			"TIME  step 3    blocked assumptions (validator-refused): the output was refused by its validator, attempt 2 of 2 (permits stop); "+
				"record .custodian/jobs/assumptions/block-1.md",
			"TIME  step 3    report 1, stop on assumptions",
			"TIME  step 3    released assumptions",
			"TIME  step 4    handed out assumptions, attempt 3: .custodian/jobs/assumptions/prompt-3.md",
		)},
		{[]string{"--since", "5"}, ""},
		{[]string{"--since", "0"}, statusUntimed(ok(t, "log", dir))},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			assert.Equal(t, tt.want, statusUntimed(ok(t, append([]string{"log", dir}, tt.args...)...)))
			assert.Equal(t, tt.want, statusUntimed(ok(t, append(append([]string{"log"}, tt.args...), dir)...)), "flags first")
		})
	}
}

// A job the run has never had is refused: a mistyped name must not read as
// a job that did nothing.
// --follow refuses it at once, too: it would wait for events that never
// come.
func TestLogRefusesAnUnknownJob(t *testing.T) {
	dir := stopOnlyCourse(t)
	for _, follow := range []bool{false, true} {
		args := []string{"log", dir, "--job", "claim"}
		if follow {
			args = append(args, "--follow")
		}
		r := custodian(t, args...)
		requireFailure(t, r, engine.ExitFailed, "name one of the run's jobs (assumptions, claims); custodian status "+dir+" lists them\n")
		assert.Equal(t, "custodian: run "+dir+" has no job \"claim\"\n", strings.SplitAfter(r.stderr, "\n")[0])
	}
}
