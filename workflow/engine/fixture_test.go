package engine_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureFiles lists the files of a fixture, relative, with their bytes.
func fixtureFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		data, err := os.ReadFile(path)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	}))
	return files
}

func TestRecordCopiesWhatAReplayReads(t *testing.T) {
	h := finished(t, newVersioned())
	// What a live run holds that a fixture leaves out, and what it cannot
	// hold.
	h.write(".custodian/jobs/a/launch-1/stdout.log", "a worker's log\n")
	require.NoError(t, os.Symlink("/etc/passwd", h.path("link.md")))
	require.FileExists(t, h.path(".custodian/lock"))
	require.FileExists(t, h.path(".custodian/hashes"))

	dir := filepath.Join(t.TempDir(), "fixture")
	c, skipped, err := h.o.Record(dir)
	require.NoError(t, err)
	assert.False(t, c.Changed)
	assert.Equal(t, []string{"link.md (a symbolic link)"}, skipped)

	files := fixtureFiles(t, dir)
	for _, rel := range []string{".custodian/run.json", ".custodian/state.json", ".custodian/history/1.jsonl",
		".custodian/jobs/a/prompt-1.md", ".custodian/jobs/b/prompt-1.md", "a.md", "b.md", "source.md"} {
		assert.Equal(t, h.read(rel), files[rel], rel)
	}
	for _, rel := range []string{".custodian/lock", ".custodian/hashes", ".custodian/jobs/a/launch-1/stdout.log", "link.md"} {
		assert.NotContains(t, files, rel)
	}

	// The fixture replays as the run does, wherever it lies.
	o, err := engine.Open(h.reg, dir)
	require.NoError(t, err)
	defer o.Close()
	again, err := o.Check()
	require.NoError(t, err)
	assert.False(t, again.Changed)
}

func TestRecordStepsAFixtureThatOnlyCarriesOver(t *testing.T) {
	h := finished(t, newVersioned())
	fixture := filepath.Join(t.TempDir(), "fixture")
	_, _, err := h.o.Record(fixture)
	require.NoError(t, err)

	// The guide's no-op rename: b is now risk-list, formerly b.
	v := newVersioned()
	v.nameB, v.formerly = "risk-list", []string{"b"}
	h.reg = registryOf(t, v.definition())
	o, err := engine.Open(h.reg, fixture)
	require.NoError(t, err)
	c, err := o.Check()
	require.NoError(t, err)
	require.True(t, c.Changed)
	assert.False(t, c.Differs(), "a carry-over leaves every accepted output in place: %+v", c.Items)
	assert.Equal(t, []engine.CheckItem{{Subject: "risk-list", Reason: "carried over from its former name b, accepted as it was", Details: []string{}, Kept: true}}, c.Items)

	// Recorded again in its own place: the fixture is stepped once and
	// holds the new name.
	c, _, err = o.Record(fixture)
	require.NoError(t, err)
	assert.True(t, c.Changed, "the check is of the fixture as it was")
	o.Close()
	o, err = engine.Open(h.reg, fixture)
	require.NoError(t, err)
	defer o.Close()
	c, err = o.Check()
	require.NoError(t, err)
	assert.False(t, c.Changed, "%+v", c.Items)
	files := fixtureFiles(t, fixture)
	assert.NotContains(t, files, ".custodian/lock", "the step's lock is trimmed")
	assert.NotContains(t, files, ".custodian/hashes", "the step's cache is trimmed")
	assert.NoDirExists(t, fixture+".recording", "no temporary directory is left")
	matches, err := filepath.Glob(fixture + ".*")
	require.NoError(t, err)
	assert.Empty(t, matches, "nothing is left beside the fixture")
}

func TestRecordRefusesWhatItWouldLose(t *testing.T) {
	h := finished(t, newVersioned())
	notRun := t.TempDir()
	writeFile(t, filepath.Join(notRun, "notes.md"), "mine\n")
	tests := []struct {
		name string
		dir  string
		want error
	}{
		{"a directory that holds something else", notRun, store.ErrNotFixture},
		{"a directory inside the run", h.path("fixtures/one"), engine.ErrRefused},
		{"the live run in its own place", h.dir, engine.ErrRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := outside(t, h.dir)
			_, _, err := h.o.Record(tt.dir)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tt.want), "%v", err)
			assert.Equal(t, before, outside(t, h.dir), "the run is as it was")
			assert.Equal(t, "mine\n", fixtureFiles(t, notRun)["notes.md"])
		})
	}
}
