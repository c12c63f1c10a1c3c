package workflow_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const refusalSection = "## Why the previous attempt was refused"

func TestInvalidOutputIsHandedOutAgainWithTheValidatorsMessage(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	first := h.launch("a")["a"]
	h.work(map[string]workflow.Handout{"a": first}, map[string]reply{"a": {output: invalidText}})
	second := h.launch("a")["a"]

	assert.Equal(t, 2, second.Attempt)
	assert.Equal(t, h.path(".custodian/jobs/a/prompt-2.md"), second.Prompt)
	assert.NotEqual(t, first.Prompt, second.Prompt, "each hand-out writes a new prompt file")
	firstText := recordText(t, first.Prompt)
	assert.NotContains(t, firstText, refusalSection, "the first prompt is kept as it was")
	assert.True(t, strings.HasSuffix(recordText(t, second.Prompt),
		"\n"+refusalSection+"\n\n- "+headingMsg+"\n"), "prompt:\n%s", recordText(t, second.Prompt))
	// The refused output is moved aside so the retry starts from nothing.
	assert.False(t, h.exists("a.md"))
	assert.Equal(t, invalidText, h.read(".custodian/jobs/a/kept/1-a.md"))
}

func TestValidRetryIsAcceptedAndStaysAccepted(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.work(h.launch("a"), nil)
	h.done()
	h.reopen()
	h.done()
	st := h.state().Jobs["a"]
	assert.Equal(t, 2, st.Handouts)
	assert.Equal(t, 0, st.Failures)
	assert.Empty(t, st.Messages)
}

func TestSecondInvalidOutputBlocksWithARepair(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.work(h.launch("a"), map[string]reply{"a": {output: "still no heading\n"}})
	b := h.blocked()["a"]

	assert.Equal(t, workflow.BlockRefused, b.Kind)
	assert.Equal(t, "the output was refused by its validator, attempt 2 of 2", b.Reason)
	assert.Equal(t, workflow.PermitRepair, b.Permitted)
	assert.Equal(t, workflow.DefaultRepairScope, b.Scope)
	assert.Equal(t, h.path(".custodian/jobs/a/block-1.md"), b.Record)
	record := recordText(t, b.Record)
	assert.Contains(t, record, "- attempt 1: the output was refused by its validator\n  - "+headingMsg)
	assert.Contains(t, record, "- attempt 2: the output was refused by its validator\n  - "+headingMsg)
	assert.Contains(t, record, "- Permitted: repair")
	// The last refused output is kept where the record says, out of the way
	// of a repair.
	assert.Contains(t, record, "## Kept\n\n- a.md is moved to .custodian/jobs/a/kept/2-a.md\n")
	assert.False(t, h.exists("a.md"))
	assert.Equal(t, "still no heading\n", h.read(".custodian/jobs/a/kept/2-a.md"))
}

func TestBlockedStepHandsNothingOut(t *testing.T) {
	nameB := false
	h := startRun(t, &workflow.Definition{Name: "two", Run: func(ctx *workflow.Context) error {
		a := ctx.Agent(job("a"))
		if nameB {
			ctx.Agent(job("b"))
		}
		ctx.Wait(a)
		return nil
	}}, source)

	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	nameB = true
	h.work(h.launch("a", "b"), map[string]reply{"a": {output: invalidText}, "b": {}})
	// b's attempt failed and it is due for its retry, but a blocks the step.
	assert.Equal(t, []string{"a"}, subjects(h.blocked()))
	b := h.state().Jobs["b"]
	assert.Equal(t, 1, b.Handouts)
	assert.Equal(t, 1, b.Failures)
	assert.Nil(t, b.Outstanding)
	assert.NoFileExists(t, h.path(".custodian/jobs/b/prompt-2.md"))

	// Once a is repaired, b gets the retry it was owed.
	h.write("a.md", validText)
	j := h.launch("b")["b"]
	assert.Equal(t, 2, j.Attempt)
	assert.Contains(t, recordText(t, j.Prompt), "no output was written to b.md")
}

