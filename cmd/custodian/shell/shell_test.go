package shell_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/cmd/custodian/shell"
	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// valid passes every validator of the trial definition but the ones its
// scenarios make refuse everything.
const valid = "# Heading\n\n- a bullet\n"

// result is what one command printed and its exit status.
type result struct {
	stdout, stderr string
	code           int
}

// run runs the command line args through shell.Main with reg, in process.
func run(t *testing.T, reg *workflow.Registry, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := shell.Main(reg, append([]string{"custodian"}, args...), &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// custodian runs args with the built-in definitions.
func custodian(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, definitions.Builtin(), args...)
}

// ok runs args with the built-in definitions and requires exit status 0.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := custodian(t, args...)
	require.Equal(t, 0, r.code, "custodian %s: %s", strings.Join(args, " "), r.stderr)
	require.Empty(t, r.stderr)
	return r.stdout
}

// requireFailure requires that r exited with code, printed nothing on
// stdout and said why on stderr as "custodian: ...", with the hint when it
// is given.
func requireFailure(t *testing.T, r result, code int, hint string) {
	t.Helper()
	require.Equal(t, code, r.code, "stdout %q, stderr %q", r.stdout, r.stderr)
	assert.Empty(t, r.stdout)
	require.True(t, strings.HasPrefix(r.stderr, "custodian: "), "stderr %q", r.stderr)
	if hint != "" {
		assert.Contains(t, r.stderr, "\ncustodian: hint: "+hint)
	}
}

// trialRun sets up a run of the trial definition for scenario in a fresh
// directory, through the shell, and returns the directory.
func trialRun(t *testing.T, scenario string, flags ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	out := ok(t, append([]string{"trial", "setup", scenario, "--run", dir}, flags...)...)
	require.Equal(t, "run: "+dir+"\n", out)
	return dir
}

func writeOutput(t *testing.T, dir, rel, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644))
}

// stateOf returns the bytes of the run's state.json, which a run has from
// its start.
func stateOf(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".custodian", "state.json"))
	require.NoError(t, err)
	return string(b)
}

// listing returns every path under dir, relative, with its mode, time and
// bytes: what a command that must write nothing must leave exactly as it
// was.
func listing(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		entry := info.Mode().String() + " " + info.ModTime().String()
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			entry += " " + string(data)
		}
		out[rel] = entry
		return nil
	})
	require.NoError(t, err)
	return out
}

func TestMalformedArgumentsExit2(t *testing.T) {
	dir := trialRun(t, "clean")
	tests := []struct {
		name string
		args []string
	}{
		{"no command", nil},
		{"unknown command", []string{"bogus"}},
		{"help is not a command", []string{"help"}},
		{"unknown flag", []string{"--bogus"}},
		{"unknown flag before the run", []string{"step", "--bogus", dir}},
		{"unknown flag after the run", []string{"step", dir, "--bogus"}},
		{"a flag of another command", []string{"step", dir, "--job", "claims"}},
		{"bool flag with a value that is not one", []string{"step", dir, "--json=maybe"}},
		{"step without RUN", []string{"step"}},
		{"step with two runs", []string{"step", dir, dir}},
		{"start without a definition", []string{"start"}},
		{"param without a value", []string{"start", "trial", "--param", "novalue"}},
		{"param without a key", []string{"start", "trial", "--param", "=value"}},
		{"param given twice", []string{"start", "trial", "--param", "a=1", "--param", "a=2"}},
		{"flag without its argument", []string{"report", dir, "repair", "--text"}},
		{"report without an event", []string{"report", dir}},
		{"release without a subject", []string{"release", dir}},
		{"definitions with an argument", []string{"definitions", "trial"}},
		{"trial without a command", []string{"trial"}},
		{"unknown trial command", []string{"trial", "bogus"}},
		{"trial setup without a scenario", []string{"trial", "setup"}},
		{"launch without a value", []string{"trial", "setup", "parameters", "--launch", "model"}},
		{"hold that is not a number", []string{"trial", "setup", "busy", "--hold", "soon"}},
		{"hold of zero", []string{"trial", "setup", "busy", "--hold", "0"}},
		{"map without =", []string{"check", dir, "--map", "/a"}},
		{"map of a relative directory", []string{"check", dir, "--map", "a=/b"}},
		{"map that is not UTF-8", []string{"check", dir, "--map", "/a\xff=/b"}},
		{"drive without a worker", []string{"drive", dir}},
		{"drive of an unknown worker", []string{"drive", dir, "--worker", "bogus"}},
		{"drive exec without a command", []string{"drive", dir, "--worker", "exec"}},
		{"drive with an unknown placeholder", []string{"drive", dir, "--worker", "exec", "--command", "w {bogus}"}},
		{"drive with a negative timeout", []string{"drive", dir, "--worker", "exec", "--command", "w", "--timeout", "-1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			before := listing(t, dir)
			r := custodian(t, tt.args...)
			requireFailure(t, r, engine.ExitUsage, "")
			assert.Contains(t, r.stderr, "\ncustodian: hint: ")
			assert.Equal(t, before, listing(t, dir), "a malformed command changed the run")
			cwd, err := os.ReadDir(".")
			require.NoError(t, err)
			assert.Empty(t, cwd, "a malformed command made a run")
		})
	}
}

