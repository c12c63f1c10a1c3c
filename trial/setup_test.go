package trial_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// setupParams reads the parameters a run set up by trial.Setup recorded.
func setupParams(t *testing.T, dir string) map[string]string {
	t.Helper()
	run, err := store.Open(dir)
	require.NoError(t, err)
	require.Equal(t, trial.DefinitionName, run.Record.Definition)
	return run.Record.Params
}

func TestSetupPlacesWhatEachScenarioNeeds(t *testing.T) {
	tests := []struct {
		scenario string
		opts     trial.SetupOptions
		files    []string // besides source.md
		missing  []string
		markers  []string // beside the run directory
		params   map[string]string
	}{
		{scenario: "clean", missing: []string{"notes.md"}, params: map[string]string{"scenario": "clean"}},
		{scenario: "retry", params: map[string]string{"scenario": "retry"}},
		{scenario: "stop", params: map[string]string{"scenario": "stop"}},
		{scenario: "stop-only", params: map[string]string{"scenario": "stop-only"}},
		{
			scenario: "problem",
			files:    []string{"incoming/notes.md"},
			missing:  []string{"notes.md"},
			params:   map[string]string{"scenario": "problem"},
		},
		{
			scenario: "parameters",
			opts:     trial.SetupOptions{Launch: map[string]string{"tools": "read, write", "model": "small"}},
			params:   map[string]string{"scenario": "parameters", "launch": `{"model":"small","tools":"read, write"}`},
		},
		{
			scenario: "parameters",
			params:   map[string]string{"scenario": "parameters", "launch": `{}`},
		},
		{
			scenario: "uncertain",
			markers:  []string{".interrupt"},
			params:   map[string]string{"scenario": "uncertain"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			opts := tt.opts
			opts.Scenario, opts.Dir = tt.scenario, dir
			got, err := trial.Setup(definitions.Builtin(), opts)
			require.NoError(t, err)
			require.Equal(t, dir, got)

			source, err := os.ReadFile(filepath.Join(dir, "source.md"))
			require.NoError(t, err)
			assert.GreaterOrEqual(t, len(strings.Fields(string(source))), 50, "source.md is not a paragraph to analyse")
			for _, f := range tt.files {
				assert.FileExists(t, filepath.Join(dir, f))
			}
			for _, f := range tt.missing {
				assert.NoFileExists(t, filepath.Join(dir, f))
			}
			for _, m := range []string{".interrupt", ".hold", ".hold.log"} {
				if slices.Contains(tt.markers, m) {
					assert.FileExists(t, dir+m)
				} else {
					assert.NoFileExists(t, dir+m)
				}
			}
			assert.Equal(t, tt.params, setupParams(t, dir))
			run, err := store.Open(dir)
			require.NoError(t, err)
			defer run.Close()
			st, err := run.LoadState()
			require.NoError(t, err)
			want := store.NewState(engine.InputStateVersion)
			want.Run = run.Record.ID
			assert.Equal(t, want, st, "setup ran a step")
		})
	}
}

func TestSetupNamesRunsAtRandom(t *testing.T) {
	t.Chdir(t.TempDir())
	cwd, err := os.Getwd()
	require.NoError(t, err)
	name := regexp.MustCompile(`^run-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for _, scenario := range trial.Scenarios {
		if scenario == "busy" {
			continue // needs the binary; cmd/custodian tests it
		}
		dir, err := trial.Setup(definitions.Builtin(), trial.SetupOptions{Scenario: scenario})
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(cwd, "runs"), filepath.Dir(dir))
		assert.Regexp(t, name, filepath.Base(dir))
		for _, s := range trial.Scenarios {
			assert.NotContains(t, dir, s)
		}
		assert.False(t, seen[dir], "%s was made twice", dir)
		seen[dir] = true
	}
}

func TestSetupRefuses(t *testing.T) {
	started := filepath.Join(t.TempDir(), "run")
	_, err := trial.Setup(definitions.Builtin(), trial.SetupOptions{Scenario: "clean", Dir: started})
	require.NoError(t, err)
	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "mine.txt"), []byte("keep me\n"), 0o644))

	tests := []struct {
		name string
		opts trial.SetupOptions
		want error // nil: any error
	}{
		{"an unknown scenario", trial.SetupOptions{Scenario: "nope"}, engine.ErrRefused},
		{"launch parameters outside parameters", trial.SetupOptions{Scenario: "clean", Launch: map[string]string{"a": "b"}}, engine.ErrRefused},
		{"a hold outside busy", trial.SetupOptions{Scenario: "clean", Hold: 5}, engine.ErrRefused},
		{"a negative hold", trial.SetupOptions{Scenario: "busy", Hold: -1, Binary: "custodian"}, engine.ErrRefused},
		{"a started run", trial.SetupOptions{Scenario: "clean", Dir: started}, store.ErrExists},
		{"a directory with files", trial.SetupOptions{Scenario: "clean", Dir: full}, engine.ErrRefused},
		{"busy without the binary", trial.SetupOptions{Scenario: "busy"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			opts := tt.opts
			_, err := trial.Setup(definitions.Builtin(), opts)
			require.Error(t, err)
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
			}
			assert.NoDirExists(t, "runs")
		})
	}
	entries, err := os.ReadDir(full)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "setup wrote into a directory it refused")
	assert.Equal(t, map[string]string{"scenario": "clean"}, setupParams(t, started))
}

func TestSetupLaunchIsAJSONObjectOfStrings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	launch := map[string]string{"model": "small", "quote": `say "hi"`, "comma": "a,b"}
	_, err := trial.Setup(definitions.Builtin(), trial.SetupOptions{
		Scenario: "parameters", Dir: dir, Launch: launch,
	})
	require.NoError(t, err)
	var got map[string]string
	require.NoError(t, json.Unmarshal([]byte(setupParams(t, dir)["launch"]), &got))
	assert.Equal(t, launch, got)
}

func TestSetupWithoutTheTrialDefinitionMakesNothing(t *testing.T) {
	t.Chdir(t.TempDir())
	reg, err := workflow.NewRegistry(&workflow.Definition{Name: "other", Run: func(*workflow.Context) error { return nil }})
	require.NoError(t, err)
	_, err = trial.Setup(reg, trial.SetupOptions{Scenario: "clean"})
	require.ErrorIs(t, err, workflow.ErrUnknownDefinition)
	assert.NoDirExists(t, "runs")
}