func TestBlockedStepDoesNotHandOutAJobThatWouldRetry(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "two", Run: func(ctx *workflow.Context) error {
		ctx.Wait(ctx.Agent(job("a")), ctx.Agent(job("b")))
		return nil
	}}, source)

	h.work(h.launch("a", "b"), map[string]reply{"a": {output: invalidText}})
	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.write("b.md", "# Heading\n\nedited\n")
	// b was accepted and is now reopened, but a's block holds back every hand-out.
	assert.Equal(t, []string{"a"}, subjects(h.blocked()))
	assert.Equal(t, 1, h.state().Jobs["b"].Handouts)
	assert.NotNil(t, h.state().Jobs["b"].Accepted, "a reopening is applied only when the job is handed out")
	assert.False(t, h.exists(".custodian/jobs/b/prompt-2.md"))
}

func TestNextBlockOfTheSameSubjectPermitsOnlyStopping(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	invalid := map[string]reply{"a": {output: invalidText}}

	for cycle, want := range []workflow.Permission{workflow.PermitRepair, workflow.PermitStop} {
		h.work(h.launch("a"), invalid)
		h.work(h.launch("a"), invalid)
		b := h.blocked()["a"]
		require.Equal(t, want, b.Permitted, "block %d", cycle+1)
	}
	stop := h.state().Jobs["a"]
	require.NotNil(t, stop.Stopped)

	// Stopping is final for the agent orchestrator: even a valid output put in
	// place is not judged until the operator releases the job.
	h.write("a.md", validText)
	for range 2 {
		b := h.blocked()["a"]
		assert.Equal(t, workflow.PermitStop, b.Permitted)
		assert.Equal(t, h.path(".custodian/jobs/a/block-2.md"), b.Record)
	}
	assert.Equal(t, stop.Handouts, h.state().Jobs["a"].Handouts)
	assert.Equal(t, stop.Blocks, h.state().Jobs["a"].Blocks)
	assert.Nil(t, h.state().Jobs["a"].Accepted)
}

func TestRetryLimitStartsOverAfterABlock(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	invalid := map[string]reply{"a": {output: invalidText}}

	h.work(h.launch("a"), invalid)
	h.work(h.launch("a"), invalid)
	first := h.blocked()["a"]
	require.Equal(t, workflow.PermitRepair, first.Permitted)

	j := h.launch("a")["a"]
	assert.Equal(t, 3, j.Attempt)
	assert.NotContains(t, recordText(t, j.Prompt), refusalSection,
		"the first hand-out after a block starts a new cycle")
	h.work(map[string]workflow.Handout{"a": j}, invalid)
	assert.Equal(t, 4, h.launch("a")["a"].Attempt, "the cycle after a block has its retry")
	h.write("a.md", invalidText)
	second := h.blocked()["a"]
	assert.Equal(t, workflow.PermitStop, second.Permitted)
	assert.Equal(t, "the output was refused by its validator, attempt 2 of 2", second.Reason)
	assert.Equal(t, h.path(".custodian/jobs/a/block-2.md"), second.Record)
	assert.Contains(t, recordText(t, second.Record), "- Permitted: stop")
}

func TestRetryLimitStartsOverAfterAnAcceptance(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.work(h.launch("a"), nil) // attempt 2 of the first cycle is valid
	h.done()

	h.write("source.md", "a new source\n")
	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	// Had the first cycle's failure carried over, this would block.
	j := h.launch("a")["a"]
	assert.Equal(t, 4, j.Attempt)
	h.work(map[string]workflow.Handout{"a": j}, map[string]reply{"a": {output: invalidText}})
	assert.Equal(t, workflow.PermitRepair, h.blocked()["a"].Permitted)
}

func TestAcceptanceResetsTheRepairCount(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	nothing := map[string]reply{"a": {}}

	h.work(h.launch("a"), nothing)
	h.work(h.launch("a"), nothing)
	require.Equal(t, workflow.PermitRepair, h.blocked()["a"].Permitted)
	h.work(h.launch("a"), nil)
	h.done()

	// A block after the acceptance is the first toward the limit again.
	h.write("source.md", "a new source\n")
	h.work(h.launch("a"), nothing)
	h.work(h.launch("a"), nothing)
	b := h.blocked()["a"]
	assert.Equal(t, workflow.PermitRepair, b.Permitted)
	assert.Equal(t, h.path(".custodian/jobs/a/block-2.md"), b.Record)
}