func TestUsageErrorsNameTheCommandAndItsUsage(t *testing.T) {
	r := custodian(t, "step")
	assert.Equal(t, "custodian: step: missing RUN\ncustodian: hint: usage: custodian step RUN [--json]\n", r.stderr)

	r = custodian(t, "bogus")
	assert.Equal(t, "custodian: unknown command \"bogus\"\ncustodian: hint: custodian --help lists the commands\n", r.stderr)

	r = custodian(t, "check", t.TempDir(), "--map", "/a")
	assert.Equal(t, "custodian: check: --map /a is not OLD=NEW\n"+
		"custodian: hint: give two absolute directories: --map /where/it/was=/where/it/is\n", r.stderr)

	r = custodian(t, "start", "trial", "--param", "novalue")
	assert.Equal(t, "custodian: start: --param \"novalue\" is not KEY=VALUE\n"+
		"custodian: hint: usage: custodian start DEFINITION [--run DIR] [--param KEY=VALUE]...\n", r.stderr)
}

func TestNotARunExits4AndWritesNothing(t *testing.T) {
	for _, args := range [][]string{
		{"step"}, {"step", "--json"}, {"report", "repair"}, {"release", "claims"},
		{"status"}, {"status", "--json"}, {"log"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			writeOutput(t, dir, "source.md", "not a run\n")
			require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
			before := listing(t, dir)

			line := append([]string{args[0], dir}, args[1:]...)
			requireFailure(t, custodian(t, line...), engine.ExitUntrusted, "check the path; start a run with custodian start")
			assert.Equal(t, before, listing(t, dir))

			missing := filepath.Join(dir, "missing")
			line = append([]string{args[0], missing}, args[1:]...)
			requireFailure(t, custodian(t, line...), engine.ExitUntrusted, "check the path")
			assert.NoFileExists(t, missing)
			assert.NoDirExists(t, missing)
		})
	}
}

func TestUntrustedRecordsExit4(t *testing.T) {
	tests := []struct {
		record string
		args   []string
	}{
		{"state.json", []string{"step"}},
		{"state.json", []string{"report", "repair"}},
		{"state.json", []string{"release", "claims"}},
		{"run.json", []string{"step"}},
		{"reports.jsonl", []string{"report", "stop"}},
	}
	for _, tt := range tests {
		t.Run(tt.record+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			dir := trialRun(t, "clean")
			ok(t, "step", dir)
			writeOutput(t, dir, filepath.Join(".custodian", tt.record), "garbage\n")
			before := listing(t, dir)

			r := custodian(t, append([]string{tt.args[0], dir}, tt.args[1:]...)...)
			requireFailure(t, r, engine.ExitUntrusted, "do not edit anything under .custodian/; give this message to the operator")
			assert.Contains(t, r.stderr, tt.record)
			assert.Equal(t, before, listing(t, dir))
		})
	}
}

// A run has state.json from its start: without it, even before the first
// step, the run is not taken for a new one.
func TestRunWithoutItsStateExits4(t *testing.T) {
	for _, args := range [][]string{{"step"}, {"report", "repair"}, {"release", "claims"}, {"status"}, {"log"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := trialRun(t, "clean")
			require.NoError(t, os.Remove(filepath.Join(dir, ".custodian", "state.json")))
			before := listing(t, dir)

			r := custodian(t, append([]string{args[0], dir}, args[1:]...)...)
			requireFailure(t, r, engine.ExitUntrusted, "do not edit anything under .custodian/; give this message to the operator")
			assert.Contains(t, r.stderr, "state.json")
			assert.Equal(t, before, listing(t, dir))
		})
	}
}

func TestBusyRunExits3(t *testing.T) {
	dir := trialRun(t, "clean")
	lock := flock.New(filepath.Join(dir, ".custodian", "lock"))
	locked, err := lock.TryLock()
	require.NoError(t, err)
	require.True(t, locked)
	t.Cleanup(func() { _ = lock.Unlock() })
	before := stateOf(t, dir)

	for _, args := range [][]string{{"step", dir}, {"report", dir, "repair"}, {"release", dir, "claims"}} {
		t.Run(args[0], func(t *testing.T) {
			r := custodian(t, args...)
			requireFailure(t, r, engine.ExitBusy, "another custodian process is working on this run; do not start a second loop and do not retry on your own: tell the operator")
			assert.Contains(t, r.stderr, "busy")
		})
	}
	assert.Equal(t, before, stateOf(t, dir), "a busy run's state changed")
}

