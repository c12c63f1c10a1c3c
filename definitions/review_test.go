package definitions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

const paperText = "# On decision records\n\nTeams that keep decision records revisit fewer decisions.\n"

// reviewText is a review its validator accepts.
const reviewText = "# Review\n\n- The claim rests on two teams only.\n\nVerdict: revise\n"

// startReview starts a run of the review definition in a fresh directory,
// with paper.md in place when paper is true, and returns the run directory
// and an agent that drives it in process with script.
func startReview(t *testing.T, params workflow.Params, paper bool, script trial.Script) (string, *trial.Agent) {
	t.Helper()
	dir := t.TempDir()
	if paper {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "paper.md"), []byte(paperText), 0o644))
	}
	o, err := engine.Start(Builtin(), "review", dir, params)
	require.NoError(t, err)
	return o.Dir(), &trial.Agent{Runner: trial.InProcess(o), RunDir: o.Dir(), Script: script}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

func TestReviewIsBuiltIn(t *testing.T) {
	d, err := Builtin().Lookup("review")
	require.NoError(t, err)
	assert.Same(t, Review, d)
}

func TestReviewRunsToDoneAndPublishes(t *testing.T) {
	publishDir := filepath.Join(t.TempDir(), "published")
	// The first reconcile worker forgets the verdict; the retry prompt says
	// so, and the second meets it.
	dir, agent := startReview(t, workflow.Params{"publish": publishDir}, true, trial.Script{
		Workers: map[string][]trial.Behaviour{
			"reconcile": {trial.Valid, trial.ValidWith(reviewText)},
		},
	})

	tr, err := agent.Drive()

	require.NoError(t, err)
	assert.Equal(t, []string{
		"launch lens-claims lens-method",
		"launch reconcile",
		"launch reconcile",
		"done",
	}, tr.Course())
	assert.Empty(t, tr.Reports, "a run that goes well needs no report")

	retry := readText(t, tr.Steps[2].Jobs[0].Prompt)
	assert.Contains(t, retry, "## Why the previous attempt was refused\n\n- end with one line 'Verdict: accept'")

	stamp := readText(t, filepath.Join(dir, "reviewed-at.txt"))
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$`, stamp)
	got := readText(t, filepath.Join(publishDir, filepath.Base(dir)+".md"))
	assert.Equal(t, strings.TrimRight(reviewText, "\n")+"\n\nReviewed at "+stamp, got)
}

func TestReviewPublishesOnce(t *testing.T) {
	publishDir := t.TempDir()
	dir, agent := startReview(t, workflow.Params{"publish": publishDir}, true, trial.Script{
		Workers: map[string][]trial.Behaviour{"reconcile": {trial.ValidWith(reviewText)}},
	})
	tr, err := agent.Drive()
	require.NoError(t, err)
	require.Equal(t, engine.KindDone, tr.Final.Kind)
	target := filepath.Join(publishDir, filepath.Base(dir)+".md")
	stamp := readText(t, filepath.Join(dir, "reviewed-at.txt"))

	// Someone takes the publication down. The effect completed, so no step
	// runs it again: code never repeats an effect.
	require.NoError(t, os.Remove(target))
	out, err := agent.Runner.Step()

	require.NoError(t, err)
	assert.Equal(t, engine.KindDone, out.Kind)
	assert.NoFileExists(t, target)
	assert.Equal(t, stamp, readText(t, filepath.Join(dir, "reviewed-at.txt")), "the clock is read once")
}

func TestReviewWithoutPaperBlocksOnWorkflowForARepair(t *testing.T) {
	putPaper := func(runDir string, _ engine.Block) (string, error) {
		return "put paper.md in place", os.WriteFile(filepath.Join(runDir, "paper.md"), []byte(paperText), 0o644)
	}
	_, agent := startReview(t, workflow.Params{"publish": t.TempDir()}, false, trial.Script{
		Workers: map[string][]trial.Behaviour{"reconcile": {trial.ValidWith(reviewText)}},
		Repairs: map[string]trial.Repair{"workflow": putPaper},
	})

	tr, err := agent.Drive()

	require.NoError(t, err)
	assert.Equal(t, []string{
		"blocked workflow:workflow-error:repair",
		"launch lens-claims lens-method",
		"launch reconcile",
		"done",
	}, tr.Course())
	require.Len(t, tr.Reports, 1)
	assert.Equal(t, trial.Report{Event: engine.ReportRepair, Text: "put paper.md in place"}, tr.Reports[0])
	record := readText(t, tr.Steps[0].Blocks[0].Record)
	assert.Contains(t, record, "the paper to review")
}

func TestReviewIsNotStartedWithoutItsPublishDirectory(t *testing.T) {
	reg, err := workflow.NewRegistry(Review)
	require.NoError(t, err)
	for name, params := range map[string]workflow.Params{
		"none":     nil,
		"relative": {"publish": "published"},
		"unknown":  {"publish": "/abs", "publsh": "/abs"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			_, err := engine.Start(reg, "review", dir, params)
			require.ErrorIs(t, err, engine.ErrUsage, "a parameter a run cannot do without is refused at start")
			assert.Equal(t, "the parameters of review are: publish (the absolute directory the review is published to; required)", engine.Hint(err))
			assert.NoFileExists(t, filepath.Join(dir, ".custodian", "run.json"))
		})
	}
}

func TestReviewValidators(t *testing.T) {
	cases := []struct {
		name     string
		validate workflow.Validator
		text     string
		refusals []string // nil: accepted
	}{
		{"a lens with a heading and a bullet", headingAndBullets, "# Methods\n\n- small sample\n", nil},
		{"a lens without a heading", headingAndBullets, "- small sample\n", []string{
			"start with a level-one heading (a first line that begins with '# ')"}},
		{"a lens without bullets", headingAndBullets, "# Methods\n\nfine\n", []string{
			"give at least one point as a bullet (a line that begins with '- ')"}},
		{"a review with a verdict", reviewValid, reviewText, nil},
		{"a review without a verdict", reviewValid, "# Review\n\n- a point\n", []string{
			"end with one line 'Verdict: accept', 'Verdict: revise' or 'Verdict: reject'"}},
		{"a review without anything", reviewValid, "Looks good.\n", []string{
			"start with a level-one heading (a first line that begins with '# ')",
			"give at least one point as a bullet (a line that begins with '- ')",
			"end with one line 'Verdict: accept', 'Verdict: revise' or 'Verdict: reject'"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.md")
			require.NoError(t, os.WriteFile(path, []byte(tc.text), 0o644))

			err := tc.validate(path)

			if tc.refusals == nil {
				assert.NoError(t, err)
				return
			}
			var refusal *workflow.Refusal
			require.ErrorAs(t, err, &refusal)
			assert.Equal(t, tc.refusals, refusal.Messages)
		})
	}

	t.Run("a validator that cannot read the output fails, and does not refuse", func(t *testing.T) {
		err := headingAndBullets(filepath.Join(t.TempDir(), "missing.md"))
		require.Error(t, err)
		var refusal *workflow.Refusal
		assert.False(t, errors.As(err, &refusal))
	})
}

func TestRecognizeStamp(t *testing.T) {
	stamp := filepath.Join(t.TempDir(), "reviewed-at.txt")
	got, err := recognizeStamp(stamp)
	require.NoError(t, err)
	assert.Equal(t, workflow.Absent, got)

	require.NoError(t, writeAtomic(stamp, []byte("2026-01-02T03:04:05Z\n")))
	got, err = recognizeStamp(stamp)
	require.NoError(t, err)
	assert.Equal(t, workflow.Completed, got)
}

func TestRecognizeReview(t *testing.T) {
	runDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "review.md"), []byte(reviewText), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "reviewed-at.txt"), []byte("2026-01-02T03:04:05Z\n"), 0o644))
	target := filepath.Join(t.TempDir(), "run.md")

	got, err := recognizeReview(runDir, target)
	require.NoError(t, err)
	assert.Equal(t, workflow.Absent, got, "nothing published: running it is safe")

	require.NoError(t, publishReview(runDir, target))
	got, err = recognizeReview(runDir, target)
	require.NoError(t, err)
	assert.Equal(t, workflow.Completed, got, "exactly what publish writes")

	require.NoError(t, os.WriteFile(target, []byte("# Review\n"), 0o644))
	got, err = recognizeReview(runDir, target)
	require.NoError(t, err)
	assert.Equal(t, workflow.Unknown, got, "other bytes: nobody can vouch for them")
}