func TestLimitsWithoutRepairsStopAtTheFirstBlock(t *testing.T) {
	def := oneJob(job("a"))
	def.Limits = func(workflow.Params) workflow.Limits { return workflow.Limits{Retries: 1, Repairs: 0} }
	h := startRun(t, def, source)

	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	b := h.blocked()["a"]
	assert.Equal(t, workflow.PermitStop, b.Permitted)
	assert.Equal(t, "the output was refused by its validator, attempt 2 of 2", b.Reason)
}

func TestLimitsWithoutRetriesBlockAtTheFirstFailure(t *testing.T) {
	def := oneJob(job("a"))
	def.Limits = func(workflow.Params) workflow.Limits { return workflow.Limits{Retries: 0, Repairs: 1} }
	h := startRun(t, def, source)

	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	b := h.blocked()["a"]
	assert.Equal(t, "the output was refused by its validator, attempt 1 of 1", b.Reason)
	assert.Equal(t, workflow.PermitRepair, b.Permitted)
}

// A validator is the definition's code judging a worker's file; when it
// breaks, the job is refused, and the step still gives an outcome.
func TestValidatorThatBreaksRefusesTheOutput(t *testing.T) {
	cases := []struct {
		name     string
		validate workflow.Validator
		message  string
	}{
		{"panics", func(string) error { panic("index out of range in the validator") }, "index out of range in the validator"},
		{"returns another error", func(string) error { return errors.New("cannot parse the table") }, "cannot parse the table"},
		{"returns a wrapped error", func(string) error { return fmt.Errorf("judge: %w", errors.New("disk gone")) }, "disk gone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := job("a")
			j.Validate = tc.validate
			def := oneJob(j)
			def.Limits = func(workflow.Params) workflow.Limits { return workflow.Limits{Retries: 1, Repairs: 1} }
			h := startRun(t, def, source)

			h.work(h.launch("a"), nil)
			retry := h.launch("a")["a"]
			assert.Contains(t, recordText(t, retry.Prompt), tc.message)
			h.work(map[string]workflow.Handout{"a": retry}, nil)
			b := h.blocked()["a"]
			assert.Equal(t, workflow.BlockValidatorFailed, b.Kind)
			assert.Contains(t, recordText(t, b.Record), tc.message)
			assert.Nil(t, h.state().Jobs["a"].Accepted)
		})
	}
}

func TestRepairThatPutsAValidOutputInPlaceIsAccepted(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.blocked()

	h.write("a.md", validText)
	h.done()
	assert.Equal(t, 2, h.state().Jobs["a"].Handouts, "the repaired output is accepted without a hand-out")
}

func TestRepairCannotGetAnInvalidOutputAccepted(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.blocked()

	h.write("a.md", "touched, still no heading\n")
	assert.Equal(t, 3, h.launch("a")["a"].Attempt)
	assert.Nil(t, h.state().Jobs["a"].Accepted)
	assert.False(t, h.exists("a.md"))
}

// Acceptance needs a hand-out: a file nobody was asked to write is no output.
func TestFileNeverHandedOutIsNotAccepted(t *testing.T) {
	h := startRun(t, oneJob(job("a")), map[string]string{
		"source.md": "s\n",
		"a.md":      validText,
	})

	j := h.launch("a")["a"]
	assert.Equal(t, 1, j.Attempt)
	assert.False(t, h.exists("a.md"))
	assert.Equal(t, validText, h.read(".custodian/jobs/a/kept/1-a.md"))
}

func TestMissingOutputNamesTheJobAgain(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	h.launch("a")
	j := h.launch("a")["a"]
	assert.Equal(t, 2, j.Attempt)
	assert.Contains(t, recordText(t, j.Prompt), "no output was written to a.md")
	b := h.blocked()["a"]
	assert.Equal(t, workflow.BlockNoOutput, b.Kind)
	assert.Equal(t, "no output, attempt 2 of 2", b.Reason)
}
