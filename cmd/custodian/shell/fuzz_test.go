package shell_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The command line's values are data: a KEY=VALUE given to --param or
// --launch is kept exactly as given, or refused as a usage error (exit 2)
// before anything is written. Nothing in it may crash the shell (an
// internal error is exit 1) or start a run that the run's own commands
// then refuse to read.

// keyValues are seeds for both flags: ordinary pairs, and the edges of the
// syntax and of text.
var keyValues = []string{
	"scenario=clean", "scenario=retry", "scenario=busy", "scenario=", "scenario=clean=extra", "scenario=clean\n",
	`launch={"model":"small"}`, "launch=", "launch=[]", "launch=null", "hold=5", "hold=-1", "hold=99999999999999999999",
	"note= a, b=c ", "Bad Key=x", "model=small", "model=", "a b=c", `k="quoted"`, "k=\u2028line", "<k>=&amp;",
	"k=\xff", "k\xc3=v", "model=sm\xc0\xafall", "=v", "=", "novalue", "", "-", "--", "--help", "-h=1", "k=\x00",
}

// startedWith requires what a command that started a run must have done
// with a KEY=VALUE it was given, and returns the run's parameters.
func startedWith(t *testing.T, r result, dir, given string) map[string]string {
	t.Helper()
	assert.NotContains(t, r.stderr, "internal error")
	require.Contains(t, []int{0, 2}, r.code, "stdout %q, stderr %q", r.stdout, r.stderr)
	if !utf8.ValidString(given) {
		require.Equal(t, 2, r.code, "a value that is not UTF-8 was taken")
	}
	if r.code == 2 {
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "\ncustodian: hint: ")
		assert.NoFileExists(t, filepath.Join(dir, ".custodian", "run.json"), "a refused command started a run")
		return nil
	}
	// The run it started can be read by the commands that read a run.
	for _, command := range []string{"status", "log"} {
		rr := custodian(t, command, dir)
		require.Equal(t, 0, rr.code, "custodian %s of a run started with %q: %s", command, given, rr.stderr)
	}
	return runParams(t, dir)
}

func FuzzStartParam(f *testing.F) {
	for _, kv := range keyValues {
		f.Add(kv, false)
		f.Add(kv, true)
	}
	f.Fuzz(func(t *testing.T, value string, joined bool) {
		dir := filepath.Join(t.TempDir(), "run")
		args := []string{"start", "trial", "--run", dir, "--param", value}
		if joined {
			args = []string{"start", "trial", "--run", dir, "--param=" + value}
		}
		r := custodian(t, args...)
		params := startedWith(t, r, dir, value)
		if params == nil {
			return
		}
		assert.Equal(t, dir+"\n", r.stdout)
		key, val, found := strings.Cut(value, "=")
		require.True(t, found, "%q is not KEY=VALUE, and was taken", value)
		got, ok := params[key]
		require.True(t, ok, "run.json has no parameter %q", key)
		assert.Equal(t, []byte(val), []byte(got), "run.json holds other bytes than were given")
	})
}

func FuzzTrialSetupLaunch(f *testing.F) {
	for _, kv := range keyValues {
		f.Add(kv, false)
		f.Add(kv, true)
	}
	f.Fuzz(func(t *testing.T, value string, joined bool) {
		dir := filepath.Join(t.TempDir(), "run")
		args := []string{"trial", "setup", "parameters", "--run", dir, "--launch", value}
		if joined {
			args = []string{"trial", "setup", "parameters", "--run", dir, "--launch=" + value}
		}
		r := custodian(t, args...)
		params := startedWith(t, r, dir, value)
		if params == nil {
			if r.code == 2 {
				// Setup writes the scenario's files before it starts the
				// run; a refused one must not have made the directory at
				// all.
				_, err := os.Stat(dir)
				assert.True(t, os.IsNotExist(err), "a refused setup made %s", dir)
			}
			return
		}
		assert.Equal(t, "run: "+dir+"\n", r.stdout)
		key, val, found := strings.Cut(value, "=")
		require.True(t, found, "%q is not KEY=VALUE, and was taken", value)
		var launch map[string]any
		require.NoError(t, json.Unmarshal([]byte(params["launch"]), &launch), "the launch parameter %q", params["launch"])
		got, ok := launch[key].(string)
		require.True(t, ok, "the launch parameters %s have no %q", params["launch"], key)
		assert.Equal(t, []byte(val), []byte(got), "the launch parameter holds other bytes than were given")
	})
}
