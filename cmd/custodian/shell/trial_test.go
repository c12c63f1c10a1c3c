package shell_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTrialSetupPrintsTheRunFirst(t *testing.T) {
	t.Chdir(t.TempDir())
	cwd, err := os.Getwd()
	require.NoError(t, err)

	out := ok(t, "trial", "setup", "problem")
	first, _, _ := strings.Cut(out, "\n")
	dir, found := strings.CutPrefix(first, "run: ")
	require.True(t, found, "first line %q", first)
	assert.Equal(t, filepath.Join(cwd, "runs"), filepath.Dir(dir))
	assert.Regexp(t, regexp.MustCompile(`^run-[0-9a-f]{12}$`), filepath.Base(dir))
	assert.FileExists(t, filepath.Join(dir, "incoming", "notes.md"))
	assert.Equal(t, lines(
		"launch",
		"- assumptions: `"+prompt(dir, "assumptions", 1)+"`",
		"- claims: `"+prompt(dir, "claims", 1)+"`",
	), ok(t, "step", dir))
}

func TestTrialSetupRefusals(t *testing.T) {
	started := trialRun(t, "clean")
	tests := []struct {
		name string
		args []string
		hint string
	}{
		{"an unknown scenario", []string{"nope"}, "the scenarios are: clean, retry, problem, stop, stop-only, parameters, uncertain, busy"},
		{"a started run", []string{"retry", "--run", started}, "give a new directory with --run"},
		{"launch parameters for another scenario", []string{"clean", "--launch", "model=small"}, "launch parameters are for the parameters scenario"},
		{"a hold for another scenario", []string{"clean", "--hold", "5"}, "a hold is for the busy scenario"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			requireFailure(t, custodian(t, append([]string{"trial", "setup"}, tt.args...)...), engine.ExitFailed, tt.hint)
			assert.NoDirExists(t, "runs")
		})
	}
	assert.Equal(t, map[string]string{"scenario": "clean"}, runParams(t, started))
}
