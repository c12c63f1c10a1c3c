package engine_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// editable is a one-job definition whose prompt, launch parameters and
// validator a test can change between steps, as an author edits code.
type editable struct {
	prompt string
	launch map[string]any
	strict bool // the validator also refuses what hasHeading accepts
}

func (e *editable) definition() *workflow.Definition {
	return &workflow.Definition{Name: "editable", Run: func(ctx *workflow.Context) error {
		j := job("a")
		j.Prompt = e.prompt
		j.Launch = e.launch
		strict := e.strict
		j.Validate = func(path string) error {
			if strict {
				return workflow.Refuse("the stricter validator refuses")
			}
			return hasHeading(path)
		}
		ctx.Agent(j).Wait()
		return nil
	}}
}

func TestAcceptedJobReopensWithAFullSetOfAttempts(t *testing.T) {
	cases := []struct {
		name   string
		change func(h *harness, e *editable)
		kept   string // what the reopening moves aside; "" for nothing
		// redefined: the change is another build's code, which blocks until
		// the operator lets it through. By the same build, a prompt or a
		// launch change is the run's own course (data the definition reads).
		redefined bool
	}{
		{"an input's bytes change", func(h *harness, e *editable) { h.write("source.md", "another source\n") }, validText, false},
		{"the prompt changes by the same build", func(h *harness, e *editable) { e.prompt = "Do a, better." }, validText, false},
		{"the launch parameters change by the same build", func(h *harness, e *editable) { e.launch = map[string]any{"model": "large"} }, validText, false},
		{"the prompt changes by another build", func(h *harness, e *editable) { e.prompt = "Do a, better."; h.asAnotherBuild() }, validText, true},
		{"the launch parameters change by another build", func(h *harness, e *editable) { e.launch = map[string]any{"model": "large"}; h.asAnotherBuild() }, validText, true},
		{"the validator now refuses", func(h *harness, e *editable) { e.strict = true }, validText, false},
		{"the output is edited", func(h *harness, e *editable) { h.write("a.md", "# Heading\n\nedited by hand\n") }, "# Heading\n\nedited by hand\n", false},
		{"the output is removed", func(h *harness, e *editable) { h.remove("a.md") }, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &editable{prompt: "Do a.", launch: map[string]any{"model": "small"}}
			h := startRun(t, e.definition(), source)
			h.work(h.launch("a"), nil)
			h.done()

			tc.change(h, e)
			if tc.redefined {
				b := h.blocked()["workflow"]
				require.Equal(t, engine.BlockDefinitionChanged, b.Kind)
				require.Equal(t, engine.PermitStop, b.Permitted)
				require.NoError(t, h.o.Release(engine.WorkflowSubject))
			}
			j := h.launch("a")["a"]
			assert.Equal(t, 2, j.Attempt)
			// A reopening is no failed attempt: the new prompt carries no refusal.
			assert.NotContains(t, recordText(t, j.Prompt), "## Why the previous attempt was refused")
			assert.Equal(t, 0, failures(h.state().Jobs["a"]))
			assert.Empty(t, h.state().Jobs["a"].Accepted)
			assert.False(t, h.exists("a.md"), "the reopened output stays in the worker's way")
			if tc.kept != "" {
				assert.Equal(t, tc.kept, h.read(".custodian/jobs/a/kept/1-a.md"))
			} else {
				assert.NoDirExists(t, h.path(".custodian/jobs/a/kept"))
			}

			// A full set of attempts: one retry, then the block.
			assert.Equal(t, 3, h.launch("a")["a"].Attempt)
			b := h.blocked()["a"]
			assert.Equal(t, "no output, attempt 2 of 2", b.Reason)
			assert.Equal(t, engine.PermitRepair, b.Permitted)
		})
	}
}

func TestUnchangedAcceptedJobStaysAccepted(t *testing.T) {
	e := &editable{prompt: "Do a.", launch: map[string]any{"model": "small"}}
	h := startRun(t, e.definition(), source)
	h.work(h.launch("a"), nil)
	h.done()

	// Rewriting the same bytes and rebuilding equal launch data is no change.
	h.write("source.md", source["source.md"])
	h.write("a.md", validText)
	e.launch = map[string]any{"model": "small"}
	h.reopen()
	h.done()
	assert.Equal(t, 1, h.state().Jobs["a"].Handouts)
}

