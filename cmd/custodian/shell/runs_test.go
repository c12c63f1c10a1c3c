package shell_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/internal/proc"
	"github.com/custodian-run/custodian/runlist"
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runsNotes is a definition of one job that declares patches.
func runsNotes(patches ...string) *workflow.Definition {
	return &workflow.Definition{
		Name: "notes", Doc: "summarizes notes.md", Patches: patches,
		Run: func(ctx *workflow.Context) error {
			ctx.Agent(workflow.Job{Name: "summary", Prompt: "Summarize the notes.", Output: "summary.md", Inputs: []string{"notes.md"}}).Wait()
			return nil
		},
	}
}

// runsRegistries returns the registry of the binary that started the
// tree's runs, and that of today's binary, which lists them: its notes
// declares the patch asks-for-owners, and it no longer carries gone.
func runsRegistries(t *testing.T) (started, listed *workflow.Registry) {
	t.Helper()
	gone := &workflow.Definition{Name: "gone", Doc: "since removed", Run: func(*workflow.Context) error { return nil }}
	started, err := workflow.NewRegistry(trial.Definition, runsNotes(), gone)
	require.NoError(t, err)
	listed, err = workflow.NewRegistry(trial.Definition, runsNotes("asks-for-owners"))
	require.NoError(t, err)
	return started, listed
}

// runsTrial sets up a trial run of scenario at root/rel with reg and takes
// n steps, writing valid outputs for every job after each.
func runsTrial(t *testing.T, reg *workflow.Registry, root, rel, scenario string, n int) string {
	t.Helper()
	dir := filepath.Join(root, rel)
	require.Equal(t, "run: "+dir+"\n", runOK(t, reg, "trial", "setup", scenario, "--run", dir))
	for range n {
		runOK(t, reg, "step", dir)
		for _, out := range []string{"claims.md", "assumptions.md", "reconciled.md"} {
			writeOutput(t, dir, out, valid)
		}
	}
	return dir
}

// runsOpen opens the run in dir with reg, for what only the engine's API
// does in process.
func runsOpen(t *testing.T, reg *workflow.Registry, dir string) *engine.Run {
	t.Helper()
	o, err := engine.Open(reg, dir)
	require.NoError(t, err)
	t.Cleanup(o.Close)
	return o
}

// runsTree makes a directory of runs in every state, and a directory that
// is not a run, and returns the registry to list it with.
func runsTree(t *testing.T, root string) *workflow.Registry {
	t.Helper()
	started, listed := runsRegistries(t)
	runsTrial(t, started, root, "launched", "clean", 1)
	runsTrial(t, started, root, "done", "clean", 3)
	runsTrial(t, started, root, "blocked", "stop", 3)

	// uncertain: a step ends inside publish, before it wrote anything;
	// half of it turns up, and the next step's recognizer cannot tell.
	dir := runsTrial(t, started, root, "uncertain", "uncertain", 2)
	require.NoError(t, os.Remove(trial.InterruptMarker(dir)))
	require.ErrorIs(t, runsOpen(t, started, dir).StepEndingIn("publish", false), engine.ErrEndedInEffect)
	require.NoError(t, os.Mkdir(dir+".published", 0o755))
	writeOutput(t, root, filepath.Join("uncertain.published", "reconciled.md"), valid)
	require.True(t, strings.HasPrefix(runOK(t, started, "step", dir), "uncertain\n"))

	dir = runsTrial(t, started, root, "abandoned", "clean", 1)
	runOK(t, started, "abandon", dir, "--text", "the source was withdrawn")

	dir = runsTrial(t, started, root, "driven", "clean", 1)
	start, err := proc.StartTime(os.Getpid())
	require.NoError(t, err)
	require.NoError(t, runsOpen(t, started, dir).Driver(engine.Process{Pid: os.Getpid(), Start: start}).Begin())

	dir = runsTrial(t, started, root, "untrusted", "clean", 1)
	writeOutput(t, dir, filepath.Join(".custodian", "state.json"), "garbage\n")

	runOK(t, started, "start", "gone", "--run", filepath.Join(root, "gone"))
	runOK(t, started, "start", "notes", "--run", filepath.Join(root, "notes"))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "plain", "sub"), 0o755))
	writeOutput(t, root, filepath.Join("plain", "sub", "notes.md"), valid)
	return listed
}

// runsSeparator parts the cells of a line of runs' text.
var runsSeparator = regexp.MustCompile(`  +`)

