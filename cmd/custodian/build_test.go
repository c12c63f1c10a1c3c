package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow/engine"
)

// A run records the build of the binary that started it and of the one
// that last stepped it. A change of an accepted job's task by the build
// its jobs were held against is data the definition reads: the job
// reopens. By another build, it waits for the operator. These tests step
// one run with two builds of different code, the variants of
// testdata/variant.

// variantBuild is what `version --json` says of the build of variant.
func variantBuild(t *testing.T, variant string) (engine.Build, string) {
	t.Helper()
	var v struct {
		Build engine.Build
		Text  string
	}
	require.NoError(t, json.Unmarshal([]byte(redefOK(t, variant, "version", "--json")), &v))
	return v.Build, v.Text
}

// auditManifest is a manifest of the audit definition with n packages.
func auditManifest(n int) string {
	var b strings.Builder
	b.WriteString("axios 1.6.0 1.7.2\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "pkg-%02d 1.0.%d 1.1.%d\n", i, i, i)
	}
	return b.String()
}

// auditDone returns a run of the audit definition over manifest that the
// base build drove to done.
func auditDone(t *testing.T, manifest string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	writeManifest(t, dir, manifest)
	redefOK(t, "base", "start", "audit", "--run", dir)
	redefFinish(t, "base", dir)
	return dir
}

func writeManifest(t *testing.T, dir, manifest string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.txt"), []byte(manifest), 0o644))
}

func TestVersionNamesTheBinarysBuild(t *testing.T) {
	for _, bin := range []string{binary, variantBinaries["base"]} {
		want, err := exec.Command("go", "tool", "buildid", bin).Output()
		require.NoError(t, err)
		out := ok(t, "version")
		if bin != binary {
			out = redefOK(t, "base", "version")
		}
		assert.Contains(t, out, "\nbuild id: "+strings.TrimSpace(string(want))+"\n", bin)
	}
	base, _ := variantBuild(t, "base")
	prompt, _ := variantBuild(t, "prompt")
	assert.NotEqual(t, base.ID, prompt.ID, "two builds of different code are two builds")
}

func TestTheRunRecordsAndNamesItsBuilds(t *testing.T) {
	base, baseText := variantBuild(t, "base")
	prompt, promptText := variantBuild(t, "prompt")
	dir := redefDone(t)

	run, err := store.Open(dir)
	require.NoError(t, err)
	assert.Equal(t, base, run.Record.Build, "run.json keeps the build that started the run")
	st, err := run.LoadState()
	require.NoError(t, err)
	run.Close()
	assert.Equal(t, base, st.Build, "the state keeps the build that last stepped it")
	assert.Contains(t, redefOK(t, "base", "status", dir), "\nbuild: started and last stepped by "+baseText+"\n")
	assert.NotContains(t, redefOK(t, "base", "status", dir), "this binary")

	redefBlockedOnDefinition(t, redefStep(t, "prompt", dir), "job summary")
	status := redefOK(t, "prompt", "status", dir)
	assert.Contains(t, status, "\nbuild: started by "+baseText+"; last stepped by "+promptText+"\n")
	assert.Contains(t, status, "\nthis binary: "+promptText+", another build: ")
	assert.Contains(t, status, "go back to the binary whose definition the run last agreed with ("+baseText+")")
	record := fileText(t, filepath.Join(dir, ".custodian", "workflow", "block-1.md"))
	assert.Contains(t, record, "goes back to the binary whose definition the run last agreed with ("+baseText+")")

	var s engine.Status
	require.NoError(t, json.Unmarshal([]byte(redefOK(t, "prompt", "status", dir, "--json")), &s))
	assert.Equal(t, engine.Builds{Started: base, Stepped: prompt, Checked: base, This: prompt}, s.Builds)
}