// A refused output belongs to the input state it was made from: when an
// input changed while the worker ran, the output is refused even if valid.
func TestOutputRefusedWhenAnInputChangedAfterHandout(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "changed", Run: func(ctx *workflow.Context) error {
		j := job("a")
		j.Inputs = []string{"source.md", "other.md"}
		ctx.Agent(j).Wait()
		return nil
	}}, map[string]string{"source.md": "s\n", "other.md": "o\n"})

	h.work(h.launch("a"), nil)
	h.write("other.md", "changed while the worker ran\n")
	j := h.launch("a")["a"]
	assert.Equal(t, 2, j.Attempt)
	st := h.state().Jobs["a"]
	assert.Equal(t, 1, failures(st), "the refusal is a failed attempt")
	assert.Empty(t, st.Accepted)
	prompt := recordText(t, j.Prompt)
	assert.Contains(t, prompt, "## Why the previous attempt was refused")
	assert.Contains(t, prompt, "other.md changed")
	assert.NotContains(t, prompt, "source.md changed")

	h.work(map[string]engine.Handout{"a": j}, nil)
	h.write("other.md", "changed again\n")
	b := h.blocked()["a"]
	assert.Equal(t, engine.BlockInputChanged, b.Kind)
	assert.Contains(t, b.Reason, "other.md")
	assert.Contains(t, b.Reason, "attempt 2 of 2")
	assert.Contains(t, recordText(t, b.Record), "other.md changed")
}

// Inputs inside the run are hashed by their run-relative path, however the
// definition spells them, so that moving the run keeps every acceptance.
func TestMovedRunKeepsItsAcceptances(t *testing.T) {
	def := &workflow.Definition{Name: "moved", Run: func(ctx *workflow.Context) error {
		a := job("a")
		a.Inputs = []string{ctx.Path("source.md")}
		b := job("b")
		b.Output = ctx.Path("b.md")
		ctx.Wait(ctx.Agent(a), ctx.Agent(b))
		c := job("c")
		c.Inputs = []string{ctx.Path("a.md"), "b.md"}
		ctx.Agent(c).Wait()
		return nil
	}}
	h := startRun(t, def, source)
	h.runToDone()

	moved := filepath.Join(t.TempDir(), "elsewhere")
	require.NoError(t, os.Rename(h.dir, moved))
	h.dir = moved
	h.reopen()
	assert.Equal(t, moved, h.o.Dir())
	h.done()
	for _, name := range []string{"a", "b", "c"} {
		assert.Equal(t, 1, h.state().Jobs[name].Handouts, "job %s was handed out again", name)
	}
}

func TestAbsoluteInputInsideTheRunCountsAsRunRelative(t *testing.T) {
	absolute := false
	h := startRun(t, &workflow.Definition{Name: "abs", Run: func(ctx *workflow.Context) error {
		j := job("a")
		if absolute {
			j.Inputs = []string{ctx.Path("source.md")}
		}
		ctx.Agent(j).Wait()
		return nil
	}}, source)
	h.work(h.launch("a"), nil)
	h.done()

	// The same file, now declared by its absolute path, is the same input.
	absolute = true
	h.done()
	js := h.state().Jobs["a"]
	require.NotEmpty(t, js.Accepted)
	require.Len(t, js.Input.Files, 1)
	assert.Equal(t, "source.md", js.Input.Files[0].Path)
}

func TestStateHoldsNoAbsoluteRunPath(t *testing.T) {
	refuse := true
	h := startRun(t, &workflow.Definition{Name: "paths", Run: func(ctx *workflow.Context) error {
		a := job("a")
		a.Inputs = []string{ctx.Path("source.md")}
		b := job("b")
		b.Output = ctx.Path("sub/b.md")
		b.Validate = func(path string) error {
			if refuse {
				return workflow.Refuse("refused")
			}
			return nil
		}
		ctx.Wait(ctx.Agent(a), ctx.Agent(b))
		return nil
	}}, source)

	// Acceptances, refusals, kept files and a stop all leave their mark in state.json.
	jobs := h.launch("a", "b")
	h.work(jobs, nil)
	h.work(h.launch("b"), nil)
	h.blocked()
	h.work(h.launch("b"), nil)
	h.work(h.launch("b"), nil)
	require.Equal(t, engine.PermitStop, h.blocked()["b"].Permitted)

	state := string(h.stateBytes())
	assert.NotContains(t, state, h.dir)
	assert.NotContains(t, state, filepath.Dir(h.dir))
	assert.True(t, strings.Contains(state, `"source.md"`), "state.json names inputs run-relative")
}