// runsCells splits runs' text into lines and each line into its cells,
// which two spaces or more part, with every time as TIME.
func runsCells(out string) [][]string {
	var rows [][]string
	sc := bufio.NewScanner(strings.NewReader(statusUntimed(out)))
	for sc.Scan() {
		rows = append(rows, runsSeparator.Split(sc.Text(), -1))
	}
	return rows
}

// runs lists every run under its directories in one line each: path,
// definition, state, jobs, last step and its build, the patches it lacks;
// aligned in columns, sorted by path.
func TestRunsListsEveryRun(t *testing.T) {
	root := t.TempDir()
	reg := runsTree(t, root)
	before := listing(t, root)

	out := runOK(t, reg, "runs", root)
	assert.Equal(t, before, listing(t, root), "runs changed the tree")
	by := "step 1 at TIME by " + thisBuild
	assert.Equal(t, [][]string{
		{filepath.Join(root, "abandoned"), "trial", "abandoned", "2 jobs: 2 awaited", by},
		{filepath.Join(root, "blocked"), "trial", "blocked", "2 jobs: 1 accepted, 1 blocked", "step 3 at TIME by " + thisBuild},
		{filepath.Join(root, "done"), "trial", "done", "3 jobs: 3 accepted", "step 3 at TIME by " + thisBuild},
		{filepath.Join(root, "driven"), "trial", "driven now", "2 jobs: 2 awaited", by},
		{filepath.Join(root, "gone"), "gone", "unreadable",
			"open run " + filepath.Join(root, "gone") + `: it runs definition "gone", which this binary does not carry`},
		{filepath.Join(root, "launched"), "trial", "in progress", "2 jobs: 2 awaited", by},
		{filepath.Join(root, "notes"), "notes", "in progress", "0 jobs", "never stepped", "lacks patch asks-for-owners"},
		{filepath.Join(root, "uncertain"), "trial", "uncertain", "3 jobs: 2 accepted, 1 awaited", "step 3 at TIME by " + thisBuild},
		{filepath.Join(root, "untrusted"), "trial", "unreadable",
			"record " + filepath.Join(root, "untrusted", ".custodian", "state.json") + " cannot be trusted: record is not an object"},
	}, runsCells(out))

	// The columns line up: the definition, the state and the jobs start
	// where every other line's do.
	var starts [][]int
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var at []int
		for _, sep := range runsSeparator.FindAllStringIndex(line, 3) {
			at = append(at, sep[1])
		}
		starts = append(starts, at)
	}
	for _, at := range starts {
		assert.Equal(t, starts[0], at, "the columns do not line up:\n%s", out)
	}
}

// --json prints one object a line, each an Entry as runlist.Find gives it.
func TestRunsJSONIsOneEntryALine(t *testing.T) {
	root := t.TempDir()
	reg := runsTree(t, root)
	want, err := runlist.Find(reg, root)
	require.NoError(t, err)

	out := runOK(t, reg, "runs", root, "--json")
	var got []runlist.Entry
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var e runlist.Entry
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&e), line)
		got = append(got, e)
	}
	assert.Equal(t, want, got)

	var fields map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &fields))
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	assert.ElementsMatch(t, []string{"path", "definition", "state", "summary", "jobs", "last", "lacks", "reason", "hint"}, keys)
	assert.Contains(t, out, `"jobs":{"total":2,"accepted":1,"awaited":0,"blocked":1,"stopped":0,"pending":0,"no_longer_named":0}`)
	assert.Contains(t, out, `"path":"`+filepath.Join(root, "notes")+`","definition":"notes","state":"in progress","summary":"0 jobs",`+
		`"jobs":{"total":0,"accepted":0,"awaited":0,"blocked":0,"stopped":0,"pending":0,"no_longer_named":0},"last":null,"lacks":["asks-for-owners"],"reason":"","hint":""}`)
	assert.Contains(t, out, `"hint":"use the binary that started the run, or one that registers its definition"`)
}

