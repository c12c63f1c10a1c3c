package shell_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prompt is the absolute path of a job's n-th prompt file in dir.
func prompt(dir, job string, n int) string {
	return filepath.Join(dir, ".custodian", "jobs", job, fmt.Sprintf("prompt-%d.md", n))
}

// lines joins lines, each ended by a newline: a command's expected output.
func lines(l ...string) string { return strings.Join(l, "\n") + "\n" }

// blockedRun drives a run of scenario (stop or stop-only) to the block on
// assumptions, whose validator refuses everything: two attempts, refused.
func blockedRun(t *testing.T, scenario string) string {
	t.Helper()
	dir := trialRun(t, scenario)
	ok(t, "step", dir)
	writeOutput(t, dir, "claims.md", valid)
	writeOutput(t, dir, "assumptions.md", valid)
	require.Equal(t, lines("launch", "- assumptions: `"+prompt(dir, "assumptions", 2)+"`"), ok(t, "step", dir))
	writeOutput(t, dir, "assumptions.md", valid)
	return dir
}

func TestStepPrintsLaunch(t *testing.T) {
	t.Run("without launch parameters", func(t *testing.T) {
		dir := trialRun(t, "clean")
		assert.Equal(t, lines(
			"launch",
			"- assumptions: `"+prompt(dir, "assumptions", 1)+"`",
			"- claims: `"+prompt(dir, "claims", 1)+"`",
		), ok(t, "step", dir))
	})
	t.Run("with launch parameters", func(t *testing.T) {
		dir := trialRun(t, "parameters", "--launch", "model=small", "--launch", "tools=read, write")
		assert.Equal(t, lines(
			"launch",
			"- assumptions: `"+prompt(dir, "assumptions", 1)+"`",
			"- claims: `"+prompt(dir, "claims", 1)+"` launch={\"model\":\"small\",\"tools\":\"read, write\"}",
		), ok(t, "step", dir))
	})
	t.Run("the next job", func(t *testing.T) {
		dir := trialRun(t, "clean")
		ok(t, "step", dir)
		writeOutput(t, dir, "claims.md", valid)
		writeOutput(t, dir, "assumptions.md", valid)
		assert.Equal(t, lines("launch", "- reconcile: `"+prompt(dir, "reconcile", 1)+"`"), ok(t, "step", dir))
	})
}

func TestStepPrintsBlocked(t *testing.T) {
	tests := []struct {
		scenario  string
		permitted string
	}{
		{"stop", "  permitted: repair within this scope: " + workflow.DefaultRepairScope},
		{"stop-only", "  permitted: stop and report to the operator"},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			dir := blockedRun(t, tt.scenario)
			assert.Equal(t, lines(
				"blocked",
				"- assumptions: the output was refused by its validator, attempt 2 of 2",
				"  record: "+filepath.Join(dir, ".custodian", "jobs", "assumptions", "block-1.md"),
				tt.permitted,
			), ok(t, "step", dir))
		})
	}
}

func TestStepPrintsDone(t *testing.T) {
	dir := trialRun(t, "clean")
	ok(t, "step", dir)
	writeOutput(t, dir, "claims.md", valid)
	writeOutput(t, dir, "assumptions.md", valid)
	ok(t, "step", dir)
	writeOutput(t, dir, "reconciled.md", valid)
	assert.Equal(t, "done\n", ok(t, "step", dir))
	assert.Equal(t, "done\n", ok(t, "step", dir), "a done run stays done")
}

// stepJSON runs step --json, with the flag first or last, and requires one
// line.
func stepJSON(t *testing.T, dir string, flagFirst bool) string {
	t.Helper()
	args := []string{"step", dir, "--json"}
	if flagFirst {
		args = []string{"step", "--json", dir}
	}
	out := ok(t, args...)
	require.True(t, strings.HasSuffix(out, "}\n"), out)
	require.Equal(t, 1, strings.Count(out, "\n"), "step --json printed more than one line: %q", out)
	return out
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestStepJSON(t *testing.T) {
	handout := func(dir, job string, attempt int, output string, launch any) map[string]any {
		return map[string]any{
			"name":    job,
			"attempt": attempt,
			"prompt":  prompt(dir, job, attempt),
			"output":  filepath.Join(dir, output+".md"),
			"problem": filepath.Join(dir, output+".problem.md"),
			"launch":  launch,
		}
	}
	block := func(dir, permitted string) map[string]any {
		return map[string]any{
			"subject":   "assumptions",
			"kind":      "validator-refused",
			"reason":    "the output was refused by its validator, attempt 2 of 2",
			"record":    filepath.Join(dir, ".custodian", "jobs", "assumptions", "block-1.md"),
			"permitted": permitted,
			"scope":     workflow.DefaultRepairScope,
		}
	}
	for _, flagFirst := range []bool{false, true} {
		name := "flag last"
		if flagFirst {
			name = "flag first"
		}
		t.Run(name, func(t *testing.T) {
			t.Run("launch", func(t *testing.T) {
				dir := trialRun(t, "parameters", "--launch", "model=small")
				assert.JSONEq(t, marshal(t, map[string]any{
					"outcome": "launch",
					"jobs": []any{
						handout(dir, "assumptions", 1, "assumptions", map[string]any{}),
						handout(dir, "claims", 1, "claims", map[string]any{"model": "small"}),
					},
				}), stepJSON(t, dir, flagFirst))
			})
			t.Run("blocked", func(t *testing.T) {
				for scenario, permitted := range map[string]string{"stop": "repair", "stop-only": "stop"} {
					dir := blockedRun(t, scenario)
					assert.JSONEq(t, marshal(t, map[string]any{
						"outcome": "blocked",
						"blocks":  []any{block(dir, permitted)},
					}), stepJSON(t, dir, flagFirst), scenario)
				}
			})
			t.Run("done", func(t *testing.T) {
				dir := trialRun(t, "clean")
				ok(t, "step", dir)
				writeOutput(t, dir, "claims.md", valid)
				writeOutput(t, dir, "assumptions.md", valid)
				ok(t, "step", dir)
				writeOutput(t, dir, "reconciled.md", valid)
				assert.Equal(t, "{\"outcome\":\"done\"}\n", stepJSON(t, dir, flagFirst))
			})
		})
	}
}
