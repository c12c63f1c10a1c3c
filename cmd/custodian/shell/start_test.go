package shell_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runParams reads the parameters a run recorded in run.json.
func runParams(t *testing.T, dir string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".custodian", "run.json"))
	require.NoError(t, err)
	var rec struct {
		Definition string            `json:"definition"`
		Params     map[string]string `json:"params"`
	}
	require.NoError(t, json.Unmarshal(data, &rec))
	require.Equal(t, "trial", rec.Definition)
	return rec.Params
}

func TestStartKeepsParams(t *testing.T) {
	tests := []struct {
		name string
		args func(dir string) []string
		want map[string]string
	}{
		{
			name: "flags last",
			args: func(dir string) []string {
				return []string{"start", "trial", "--run", dir, "--param", "scenario=retry", "--param", `launch= {"a": "b, c=d "} `}
			},
			want: map[string]string{"scenario": "retry", "launch": ` {"a": "b, c=d "} `},
		},
		{
			name: "flags first",
			args: func(dir string) []string {
				return []string{"start", "--param", "launch={\"a\":1,\"b\":2}", "--run=" + dir, "trial"}
			},
			want: map[string]string{"launch": "{\"a\":1,\"b\":2}"},
		},

		{
			name: "none",
			args: func(dir string) []string { return []string{"start", "trial", "--run", dir} },
			want: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			assert.Equal(t, dir+"\n", ok(t, tt.args(dir)...))
			assert.Equal(t, tt.want, runParams(t, dir))
		})
	}
}

// A definition declares its parameters: start refuses any other, and an
// invalid one, with exit 2 and a hint that lists them; nothing is started.
func TestStartRefusesAParameterTheDefinitionDoesNotTake(t *testing.T) {
	const hint = "the parameters of trial are: scenario (the course the run takes: clean, retry, problem, stop, stop-only, parameters, uncertain, busy; default clean), " +
		"launch (the claims job's launch parameters, a JSON object (scenario parameters); default {}), " +
		"hold (how many seconds the step holds the lock (scenario busy); default 90)"
	for name, param := range map[string]string{
		"undeclared":   "note=x",
		"an empty one": "scenario=",
		"invalid":      "launch=[1]",
		"not a number": "hold=soon",
		"misspelled":   "senario=clean",
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			r := custodian(t, "start", "trial", "--run", dir, "--param", param)
			requireFailure(t, r, engine.ExitUsage, hint)
			assert.NoFileExists(t, filepath.Join(dir, ".custodian", "run.json"))
		})
	}
}

func TestStartRefusesAStartedRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	ok(t, "start", "trial", "--run", dir, "--param", "scenario=clean")
	before := listing(t, dir)

	r := custodian(t, "start", "trial", "--run", dir, "--param", "scenario=retry")
	requireFailure(t, r, engine.ExitFailed, "give a new directory with --run")
	assert.Contains(t, r.stderr, "already started")
	assert.Equal(t, before, listing(t, dir))
	assert.Equal(t, map[string]string{"scenario": "clean"}, runParams(t, dir))
}

func TestStartRefusesAnUnknownDefinition(t *testing.T) {
	t.Chdir(t.TempDir())
	r := custodian(t, "start", "nope")
	requireFailure(t, r, engine.ExitFailed, "custodian definitions lists the definitions this binary carries")
	assert.NoDirExists(t, "runs")
}

func TestStartWithoutRunMakesFreshSortableDirectories(t *testing.T) {
	t.Chdir(t.TempDir())
	cwd, err := os.Getwd()
	require.NoError(t, err)

	var dirs []string
	for range 3 {
		dirs = append(dirs, strings.TrimSuffix(ok(t, "start", "trial"), "\n"))
	}
	for _, dir := range dirs {
		assert.Equal(t, filepath.Join(cwd, "runs"), filepath.Dir(dir))
		assert.True(t, strings.HasPrefix(filepath.Base(dir), "trial-"), dir)
		assert.FileExists(t, filepath.Join(dir, ".custodian", "run.json"))
	}
	assert.Len(t, map[string]bool{dirs[0]: true, dirs[1]: true, dirs[2]: true}, 3, "names repeat: %v", dirs)
	assert.True(t, sort.StringsAreSorted(dirs), "names do not sort by start: %v", dirs)
}