func TestADataEditMovesTheRunAndNewCodeWaits(t *testing.T) {
	edited := strings.Replace(auditManifest(3), "1.7.2", "1.7.4", 1)

	t.Run("the same binary reopens the job with a full set of attempts", func(t *testing.T) {
		dir := auditDone(t, auditManifest(3))
		writeManifest(t, dir, edited)
		text, c := redefCheck(t, "base", dir)
		assert.Contains(t, text, "- audit-axios: it is reopened: the prompt changed (the same build: data the definition reads)\n")
		assert.Equal(t, engine.KindLaunch, c.Next.Kind)

		out := redefStep(t, "base", dir)
		require.Equal(t, []string{"audit-axios"}, handedOut(out))
		assert.Equal(t, 2, out.Jobs[0].Attempt)
		p, err := engine.ParsePrompt([]byte(fileText(t, out.Jobs[0].Prompt)))
		require.NoError(t, err)
		assert.Contains(t, p.Task, "from 1.6.0 to 1.7.4")
		assert.Contains(t, redefOK(t, "base", "log", dir), "reopened audit-axios: the prompt changed (the same build: data the definition reads)")
		// One retry, then a block: a reopening charged nothing.
		assert.Equal(t, 3, redefStep(t, "base", dir).Jobs[0].Attempt)
		assert.Equal(t, engine.KindBlocked, redefStep(t, "base", dir).Kind)
	})
	t.Run("a rebuilt binary with the same edit stops", func(t *testing.T) {
		dir := auditDone(t, auditManifest(3))
		writeManifest(t, dir, edited)
		before := files(t, dir)
		out := redefStep(t, "prompt", dir)
		redefBlockedOnDefinition(t, out, "job audit-axios")
		redefStepWrote(t, before, files(t, dir), true)
		// And again: the stop stands until a person decides.
		redefBlockedOnDefinition(t, redefStep(t, "prompt", dir), "job audit-axios")
	})
}

// A prompt reworded in thirty jobs is one diff in check and in the record
// of the changed definition's stop, with the jobs it is of.
func TestAChangeInManyJobsIsSaidOnce(t *testing.T) {
	dir := auditDone(t, auditManifest(30))

	text, _ := redefCheck(t, "prompt", dir)
	assert.Equal(t, 1, strings.Count(text, "+Take package axios from 1.6.0 to 1.7.2.")+strings.Count(text, "+Audit carefully it."),
		"the diff is said more than once:\n%s", text)
	assert.Contains(t, text, "- 30 alike (audit-axios, audit-pkg-01, audit-pkg-02 and 27 more): the definition changed it: the prompt changed")

	out := redefStep(t, "prompt", dir)
	require.Equal(t, engine.KindBlocked, out.Kind)
	data := fileText(t, out.Blocks[0].Record)
	assert.Equal(t, 1, strings.Count(data, "```diff"), "the diff is said more than once:\n%s", data)
	assert.Contains(t, data, "## 30 alike: job audit-axios, job audit-pkg-01")
	assert.Contains(t, data, "job audit-pkg-29\n")
}

// A run that the build without risks finished stays finished when a build
// that names risks steps it: the new job waits for the operator.
func TestAFinishedRunAndANewJobUnderANewBuild(t *testing.T) {
	dir := redefStart(t, "removed")
	require.Equal(t, []string{"summary"}, redefFinish(t, "removed", dir))

	text, c := redefCheck(t, "base", dir)
	assert.True(t, c.Changed)
	assert.Contains(t, text, "- risks: the definition changed it: a new job in a finished run: the next step would hand it out; the next step blocks on the changed definition\n")
	before := files(t, dir)
	redefBlockedOnDefinition(t, redefStep(t, "base", dir), "job risks")
	redefStepWrote(t, before, files(t, dir), true)

	// The build that finished it finds nothing new: done, as it was.
	assert.Equal(t, engine.KindDone, redefStep(t, "removed", dir).Kind)
	redefBlockedOnDefinition(t, redefStep(t, "base", dir), "job risks")
	redefOK(t, "base", "release", dir, "workflow")
	assert.Equal(t, []string{"risks"}, redefFinish(t, "base", dir))
}
