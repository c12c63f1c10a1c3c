package workflow_test

import (
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProblemPathIsBesideTheOutput(t *testing.T) {
	cases := map[string]string{
		"lens-a.md":    "lens-a.problem.md",
		"result":       "result.problem.md",
		"a.tar.gz":     "a.tar.problem.md",
		"sub/dir/x.md": "sub/dir/x.problem.md",
	}
	for output, want := range cases {
		assert.Equal(t, want, workflow.ProblemPath(output), "output %s", output)
	}
}

const problemText = "I cannot read the input: notes.md does not exist.\n"

// A problem report is the worker saying the task cannot be done as set: it
// blocks at once, and whatever the worker left is taken out of the way so
// that nothing it wrote can be accepted.
func TestProblemReportBlocksAtOnce(t *testing.T) {
	cases := []struct {
		name   string
		output string // written beside the report; "" for none
	}{
		{"report alone", ""},
		{"report beside a valid output", validText},
		{"report beside an invalid output", invalidText},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startRun(t, oneJob(job("a")), source)

			h.work(h.launch("a"), map[string]reply{"a": {output: tc.output, problem: problemText}})
			b := h.blocked()["a"]

			assert.Equal(t, workflow.BlockProblemReport, b.Kind)
			assert.Equal(t, workflow.PermitRepair, b.Permitted, "a problem report is no retry: it blocks on the first attempt")
			record := recordText(t, b.Record)
			assert.Contains(t, record, "## Problem report\n\n"+problemText)

			assert.False(t, h.exists("a.problem.md"), "the report stays in place")
			assert.False(t, h.exists("a.md"), "the output beside the report stays in place")
			assert.Equal(t, problemText, h.read(".custodian/jobs/a/kept/1-a.problem.md"))
			want := "## Kept\n\n- a.problem.md is moved to .custodian/jobs/a/kept/1-a.problem.md\n"
			if tc.output != "" {
				assert.Equal(t, tc.output, h.read(".custodian/jobs/a/kept/2-a.md"))
				want += "- a.md is moved to .custodian/jobs/a/kept/2-a.md\n"
			}
			assert.Contains(t, record, want)
			assert.Nil(t, h.state().Jobs["a"].Accepted)

			// The repair: the next step hands the job out again and does not block.
			j := h.launch("a")["a"]
			assert.Equal(t, 2, j.Attempt)
			h.work(map[string]workflow.Handout{"a": j}, nil)
			h.done()
		})
	}
}

func TestProblemReportBlocksAnAcceptedJob(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.runToDone()

	h.write("a.problem.md", problemText)
	b := h.blocked()["a"]
	assert.Equal(t, workflow.BlockProblemReport, b.Kind)
	assert.Equal(t, validText, h.read(".custodian/jobs/a/kept/2-a.md"))
	h.work(h.launch("a"), nil)
	h.done()
}

// Moving the flagged output back is no repair that code can take for a
// result: the worker said the output is not the task done.
func TestFlaggedOutputPutBackIsNotAccepted(t *testing.T) {
	cases := []struct {
		name     string
		accepted bool // the output was accepted before the report appeared
	}{
		{"output written with the report", false},
		{"accepted output flagged later", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startRun(t, oneJob(job("a")), source)
			if tc.accepted {
				h.runToDone()
				h.write("a.problem.md", problemText)
			} else {
				h.work(h.launch("a"), map[string]reply{"a": {output: validText, problem: problemText}})
			}
			b := h.blocked()["a"]
			require.Equal(t, workflow.BlockProblemReport, b.Kind)
			require.False(t, h.exists("a.md"))

			h.write("a.md", validText)
			out := h.step()
			assert.Equal(t, workflow.KindLaunch, out.Kind, "the flagged output was accepted: %+v", out)
		})
	}
}

func TestProblemReportIsReadOnceOnly(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	h.work(h.launch("a"), map[string]reply{"a": {problem: problemText}})
	require.Equal(t, workflow.BlockProblemReport, h.blocked()["a"].Kind)
	// Without any worker activity after the repair the job is merely due again.
	assert.Equal(t, 2, h.launch("a")["a"].Attempt)
	assert.Equal(t, 3, h.launch("a")["a"].Attempt)
	b := h.blocked()["a"]
	assert.Equal(t, workflow.BlockNoOutput, b.Kind)
	assert.NotContains(t, recordText(t, b.Record), "## Problem report")
}