// A step hashes a shared input once, but never serves a stale hash: a file
// the definition's own code rewrote during the replay is hashed again.
func TestAnInputRewrittenDuringTheReplayIsHashedAgain(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "rewrite", Run: func(ctx *workflow.Context) error {
		reads := func(name string) workflow.Job {
			j := job(name)
			j.Inputs = []string{"x.md"}
			return j
		}
		a := ctx.Agent(reads("a"))
		if err := os.WriteFile(ctx.Path("x.md"), []byte("the second, longer text\n"), 0o644); err != nil {
			return err
		}
		b := ctx.Agent(reads("b"))
		ctx.Wait(a, b)
		return nil
	}}, map[string]string{"x.md": "first\n"})
	h.launch("a", "b")

	sum := func(text string) string {
		s := sha256.Sum256([]byte(text))
		return hex.EncodeToString(s[:])
	}
	st := h.state()
	assert.Equal(t, sum("first\n"), st.Jobs["a"].Input.Files[0].SHA256)
	assert.Equal(t, sum("the second, longer text\n"), st.Jobs["b"].Input.Files[0].SHA256)
}

const refusalSection = "## Why the previous attempt was refused"

func TestInvalidOutputIsHandedOutAgainWithTheValidatorsMessage(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	first := h.launch("a")["a"]
	h.work(map[string]engine.Handout{"a": first}, map[string]reply{"a": {output: invalidText}})
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
	assert.Equal(t, 0, failures(st))
	assert.Empty(t, messages(st))
}

func TestSecondInvalidOutputBlocksWithARepair(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.work(h.launch("a"), map[string]reply{"a": {output: "still no heading\n"}})
	b := h.blocked()["a"]

	assert.Equal(t, engine.BlockRefused, b.Kind)
	assert.Equal(t, "the output was refused by its validator, attempt 2 of 2", b.Reason)
	assert.Equal(t, engine.PermitRepair, b.Permitted)
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
	assert.Equal(t, 1, failures(b))
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
	assert.NotEmpty(t, h.state().Jobs["b"].Accepted, "a reopening is applied only when the job is handed out")
	assert.False(t, h.exists(".custodian/jobs/b/prompt-2.md"))
}

func TestNextBlockOfTheSameSubjectPermitsOnlyStopping(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	invalid := map[string]reply{"a": {output: invalidText}}

	for cycle, want := range []engine.Permission{engine.PermitRepair, engine.PermitStop} {
		h.work(h.launch("a"), invalid)
		h.work(h.launch("a"), invalid)
		b := h.blocked()["a"]
		require.Equal(t, want, b.Permitted, "block %d", cycle+1)
	}
	stop := h.state().Jobs["a"]
	require.NotNil(t, stopped(stop))

	// Stopping is final for the agent orchestrator: even a valid output put in
	// place is not judged until the operator releases the job.
	h.write("a.md", validText)
	for range 2 {
		b := h.blocked()["a"]
		assert.Equal(t, engine.PermitStop, b.Permitted)
		assert.Equal(t, h.path(".custodian/jobs/a/block-2.md"), b.Record)
	}
	assert.Equal(t, stop.Handouts, h.state().Jobs["a"].Handouts)
	assert.Equal(t, stop.Trouble.Blocks, h.state().Jobs["a"].Trouble.Blocks)
	assert.Empty(t, h.state().Jobs["a"].Accepted)
}

func TestRetryLimitStartsOverAfterABlock(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	invalid := map[string]reply{"a": {output: invalidText}}

	h.work(h.launch("a"), invalid)
	h.work(h.launch("a"), invalid)
	first := h.blocked()["a"]
	require.Equal(t, engine.PermitRepair, first.Permitted)

	j := h.launch("a")["a"]
	assert.Equal(t, 3, j.Attempt)
	assert.NotContains(t, recordText(t, j.Prompt), refusalSection,
		"the first hand-out after a block starts a new cycle")
	h.work(map[string]engine.Handout{"a": j}, invalid)
	assert.Equal(t, 4, h.launch("a")["a"].Attempt, "the cycle after a block has its retry")
	h.write("a.md", invalidText)
	second := h.blocked()["a"]
	assert.Equal(t, engine.PermitStop, second.Permitted)
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
	h.work(map[string]engine.Handout{"a": j}, map[string]reply{"a": {output: invalidText}})
	assert.Equal(t, engine.PermitRepair, h.blocked()["a"].Permitted)
}

