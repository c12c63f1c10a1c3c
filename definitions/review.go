package definitions

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/custodian-run/custodian/workflow"
)

// Review is the worked example of docs/authoring.md. Two lenses read
// paper.md in the same round, a third job reconciles them into review.md,
// an effect records when the review was finished, and a second effect
// publishes the review to the directory named by the parameter publish.
//
// Start a run with the paper in place:
//
//	mkdir RUN && cp paper.md RUN/
//	custodian start review --run RUN --param publish=/abs/dir
var Review = &workflow.Definition{
	Name: "review",
	Doc:  "reviews paper.md with two lenses, reconciles them into review.md and publishes the review",
	// A run cannot start without the directory it publishes to: no repair
	// could supply a parameter later.
	Params: []workflow.Param{
		{Name: "publish", Doc: "the absolute directory the review is published to", Required: true, Validate: isAbsolute},
	},
	// Reconciling two lenses is the hard part: three attempts a cycle, and
	// one repair before a block permits only stopping.
	Limits: func(workflow.Params) workflow.Limits {
		return workflow.Limits{Retries: 2, Repairs: 1}
	},
	RepairScope: "put a missing paper.md in place or make the publish directory writable; " +
		"do not write or edit the content of a job's output, and do not change anything under .custodian/",
	Run: runReview,
}

func isAbsolute(dir string) error {
	if !filepath.IsAbs(dir) {
		return errors.New("give an absolute directory")
	}
	return nil
}

const lensFrame = "Read the paper in the input file. %s " +
	"Write a level-one heading, then one bullet ('- ') per point."

func runReview(ctx *workflow.Context) error {
	publishDir := ctx.Param("publish")

	// A mechanical step: it only reads, so it is safe to repeat at every
	// replay. Its error blocks on workflow, and putting the paper in place
	// is a repair within scope.
	if _, err := os.Stat(ctx.Path("paper.md")); err != nil {
		return fmt.Errorf("the paper to review: %w", err)
	}

	// Both lenses are named before anything waits, so both are handed out
	// in the same round.
	method := ctx.Agent(workflow.Job{
		Name:     "lens-method",
		Prompt:   fmt.Sprintf(lensFrame, "As a reviewer of methods, list the weaknesses of how the results were obtained."),
		Output:   "lens-method.md",
		Inputs:   []string{"paper.md"},
		Validate: headingAndBullets,
	})
	claims := ctx.Agent(workflow.Job{
		Name:     "lens-claims",
		Prompt:   fmt.Sprintf(lensFrame, "As a reviewer of claims, list each claim and whether the paper supports it."),
		Output:   "lens-claims.md",
		Inputs:   []string{"paper.md"},
		Validate: headingAndBullets,
	})
	ctx.Wait(method, claims)

	// Named only after the wait: it reads the lenses' outputs.
	ctx.Agent(workflow.Job{
		Name: "reconcile",
		Prompt: "Reconcile the two reviews in the input files into one review: a level-one heading, " +
			"one bullet per point that matters, and a last line 'Verdict: accept', 'Verdict: revise' or 'Verdict: reject'.",
		Output:   "review.md",
		Inputs:   []string{"lens-method.md", "lens-claims.md"},
		Validate: reviewValid,
	}).Wait()

	// The clock is read once, inside an effect, and its value kept in a
	// file: a replay that read the clock again would get another answer.
	stamp := ctx.Path("reviewed-at.txt")
	ctx.Effect("stamp", func() error {
		return writeAtomic(stamp, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"))
	}, workflow.Recognize(func() (workflow.Recognition, error) {
		return recognizeStamp(stamp)
	}))

	// Publishing changes the world outside the run: it must happen once.
	target := filepath.Join(publishDir, filepath.Base(ctx.RunDir())+".md")
	ctx.Effect("publish", func() error {
		return publishReview(ctx.RunDir(), target)
	}, workflow.EffectInputs("review.md", "reviewed-at.txt"),
		workflow.Recognize(func() (workflow.Recognition, error) {
			return recognizeReview(ctx.RunDir(), target)
		}))
	return nil
}

// publishedReview is what the publish effect writes: the review and when
// it was finished. It is computed from the effect's declared inputs alone,
// so the recognizer can compute it again.
func publishedReview(runDir string) ([]byte, error) {
	review, err := os.ReadFile(filepath.Join(runDir, "review.md"))
	if err != nil {
		return nil, err
	}
	at, err := os.ReadFile(filepath.Join(runDir, "reviewed-at.txt"))
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "%s\n\nReviewed at %s", bytes.TrimRight(review, "\n"), at), nil
}

// publishReview writes the published review in one atomic replacement, so
// that the target holds either nothing or all of it, never a part.
func publishReview(runDir, target string) error {
	data, err := publishedReview(runDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	return writeAtomic(target, data)
}

// recognizeReview establishes what a publish cut short did: nothing at
// the target means it never took place, exactly the bytes it writes mean it
// did; anything else is a file nobody can vouch for.
func recognizeReview(runDir, target string) (workflow.Recognition, error) {
	got, err := os.ReadFile(target)
	if errors.Is(err, fs.ErrNotExist) {
		return workflow.Absent, nil
	}
	if err != nil {
		return workflow.Unknown, err
	}
	want, err := publishedReview(runDir)
	if err != nil {
		return workflow.Unknown, err
	}
	if bytes.Equal(got, want) {
		return workflow.Completed, nil
	}
	return workflow.Unknown, nil
}

// recognizeStamp: the stamp is written atomically, so it exists whole or
// not at all.
func recognizeStamp(stamp string) (workflow.Recognition, error) {
	_, err := os.Stat(stamp)
	switch {
	case err == nil:
		return workflow.Completed, nil
	case errors.Is(err, fs.ErrNotExist):
		return workflow.Absent, nil
	default:
		return workflow.Unknown, err
	}
}

// writeAtomic replaces path with data, outside the run, where a path may
// be trusted: renameio writes a temporary file beside it, syncs it and
// renames it over path; the directory is synced after, which renameio does
// not do, so that the rename survives a power cut.
func writeAtomic(path string, data []byte) error {
	if err := renameio.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// headingAndBullets accepts a lens: a level-one heading and at least one
// bullet. It reads only the output it is given.
func headingAndBullets(output string) error {
	data, err := os.ReadFile(output)
	if err != nil {
		return err // it could not judge: the validator failed
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var problems []string
	if !strings.HasPrefix(lines[0], "# ") {
		problems = append(problems, "start with a level-one heading (a first line that begins with '# ')")
	}
	bullets := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "- ") {
			bullets++
		}
	}
	if bullets == 0 {
		problems = append(problems, "give at least one point as a bullet (a line that begins with '- ')")
	}
	if len(problems) > 0 {
		return workflow.Refuse(problems...)
	}
	return nil
}

var verdictLine = regexp.MustCompile(`^Verdict: (accept|revise|reject)$`)

// reviewValid accepts a review: a lens's shape, and a verdict on the last
// line.
func reviewValid(output string) error {
	var problems []string
	var refusal *workflow.Refusal
	switch err := headingAndBullets(output); {
	case errors.As(err, &refusal):
		problems = append(problems, refusal.Messages...)
	case err != nil:
		return err
	}
	data, err := os.ReadFile(output)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if !verdictLine.MatchString(strings.TrimSpace(lines[len(lines)-1])) {
		problems = append(problems, "end with one line 'Verdict: accept', 'Verdict: revise' or 'Verdict: reject'")
	}
	if len(problems) > 0 {
		return workflow.Refuse(problems...)
	}
	return nil
}
