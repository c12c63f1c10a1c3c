package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/internal/proc"
	"github.com/custodian-run/custodian/runlist"
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runsTrialAt sets up a trial run of scenario at dir with the binary and
// takes n steps with it, a worker writing a valid output for each job
// handed out.
func runsTrialAt(t *testing.T, dir, scenario string, n int) {
	t.Helper()
	require.Equal(t, "run: "+dir+"\n", ok(t, "trial", "setup", scenario, "--run", dir))
	for range n {
		for _, h := range stepJSON(t, dir).Jobs {
			require.NoError(t, trial.Valid(h))
		}
	}
}

// runsLine returns the line of runs' text that lists dir, or "".
func runsLine(out, dir string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, dir+"  ") {
			return line
		}
	}
	return ""
}

// runs, through the binary: a run whose step ended inside an effect is
// uncertain, one a live drive holds is driven now, a run of a definition
// the binary lacks is listed as unreadable and one whose patch the binary
// declares shows it lacking; no link is followed, nothing is written, and
// the exit codes are the command line's.
func TestRunsThroughTheBinary(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	runsTrialAt(t, filepath.Join(root, "done"), "clean", 3)

	uncertain := filepath.Join(root, "uncertain")
	runsTrialAt(t, uncertain, "uncertain", 2)
	r := run(t, binary, nil, "step", uncertain)
	require.Equal(t, trial.PublishInterruptedStatus, r.code, "stderr %q", r.stderr)

	driven := filepath.Join(root, "driven")
	runsTrialAt(t, driven, "clean", 1)
	o, err := engine.Open(definitions.Builtin(), driven)
	require.NoError(t, err)
	defer o.Close()
	start, err := proc.StartTime(os.Getpid())
	require.NoError(t, err)
	require.NoError(t, o.Driver(engine.Process{Pid: os.Getpid(), Start: start}).Begin())

	notes := filepath.Join(root, "notes")
	require.NoError(t, os.MkdirAll(notes, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(notes, "notes.md"), []byte(redefNotes), 0o644))
	redefOK(t, "base", "start", "notes", "--run", notes)

	// Links: to a directory of runs elsewhere, to the root itself, and a
	// .custodian that is a link to another run's records.
	runsTrialAt(t, filepath.Join(elsewhere, "run"), "clean", 1)
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(root, "link")))
	require.NoError(t, os.Mkdir(filepath.Join(root, "plain"), 0o755))
	require.NoError(t, os.Symlink(root, filepath.Join(root, "plain", "loop")))
	linked := filepath.Join(root, "linked")
	require.NoError(t, os.Mkdir(linked, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "run", engine.StateDir), filepath.Join(linked, engine.StateDir)))

	// Another process holds the finished run's lock.
	lock := flock.New(filepath.Join(root, "done", engine.StateDir, "lock"))
	held, err := lock.TryLock()
	require.NoError(t, err)
	require.True(t, held)
	defer func() { _ = lock.Unlock() }()
	before, beforeElsewhere := files(t, root), files(t, elsewhere)

	out := ok(t, "runs", root)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 5, out)
	for _, tt := range []struct {
		dir   string
		cells []string // the first cells of its line, after the path
	}{
		{filepath.Join(root, "done"), []string{"trial", "done", "3 jobs: 3 accepted"}},
		{driven, []string{"trial", "driven now", "2 jobs: 2 awaited"}},
		{linked, []string{"-", "unreadable", "record " + filepath.Join(linked, ".custodian", "run.json") +
			" cannot be trusted: .custodian is a symbolic link; custodian follows no link in a run: replace it with a directory"}},
		{notes, []string{"notes", "unreadable", "open run " + notes + `: it runs definition "notes", which this binary does not carry`}},
		{uncertain, []string{"trial", "uncertain", "3 jobs: 2 accepted, 1 awaited"}},
	} {
		cells := regexp.MustCompile(`  +`).Split(runsLine(out, tt.dir), -1)
		require.Greater(t, len(cells), len(tt.cells), out)
		assert.Equal(t, tt.cells, cells[1:len(tt.cells)+1], out)
	}
	assert.True(t, strings.HasPrefix(runsLine(out, uncertain), uncertain+"  trial  uncertain   3 jobs: 2 accepted, 1 awaited  step 2 at "), out)
	assert.NotContains(t, out, elsewhere, "a link was followed")
	assert.NotContains(t, out, filepath.Join(root, "link")+"/", "a link was followed")

	// The binary of today declares a patch the notes run lacks.
	patched := redefOK(t, "patched", "runs", root, "--definition", "notes")
	assert.Equal(t, notes+"  notes  in progress  0 jobs  never stepped  lacks patch asks-for-owners\n", patched)

	var e runlist.Entry
	require.NoError(t, json.Unmarshal([]byte(ok(t, "runs", "--state", "uncertain", "--json", root)), &e))
	assert.Equal(t, uncertain, e.Path)
	require.NotNil(t, e.Last)
	assert.Equal(t, engine.KindLaunch, e.Last.Outcome, "the step that ended inside publish committed nothing")

	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"a state that is not one", []string{"runs", root, "--state", "stuck"}, engine.ExitUsage, `custodian: runs: --state "stuck" is not a state`},
		{"an unknown flag", []string{"runs", root, "--bogus"}, engine.ExitUsage, "custodian: runs: flag provided but not defined: --bogus"},
		{"a directory that does not exist", []string{"runs", filepath.Join(root, "nosuch")}, engine.ExitFailed,
			"custodian: " + filepath.Join(root, "nosuch") + " does not exist"},
		{"a file", []string{"runs", filepath.Join(root, "done", "source.md")}, engine.ExitFailed,
			"custodian: " + filepath.Join(root, "done", "source.md") + " is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, binary, nil, tt.args...)
			assert.Equal(t, tt.code, r.code, "stderr %q", r.stderr)
			assert.Empty(t, r.stdout)
			assert.True(t, strings.HasPrefix(r.stderr, tt.says+"\ncustodian: hint: "), "stderr %q", r.stderr)
		})
	}
	assert.Equal(t, before, files(t, root), "runs changed the tree")
	assert.Equal(t, beforeElsewhere, files(t, elsewhere), "runs changed what a link leads to")
}
