package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/workflow/engine"
)

// A definition asks a person through the binary: the step blocks on the
// question, the operator decides with their own command, and the next
// step's replay goes on with the choice.
func TestADecisionThroughTheBinary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	redefOK(t, "base", "start", "approval", "--run", dir)
	redefWork(t, redefStep(t, "base", dir))

	const block = "blocked\n" +
		"- decision publish: the definition asks the operator: Publish draft.md as the release note? Read it first. (choices: publish, hold)\n"
	for range 2 {
		out := redefOK(t, "base", "step", dir)
		assert.Equal(t, block+
			"  record: "+filepath.Join(dir, ".custodian", "decision-blocks", "publish.md")+"\n"+
			"  permitted: stop and report to the operator\n", out)
	}
	status := redefOK(t, "base", "status", dir)
	assert.Contains(t, status, "decision publish: blocked: the definition asks the operator: ")
	assert.Contains(t, status, "\nagent orchestrator: stop and report it: a block permits only stopping (decision publish)\n")
	assert.Contains(t, status, "then choose: custodian decide "+dir+" publish publish|hold --text WHY\n")
	var s engine.Status
	require.NoError(t, json.Unmarshal([]byte(redefOK(t, "base", "status", dir, "--json")), &s))
	require.Len(t, s.Questions, 1)
	assert.Equal(t, []string{"publish", "hold"}, s.Questions[0].Choices)

	r := redefRun(t, "base", "decide", dir, "publish", "ship")
	assert.Equal(t, 2, r.code)
	assert.Equal(t, "custodian: decide: \"ship\" is not a choice of decision publish\ncustodian: hint: choose one of: publish, hold\n", r.stderr)
	r = redefRun(t, "base", "decide", dir, "release")
	assert.Equal(t, 2, r.code, "a missing choice is a usage error")
	r = redefRun(t, "base", "release", dir, "decision publish")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "decision publish is not released; a question is decided")
	r = redefRun(t, "base", "decide", dir, "other", "publish")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "asked no question named \"other\"")

	assert.Empty(t, redefOK(t, "base", "decide", dir, "publish", "publish", "--text", "read it; it is fine"))
	text, _ := redefCheck(t, "base", dir)
	assert.Contains(t, text, "- decision publish: the operator chose publish; the path that asked goes on\n")
	assert.Equal(t, "done\n", redefOK(t, "base", "step", dir))
	assert.Equal(t, fileText(t, filepath.Join(dir, "draft.md")), fileText(t, filepath.Join(dir, "published.md")))
	log := redefOK(t, "base", "log", dir)
	assert.Contains(t, log, "step 3    the operator decided decision publish: publish: read it; it is fine")
	assert.Contains(t, redefOK(t, "base", "status", dir), "\ndecisions:\n- publish: publish, by the operator at ")
	assert.Equal(t, "done\n", redefOK(t, "base", "step", dir), "a replay returns the choice")

	_, err := os.Stat(filepath.Join(dir, ".custodian", "decision-blocks", "publish.md"))
	assert.NoError(t, err, "the question's record stays as evidence")
	assert.False(t, strings.Contains(redefOK(t, "base", "status", dir), "custodian decide"))
}