// --definition and --state keep the runs of one definition, or that stand
// so; the flags come before or after the directories.
func TestRunsFilters(t *testing.T) {
	root := t.TempDir()
	reg := runsTree(t, root)
	tests := []struct {
		args []string
		want []string // the runs listed, relative to root
	}{
		{[]string{"--state", "blocked", root}, []string{"blocked"}},
		{[]string{root, "--state", "driven now"}, []string{"driven"}},
		{[]string{root, "--state=in progress"}, []string{"launched", "notes"}},
		{[]string{root, "--state", "unreadable"}, []string{"gone", "untrusted"}},
		{[]string{root, "--state", "done", "--definition", "notes"}, nil},
		{[]string{root, "--definition", "notes"}, []string{"notes"}},
		{[]string{root, "--definition", "gone"}, []string{"gone"}},
		{[]string{root, "--definition", "nosuch"}, nil},
		{[]string{root, "--definition", "trial", "--state", "uncertain", "--json"}, []string{"uncertain"}},
		{[]string{filepath.Join(root, "plain")}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out := runOK(t, reg, append([]string{"runs"}, tt.args...)...)
			var got []string
			for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if line == "" {
					continue
				}
				var path string
				if strings.HasPrefix(line, "{") {
					var e runlist.Entry
					require.NoError(t, json.Unmarshal([]byte(line), &e))
					path = e.Path
				} else {
					path, _, _ = strings.Cut(line, "  ")
				}
				rel, err := filepath.Rel(root, path)
				require.NoError(t, err)
				got = append(got, rel)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// Without a directory, runs lists the working directory's.
func TestRunsWithoutADirectoryListsTheWorkingDirectory(t *testing.T) {
	root := t.TempDir()
	reg := runsTree(t, root)
	want := runOK(t, reg, "runs", root)
	t.Chdir(root)
	assert.Equal(t, want, runOK(t, reg, "runs"))
	assert.Equal(t, want, runOK(t, reg, "runs", "."))
}

// runs takes no lock, so it answers while other processes hold every
// run's lock, and writes nothing either way.
func TestRunsWritesNothingAndAnswersWhileBusy(t *testing.T) {
	root := t.TempDir()
	reg := runsTree(t, root)
	want := runOK(t, reg, "runs", root)
	locks, err := filepath.Glob(filepath.Join(root, "*", ".custodian", "lock"))
	require.NoError(t, err)
	require.Len(t, locks, 9)
	for _, path := range locks {
		lock := flock.New(path)
		held, err := lock.TryLock()
		require.NoError(t, err)
		require.True(t, held)
		t.Cleanup(func() { _ = lock.Unlock() })
	}
	requireFailure(t, run(t, reg, "step", filepath.Join(root, "launched")), engine.ExitBusy, "")

	before := listing(t, root)
	assert.Equal(t, want, runOK(t, reg, "runs", root))
	assert.NotEmpty(t, runOK(t, reg, "runs", root, "--json"))
	assert.Equal(t, before, listing(t, root))
}

func TestRunsRefusals(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	writeOutput(t, root, "file", "")
	const usage = "usage: custodian runs [DIR...] [--json] [--definition NAME] [--state STATE]"
	const states = "give one of: in progress, blocked, uncertain, done, abandoned, driven now, unreadable; quote the words of two: --state 'in progress'"
	tests := []struct {
		args   []string
		code   int
		stderr string
		hint   string
	}{
		{[]string{"runs", root, "--state", "stuck"}, engine.ExitUsage, `custodian: runs: --state "stuck" is not a state`, states},
		{[]string{"runs", root, "--state", ""}, engine.ExitUsage, `custodian: runs: --state "" is not a state`, states},
		{[]string{"runs", root, "--state", "in-progress"}, engine.ExitUsage, `custodian: runs: --state "in-progress" is not a state`, states},
		{[]string{"runs", root, "--state"}, engine.ExitUsage, "custodian: runs: flag needs an argument: --state", usage},
		{[]string{"runs", root, "--definition", ""}, engine.ExitUsage, "custodian: runs: --definition needs a definition's name", usage},
		{[]string{"runs", root, "--definition", "bad \xff"}, engine.ExitUsage, `custodian: runs: --definition "bad \xff" is not UTF-8 text`, ""},
		{[]string{"runs", root, "--bogus"}, engine.ExitUsage, "custodian: runs: flag provided but not defined: --bogus", usage},
		{[]string{"runs", "--json=maybe", root}, engine.ExitUsage, "custodian: runs: ", usage},
		// A malformed command line is one whatever the directories name.
		{[]string{"runs", filepath.Join(root, "nosuch"), "--state", "stuck"}, engine.ExitUsage, `--state "stuck" is not a state`, states},
		{[]string{"runs", root, filepath.Join(root, "nosuch")}, engine.ExitFailed,
			"custodian: " + filepath.Join(root, "nosuch") + " does not exist\n",
			"check the path: custodian runs lists the runs under the directories it is given, or under the working directory"},
		{[]string{"runs", file}, engine.ExitFailed, "custodian: " + file + " is not a directory\n", ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := custodian(t, tt.args...)
			requireFailure(t, r, tt.code, tt.hint)
			assert.Contains(t, r.stderr, tt.stderr)
		})
	}
}
