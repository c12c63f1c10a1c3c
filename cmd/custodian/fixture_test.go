package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// custodian check RUN --record DIR makes a fixture of a run that replays
// unchanged, and records a fixture again in its own place after a rename
// with Formerly.
func TestCheckRecordsAFixture(t *testing.T) {
	dir := redefDone(t)
	fixture := filepath.Join(t.TempDir(), "runs", "notes-done")

	out := redefOK(t, "base", "check", dir, "--record", fixture)
	assert.Equal(t, "unchanged\nnext step: done\nrecorded: "+fixture+"\n", out)
	copied := files(t, fixture)
	assert.NotContains(t, copied, ".custodian/lock")
	assert.NotContains(t, copied, ".custodian/hashes")
	assert.Equal(t, fileText(t, filepath.Join(dir, "risks.md")), copied["risks.md"])
	assert.Equal(t, "unchanged\nnext step: done\n", redefOK(t, "base", "check", fixture), "the fixture replays unchanged")

	// risks renamed risk-list, Formerly risks: a note, then recorded again.
	text, c := redefCheck(t, "formerly", fixture)
	require.True(t, c.Changed)
	assert.False(t, c.Differs(), text)
	out = redefOK(t, "formerly", "check", fixture, "--record", fixture)
	assert.True(t, strings.HasSuffix(out, "next step: done\nrecorded: "+fixture+"\n"), out)
	assert.Equal(t, "unchanged\nnext step: done\n", redefOK(t, "formerly", "check", fixture))
	assert.NotContains(t, files(t, fixture), ".custodian/lock", "the step that carried it over left no lock")

	r := redefRun(t, "base", "check", dir, "--record", dir)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "it is a live run")
	r = redefRun(t, "base", "check", dir, "--record", "")
	assert.Equal(t, 2, r.code)
}