func TestAcceptanceResetsTheRepairCount(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	nothing := map[string]reply{"a": {}}

	h.work(h.launch("a"), nothing)
	h.work(h.launch("a"), nothing)
	require.Equal(t, engine.PermitRepair, h.blocked()["a"].Permitted)
	h.work(h.launch("a"), nil)
	h.done()

	// A block after the acceptance is the first toward the limit again.
	h.write("source.md", "a new source\n")
	h.work(h.launch("a"), nothing)
	h.work(h.launch("a"), nothing)
	b := h.blocked()["a"]
	assert.Equal(t, engine.PermitRepair, b.Permitted)
	assert.Equal(t, h.path(".custodian/jobs/a/block-2.md"), b.Record)
}

func TestLimitsWithoutRepairsStopAtTheFirstBlock(t *testing.T) {
	def := oneJob(job("a"))
	def.Limits = func(workflow.Params) workflow.Limits { return workflow.Limits{Retries: 1, Repairs: 0} }
	h := startRun(t, def, source)

	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	b := h.blocked()["a"]
	assert.Equal(t, engine.PermitStop, b.Permitted)
	assert.Equal(t, "the output was refused by its validator, attempt 2 of 2", b.Reason)
}

func TestLimitsWithoutRetriesBlockAtTheFirstFailure(t *testing.T) {
	def := oneJob(job("a"))
	def.Limits = func(workflow.Params) workflow.Limits { return workflow.Limits{Retries: 0, Repairs: 1} }
	h := startRun(t, def, source)

	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	b := h.blocked()["a"]
	assert.Equal(t, "the output was refused by its validator, attempt 1 of 1", b.Reason)
	assert.Equal(t, engine.PermitRepair, b.Permitted)
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
			h.work(map[string]engine.Handout{"a": retry}, nil)
			b := h.blocked()["a"]
			assert.Equal(t, engine.BlockValidatorFailed, b.Kind)
			assert.Contains(t, recordText(t, b.Record), tc.message)
			assert.Empty(t, h.state().Jobs["a"].Accepted)
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
	assert.Empty(t, h.state().Jobs["a"].Accepted)
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
	assert.Equal(t, engine.BlockNoOutput, b.Kind)
	assert.Equal(t, "no output, attempt 2 of 2", b.Reason)
}

func TestProblemPath(t *testing.T) {
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

			assert.Equal(t, engine.BlockProblemReport, b.Kind)
			assert.Equal(t, engine.PermitRepair, b.Permitted, "a problem report is no retry: it blocks on the first attempt")
			record := recordText(t, b.Record)
			assert.Contains(t, record, "## Problem report\n\n> "+problemText, "the report is quoted line by line")

			assert.False(t, h.exists("a.problem.md"), "the report stays in place")
			assert.False(t, h.exists("a.md"), "the output beside the report stays in place")
			assert.Equal(t, problemText, h.read(".custodian/jobs/a/kept/1-a.problem.md"))
			want := "## Kept\n\n- a.problem.md is moved to .custodian/jobs/a/kept/1-a.problem.md\n"
			if tc.output != "" {
				assert.Equal(t, tc.output, h.read(".custodian/jobs/a/kept/2-a.md"))
				want += "- a.md is moved to .custodian/jobs/a/kept/2-a.md\n"
			}
			assert.Contains(t, record, want)
			assert.Empty(t, h.state().Jobs["a"].Accepted)

			// The repair: the next step hands the job out again and does not block.
			j := h.launch("a")["a"]
			assert.Equal(t, 2, j.Attempt)
			h.work(map[string]engine.Handout{"a": j}, nil)
			h.done()
		})
	}
}

func TestProblemReportBlocksAnAcceptedJob(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.runToDone()

	h.write("a.problem.md", problemText)
	b := h.blocked()["a"]
	assert.Equal(t, engine.BlockProblemReport, b.Kind)
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
			require.Equal(t, engine.BlockProblemReport, b.Kind)
			require.False(t, h.exists("a.md"))

			h.write("a.md", validText)
			out := h.step()
			assert.Equal(t, engine.KindLaunch, out.Kind, "the flagged output was accepted: %+v", out)
		})
	}
}

func TestProblemReportIsReadOnceOnly(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	h.work(h.launch("a"), map[string]reply{"a": {problem: problemText}})
	require.Equal(t, engine.BlockProblemReport, h.blocked()["a"].Kind)
	// Without any worker activity after the repair the job is merely due again.
	assert.Equal(t, 2, h.launch("a")["a"].Attempt)
	assert.Equal(t, 3, h.launch("a")["a"].Attempt)
	b := h.blocked()["a"]
	assert.Equal(t, engine.BlockNoOutput, b.Kind)
	assert.NotContains(t, recordText(t, b.Record), "## Problem report")
}