func TestBrokenDefinitionExits5(t *testing.T) {
	twoOwners := &workflow.Definition{
		Name: "two-owners",
		Doc:  "names two jobs that write one file",
		Run: func(ctx *workflow.Context) error {
			ctx.Agent(workflow.Job{Name: "first", Prompt: "Write it.", Output: "same.md"})
			ctx.Agent(workflow.Job{Name: "second", Prompt: "Write it too.", Output: "same.md"})
			return nil
		},
	}
	reg, err := workflow.NewRegistry(twoOwners)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "run")
	r := run(t, reg, "start", "two-owners", "--run", dir)
	require.Equal(t, 0, r.code, r.stderr)
	before := listing(t, dir)

	r = run(t, reg, "step", dir)
	requireFailure(t, r, engine.ExitDefinition, "the definition's code must change; give this message to the operator")
	assert.Contains(t, r.stderr, "same.md")
	assert.Equal(t, before, listing(t, dir), "a step that broke a rule changed the run")
}

func TestRunOfAnotherBinaryIsRefused(t *testing.T) {
	dir := trialRun(t, "clean")
	other, err := workflow.NewRegistry(&workflow.Definition{Name: "other", Run: func(*workflow.Context) error { return nil }})
	require.NoError(t, err)
	before := stateOf(t, dir)

	r := run(t, other, "step", dir)
	requireFailure(t, r, engine.ExitFailed, "use the binary that started the run")
	assert.Equal(t, before, stateOf(t, dir), "a refused step changed the state")
}

func TestDefinitionsListsEveryDefinition(t *testing.T) {
	firstLine := func(d *workflow.Definition) string {
		line, _, _ := strings.Cut(d.Doc, "\n")
		return line
	}
	assert.Equal(t, "review  "+firstLine(definitions.Review)+"\n"+
		"  --param publish: the absolute directory the review is published to (required)\n"+
		"trial   "+firstLine(trial.Definition)+"\n"+
		"  --param scenario: the course the run takes: clean, retry, problem, stop, stop-only, parameters, uncertain, busy (default clean)\n"+
		"  --param launch: the claims job's launch parameters, a JSON object (scenario parameters) (default {})\n"+
		"  --param hold: how many seconds the step holds the lock (scenario busy) (default 90)\n", ok(t, "definitions"))

	patched, err := workflow.NewRegistry(&workflow.Definition{Name: "p", Doc: "patched", Patches: []string{"asks-for-risks", "shorter"},
		Run: func(*workflow.Context) error { return nil }})
	require.NoError(t, err)
	assert.Equal(t, "p  patched\n  patches: asks-for-risks, shorter\n", run(t, patched, "definitions").stdout)

	reg, err := workflow.NewRegistry(
		&workflow.Definition{Name: "review", Doc: "reviews a paper\nwith two lenses", Run: func(*workflow.Context) error { return nil }},
		&workflow.Definition{Name: "a", Doc: "one letter", Run: func(*workflow.Context) error { return nil }},
	)
	require.NoError(t, err)
	r := run(t, reg, "definitions")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "a       one letter\nreview  reviews a paper\n", r.stdout)
}

func TestVersionNamesTheBuild(t *testing.T) {
	b := engine.ThisBuild()
	require.NotEmpty(t, b.ID, "a test binary has a build ID")
	assert.Equal(t, "custodian version "+engine.Version+"\nbuild: "+engine.BuildText(b)+"\nbuild id: "+b.ID+"\ngo: "+
		runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+"\n", ok(t, "version"))

	var v struct {
		Version string
		Build   engine.Build
		Text    string
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, "version", "--json")), &v))
	assert.Equal(t, engine.Version, v.Version)
	assert.Equal(t, b, v.Build)
	assert.Equal(t, engine.BuildText(b), v.Text)
	requireFailure(t, custodian(t, "version", "extra"), 2, "")
}

func TestVersionAndHelp(t *testing.T) {
	assert.Equal(t, "custodian version "+engine.Version+"\n", ok(t, "--version"))

	dir := trialRun(t, "clean")
	before := stateOf(t, dir)
	tests := []struct {
		args  []string
		usage string
	}{
		{[]string{"--help"}, "custodian COMMAND [arguments]"},
		{[]string{"step", "--help"}, "custodian step RUN [--json]"},
		{[]string{"step", dir, "--help"}, "custodian step RUN [--json]"},
		{[]string{"report", "-h"}, "custodian report RUN EVENT [--job NAME] [--text TEXT]"},
		{[]string{"trial", "setup", "--help"}, "custodian trial setup SCENARIO [--run DIR] [--launch KEY=VALUE]... [--hold SECONDS]"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			assert.Contains(t, ok(t, tt.args...), "USAGE:\n   "+tt.usage+"\n")
		})
	}
	assert.Equal(t, before, stateOf(t, dir), "help ran the step")
}

// A panic that reaches the shell is a defect of the engine: it is reported
// as one, with exit 1, never with Go's own status 2, which means a malformed
// command line here. A nil registry is such a defect.
func TestEnginePanicIsAnInternalError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := shell.Main(nil, []string{"custodian", "definitions"}, &stdout, &stderr)
	assert.Equal(t, engine.ExitFailed, code)
	assert.Contains(t, stderr.String(), "custodian: internal error: ")
	assert.Contains(t, stderr.String(), "custodian: hint: this is a defect in custodian")
}
