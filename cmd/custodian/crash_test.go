package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crashStatus is store.CrashStatus, which exists only in a binary built
// with the crashpoints tag.
const crashStatus = 86

// crashAt runs `step dir` with the crash binary ended just before its n-th
// write, and requires that it ended there.
func crashAt(t *testing.T, dir string, n int) {
	t.Helper()
	r := run(t, crashBinary, []string{fmt.Sprintf("CUSTODIAN_CRASH_AT=%d", n)}, "step", dir)
	require.Equal(t, crashStatus, r.code, "stdout %q, stderr %q", r.stdout, r.stderr)
	assert.Empty(t, r.stdout, "a step that ended before its commit printed an outcome")
	assert.Contains(t, r.stderr, fmt.Sprintf("ended before write %d", n))
}

func TestStepEndedBeforeItsFirstWriteChangesNothing(t *testing.T) {
	dir := trialRun(t, "clean")
	before := files(t, dir)

	crashAt(t, dir, 1)
	assert.Equal(t, before, files(t, dir))
	assert.NoFileExists(t, filepath.Join(dir, ".custodian", "state.json"))
	for rel := range files(t, dir) {
		assert.NotContains(t, rel, "prompt-", "a step that ended before its first write left %s", rel)
	}

	assert.Equal(t, firstLaunch(dir), ok(t, "step", dir))
}

func TestStepEndedBeforeEachWriteOfTheFirstStep(t *testing.T) {
	// An uninterrupted first step, counting its writes.
	ref := trialRun(t, "clean")
	log := filepath.Join(t.TempDir(), "writes.log")
	r := run(t, crashBinary, []string{"CUSTODIAN_CRASH_LOG=" + log}, "step", ref)
	require.Equal(t, 0, r.code, r.stderr)
	want := strings.ReplaceAll(r.stdout, ref, "RUN")
	require.Equal(t, strings.ReplaceAll(firstLaunch(ref), ref, "RUN"), want)
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	labels := strings.Fields(string(data))
	require.NotEmpty(t, labels)

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "crash-points.md"))
	require.NoError(t, err)
	for n, label := range labels {
		assert.Contains(t, string(doc), "| `"+label+"` |", "write point %s has no recovery rule in docs/crash-points.md", label)

		t.Run(fmt.Sprintf("write %d %s", n+1, label), func(t *testing.T) {
			dir := trialRun(t, "clean")
			crashAt(t, dir, n+1)
			got := strings.ReplaceAll(ok(t, "step", dir), dir, "RUN")
			assert.Equal(t, want, got)
		})
	}
}
