package shell_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statusTime matches the times records carry (RFC 3339, UTC, to the second).
var statusTime = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z`)

// statusUntimed replaces every time in a command's output with TIME, so
// that a test can compare the rest exactly.
func statusUntimed(out string) string { return statusTime.ReplaceAllString(out, "TIME") }

// thisBuild is how status names the build of the test binary.
var thisBuild = engine.BuildText(engine.ThisBuild())

// statusRecord is the absolute path of a record under dir's state directory.
func statusRecord(dir string, rel ...string) string {
	return filepath.Join(append([]string{dir, ".custodian"}, rel...)...)
}

// statusBothLenses writes valid outputs for claims and assumptions.
func statusBothLenses(t *testing.T, dir string) {
	t.Helper()
	writeOutput(t, dir, "claims.md", valid)
	writeOutput(t, dir, "assumptions.md", valid)
}

func TestStatusPrintsWhereTheRunStands(t *testing.T) {
	tests := []struct {
		name     string
		scenario string
		course   func(t *testing.T, dir string) // brings the run to the point shown
		want     func(dir string) string
	}{
		{
			name: "before the first step", scenario: "clean",
			course: func(*testing.T, string) {},
			want: func(dir string) string {
				return lines(
					"0 jobs",
					"run: "+dir,
					"definition: trial (scenario=clean)",
					"build: started by "+thisBuild+"; never stepped",
					"last step: none",
					"agent orchestrator: step: no step has run",
					"operator: nothing",
				)
			},
		},
		{
			name: "after a launch", scenario: "clean",
			course: func(t *testing.T, dir string) { ok(t, "step", dir) },
			want: func(dir string) string {
				return lines(
					"2 jobs: 2 awaited",
					"run: "+dir,
					"definition: trial (scenario=clean)",
					"build: started and last stepped by "+thisBuild,
					"last step: 1, launch, at TIME",
					"jobs:",
					"- assumptions: awaited, 1 attempt",
					"- claims: awaited, 1 attempt",
					"agent orchestrator: launch the workers of step 1 that have not started, wait for all of them, then step",
					"operator: nothing",
				)
			},
		},
		{
			name: "a retry after a refusal", scenario: "retry",
			course: func(t *testing.T, dir string) {
				ok(t, "step", dir)
				statusBothLenses(t, dir)
				ok(t, "step", dir)
				writeOutput(t, dir, "reconciled.md", valid)
				ok(t, "step", dir)
			},
			want: func(dir string) string {
				return lines(
					"3 jobs: 2 accepted, 1 awaited",
					"run: "+dir,
					"definition: trial (scenario=retry)",
					"build: started and last stepped by "+thisBuild,
					"last step: 3, launch, at TIME",
					"jobs:",
					"- assumptions: accepted, 1 attempt",
					"- claims: accepted, 1 attempt",
					"- reconcile: awaited, 2 attempts",
					"  last failure: the output was refused by its validator (validator-refused)",
					"agent orchestrator: launch the workers of step 3 that have not started, wait for all of them, then step",
					"operator: nothing",
				)
			},
		},
		{
			name: "blocked, a repair permitted", scenario: "problem",
			course: func(t *testing.T, dir string) {
				ok(t, "step", dir)
				statusBothLenses(t, dir)
				ok(t, "step", dir)
				writeOutput(t, dir, "notes-summary.problem.md", "notes.md is not there\n")
				ok(t, "step", dir)
			},
			want: func(dir string) string {
				return lines(
					"3 jobs: 2 accepted, 1 blocked",
					"run: "+dir,
					"definition: trial (scenario=problem)",
					"build: started and last stepped by "+thisBuild,
					"last step: 3, blocked, at TIME",
					"jobs:",
					"- assumptions: accepted, 1 attempt",
					"- claims: accepted, 1 attempt",
					"- notes: blocked, 1 attempt",
					"  block: the worker wrote a problem report (problem-report); permits a repair",
					"    record: "+statusRecord(dir, "jobs", "notes", "block-1.md"),
					"agent orchestrator: repair within the scope, report each repair, then step; or stop (notes)",
					"operator: if the agent orchestrator stopped, fix the cause, then: custodian step "+dir,
				)
			},
		},
		{
			name: "stopped", scenario: "stop-only",
			course: func(t *testing.T, dir string) {
				ok(t, "step", dir)
				statusBothLenses(t, dir)
				ok(t, "step", dir)
				writeOutput(t, dir, "assumptions.md", valid)
				ok(t, "step", dir)
			},
			want: func(dir string) string {
				return lines(
					"2 jobs: 1 accepted, 1 stopped",
					"run: "+dir,
					"definition: trial (scenario=stop-only)",
					"build: started and last stepped by "+thisBuild,
					"last step: 3, blocked, at TIME",
					"jobs:",
					"- assumptions: stopped, 2 attempts",
					"  block: the output was refused by its validator, attempt 2 of 2 (validator-refused); permits only stopping",
					"    record: "+statusRecord(dir, "jobs", "assumptions", "block-1.md"),
					"- claims: accepted, 1 attempt",
					"agent orchestrator: stop and report it: a block permits only stopping (assumptions)",
					"operator: fix the cause, then: custodian release "+dir+" assumptions",
				)
			},
		},
		{
			name: "released", scenario: "stop-only",
			course: func(t *testing.T, dir string) {
				ok(t, "step", dir)
				statusBothLenses(t, dir)
				ok(t, "step", dir)
				writeOutput(t, dir, "assumptions.md", valid)
				ok(t, "step", dir)
				ok(t, "release", dir, "assumptions")
			},
			want: func(dir string) string {
				return lines(
					"2 jobs: 1 accepted, 1 pending",
					"run: "+dir,
					"definition: trial (scenario=stop-only)",
					"build: started and last stepped by "+thisBuild,
					"last step: 3, blocked, at TIME",
					"jobs:",
					"- assumptions: pending, 2 attempts",
					"  last failure: the output was refused by its validator, attempt 2 of 2 (validator-refused)",
					"- claims: accepted, 1 attempt",
					"since step 3: the operator released assumptions",
					"agent orchestrator: step: after step 3 the operator released assumptions",
					"operator: nothing",
				)
			},
		},
		{
			name: "done, then an input and an output changed", scenario: "clean",
			course: func(t *testing.T, dir string) {
				ok(t, "step", dir)
				statusBothLenses(t, dir)
				ok(t, "step", dir)
				writeOutput(t, dir, "reconciled.md", valid)
				require.Equal(t, "done\n", ok(t, "step", dir))
				writeOutput(t, dir, "source.md", "Another paragraph.\n")
				writeOutput(t, dir, "reconciled.md", valid+"- one more\n")
			},
			want: func(dir string) string {
				return lines(
					"3 jobs: 3 accepted",
					"run: "+dir,
					"definition: trial (scenario=clean)",
					"build: started and last stepped by "+thisBuild,
					"last step: 3, done, at TIME",
					"jobs:",
					"- assumptions: accepted, 1 attempt",
					"  changed since accepted: input source.md",
					"- claims: accepted, 1 attempt",
					"  changed since accepted: input source.md",
					"- reconcile: accepted, 1 attempt",
					"  changed since accepted: output reconciled.md",
					"agent orchestrator: step: what was accepted changed after the run was done at step 3 "+
						"(assumptions, claims, reconcile); the next step judges it again",
					"operator: nothing",
				)
			},
		},
		{
			name: "done", scenario: "clean",
			course: func(t *testing.T, dir string) {
				ok(t, "step", dir)
				statusBothLenses(t, dir)
				ok(t, "step", dir)
				writeOutput(t, dir, "reconciled.md", valid)
				require.Equal(t, "done\n", ok(t, "step", dir))
			},
			want: func(dir string) string {
				return lines(
					"3 jobs: 3 accepted",
					"run: "+dir,
					"definition: trial (scenario=clean)",
					"build: started and last stepped by "+thisBuild,
					"last step: 3, done, at TIME",
					"jobs:",
					"- assumptions: accepted, 1 attempt",
					"- claims: accepted, 1 attempt",
					"- reconcile: accepted, 1 attempt",
					"agent orchestrator: nothing: the run is finished",
					"operator: nothing",
				)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := trialRun(t, tt.scenario)
			tt.course(t, dir)
			assert.Equal(t, tt.want(dir), statusUntimed(ok(t, "status", dir)))
		})
	}
}

// statusPublishing is a definition whose one effect, publish, fails after
// it has begun while the file "down" is in the run, and whose recognizer
// cannot tell what took place: an uncertain effect, made in process.
func statusPublishing(t *testing.T) *workflow.Registry {
	t.Helper()
	reg, err := workflow.NewRegistry(&workflow.Definition{
		Name: "publishing",
		Run: func(ctx *workflow.Context) error {
			down := ctx.Path("down")
			ctx.Effect("publish", func() error {
				if _, err := os.Stat(down); err == nil {
					return errors.New("the publisher hung up")
				}
				return nil
			}, workflow.EffectInputs("release.md"),
				workflow.Recognize(func() (workflow.Recognition, error) { return workflow.Unknown, nil }))
			return nil
		},
	})
	require.NoError(t, err)
	return reg
}

func TestStatusPrintsEffects(t *testing.T) {
	reg := statusPublishing(t)
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	writeOutput(t, dir, "release.md", "v1\n")
	writeOutput(t, dir, "down", "")
	status := func() string {
		t.Helper()
		r := run(t, reg, "status", dir)
		require.Equal(t, engine.ExitOK, r.code, r.stderr)
		return statusUntimed(r.stdout)
	}
	step := func() {
		t.Helper()
		r := run(t, reg, "step", dir)
		require.Equal(t, engine.ExitOK, r.code, r.stderr)
	}
	require.Equal(t, engine.ExitOK, run(t, reg, "start", "publishing", "--run", dir).code)

	// The effect began and failed: the workflow is blocked, a repair permitted.
	step()
	assert.Equal(t, lines(
		"0 jobs",
		"run: "+dir,
		"definition: publishing (no parameters)",
		"build: started and last stepped by "+thisBuild,
		"last step: 1, blocked, at TIME",
		"workflow: blocked: error: effect publish: the publisher hung up (workflow-error); permits a repair",
		"  record: "+statusRecord(dir, "workflow", "block-1.md"),
		"effects:",
		"- publish: started, 1 run, by step at TIME",
		"agent orchestrator: repair within the scope, report each repair, then step; or stop (workflow)",
		"operator: if the agent orchestrator stopped, fix the cause, then: custodian step "+dir,
	), status())

	// The next step cannot tell whether it took place.
	require.NoError(t, os.Remove(filepath.Join(dir, "down")))
	writeOutput(t, dir, "release.md", "v2\n")
	step()
	assert.Equal(t, lines(
		"0 jobs",
		"run: "+dir,
		"definition: publishing (no parameters)",
		"build: started and last stepped by "+thisBuild,
		"last step: 2, uncertain, at TIME",
		"effects:",
		"- publish: started, 1 run, by step at TIME",
		"  inputs changed since: release.md",
		"  uncertain: the effect started and its completion was not recorded; the recognizer could not establish whether it took place",
		"agent orchestrator: stop and report it: the fate of an effect is uncertain (publish)",
		"operator: establish whether effect publish took place, then: custodian resolve "+dir+" publish completed|absent (absent: it runs again at the next step that reaches it, so remove any part of it that took place first)",
	), status())

	// The operator resolves it; the agent may step again.
	require.Equal(t, engine.ExitOK, run(t, reg, "resolve", dir, "publish", "completed").code)
	assert.Equal(t, lines(
		"0 jobs",
		"run: "+dir,
		"definition: publishing (no parameters)",
		"build: started and last stepped by "+thisBuild,
		"last step: 2, uncertain, at TIME",
		"effects:",
		"- publish: completed, 1 run, by operator at TIME",
		"since step 2: the operator resolved effect publish",
		"agent orchestrator: step: after step 2 the operator resolved effect publish",
		"operator: nothing",
	), status())

	// Its input changes after it completed: it blocks, only stopping permitted.
	step()
	writeOutput(t, dir, "release.md", "v3\n")
	step()
	assert.Equal(t, lines(
		"0 jobs",
		"run: "+dir,
		"definition: publishing (no parameters)",
		"build: started and last stepped by "+thisBuild,
		"last step: 4, blocked, at TIME",
		"effects:",
		"- publish: completed, 1 run, by operator at TIME",
		"  inputs changed since: release.md",
		"  block: the effect is completed and its inputs have changed since: input release.md (effect-inputs-changed); permits only stopping",
		"    record: "+statusRecord(dir, "effect-blocks", "publish.md"),
		"agent orchestrator: stop and report it: a block permits only stopping (effect publish)",
		"operator: establish what took place, then: custodian resolve "+dir+" publish completed|absent (absent: it runs again at the next step that reaches it, so remove any part of it that took place first)",
	), status())
}

// status --json prints the same Status the engine returns, as one object.
func TestStatusJSONDecodesIntoAStatus(t *testing.T) {
	dir := blockedRun(t, "stop-only")
	ok(t, "step", dir)

	out := ok(t, "status", dir, "--json")
	require.True(t, strings.HasSuffix(out, "}\n"), out)
	assert.Equal(t, 1, strings.Count(out, "\n"), "one object on one line")
	var got engine.Status
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&got))

	o, err := engine.Open(definitions.Builtin(), dir)
	require.NoError(t, err)
	want, err := o.Status()
	require.NoError(t, err)
	assert.Equal(t, want, got)
	require.Len(t, got.Jobs, 2)
	assert.Equal(t, engine.JobStopped, got.Jobs[0].State)
	assert.Equal(t, "fix the cause, then: custodian release "+dir+" assumptions", got.Operator)

	// The flag may come first, too.
	assert.Equal(t, out, ok(t, "status", "--json", dir))
}

// Status and log read; they take no lock, so they answer while another
// process holds it, and write nothing either way.
func TestStatusAndLogWriteNothingAndAnswerWhileBusy(t *testing.T) {
	dir := blockedRun(t, "stop")
	ok(t, "step", dir)
	for _, locked := range []bool{false, true} {
		if locked {
			lock := flock.New(filepath.Join(dir, ".custodian", "lock"))
			held, err := lock.TryLock()
			require.NoError(t, err)
			require.True(t, held)
			t.Cleanup(func() { _ = lock.Unlock() })
			requireFailure(t, custodian(t, "step", dir), engine.ExitBusy, "")
		}
		for _, args := range [][]string{{"status", dir}, {"status", dir, "--json"}, {"status", dir, "--job", "assumptions"},
			{"status", dir, "--job", "assumptions", "--json"}, {"log", dir}} {
			before := listing(t, dir)
			assert.NotEmpty(t, ok(t, args...))
			assert.Equal(t, before, listing(t, dir), "%v changed the run (locked: %v)", args, locked)
		}
	}
}

// A record that cannot be trusted is never shown as an ordinary status.
func TestStatusAndLogOfUntrustedRecordsExit4(t *testing.T) {
	for _, record := range []string{"state.json", "run.json", filepath.Join("history", "1.jsonl")} {
		for _, command := range [][]string{{"status"}, {"status", "--job", "claims"}, {"log"}, {"log", "--follow"}} {
			t.Run(strings.Join(command, " ")+" "+record, func(t *testing.T) {
				dir := trialRun(t, "clean")
				ok(t, "step", dir)
				writeOutput(t, dir, filepath.Join(".custodian", record), "garbage\n")
				before := listing(t, dir)

				r := custodian(t, append(command, dir)...)
				requireFailure(t, r, engine.ExitUntrusted, "do not edit anything under .custodian/; give this message to the operator")
				assert.Contains(t, r.stderr, record)
				assert.Equal(t, before, listing(t, dir))
			})
		}
	}
}

// statusUsage and logUsage are the usage lines of status and log, the
// hints of their usage errors.
const statusUsage = "custodian status RUN [--job NAME] [--json]"

const logUsage = "custodian log RUN [--job NAME] [--since STEP] [--follow]"

func TestStatusAndLogMalformedArgumentsExit2(t *testing.T) {
	dir := trialRun(t, "clean")
	tests := []struct {
		args  []string
		usage string
	}{
		{[]string{"status"}, statusUsage},
		{[]string{"status", dir, dir}, statusUsage},
		{[]string{"status", dir, "--bogus"}, statusUsage},
		{[]string{"status", dir, "--json=maybe"}, statusUsage},
		{[]string{"status", dir, "--job"}, statusUsage},
		{[]string{"status", dir, "--job", ""}, statusUsage},
		{[]string{"status", dir, "--job", "bad \xff byte"}, "give the value as UTF-8"},
		{[]string{"log"}, logUsage},
		{[]string{"log", dir, dir}, logUsage},
		{[]string{"log", dir, "--json"}, logUsage},
		{[]string{"log", dir, "--job"}, logUsage},
		{[]string{"log", dir, "--job", ""}, logUsage},
		{[]string{"log", dir, "--follow=maybe"}, logUsage},
		{[]string{"log", dir, "--follow", "--since", "-1"}, logUsage},
		{[]string{"log", dir, "--since"}, logUsage},
		{[]string{"log", dir, "--since", "two"}, logUsage},
		{[]string{"log", dir, "--since", "-1"}, logUsage},
		{[]string{"log", dir, "--job", "bad \xff byte"}, "give the value as UTF-8"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			before := listing(t, dir)
			r := custodian(t, tt.args...)
			hint := tt.usage
			if strings.HasPrefix(hint, "custodian ") {
				hint = "usage: " + hint
			}
			requireFailure(t, r, engine.ExitUsage, hint)
			assert.Equal(t, before, listing(t, dir))
		})
	}
}
