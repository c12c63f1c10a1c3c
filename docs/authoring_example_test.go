package docs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/trial/workflowtest"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// registry holds the definitions under test, as the binary registers them.
func registry(t *testing.T) *workflow.Registry {
	t.Helper()
	reg, err := workflow.NewRegistry(definitions.Review)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestRecordedRunsReplay holds every run recorded under testdata/runs to
// the definitions as they are now. A change that would reopen accepted
// work, block a run on a changed definition, or name other jobs from one
// replay to the next fails it, with check's report.
func TestRecordedRunsReplay(t *testing.T) {
	workflowtest.ReplayAll(t, registry(t), "testdata/runs")
}

// reviewText passes every validator of review: a heading, a bullet, and a
// verdict on the last line.
const reviewText = "# Review\n\n- The claim rests on two teams.\n\nVerdict: revise\n"

// startReview starts a run of review in a fresh directory that holds the
// paper. It returns the run and the file its publish effect writes.
func startReview(t *testing.T) (*engine.Run, string) {
	t.Helper()
	dir := t.TempDir()
	paper := "# A result\n\nTwo teams found the same effect.\n"
	if err := os.WriteFile(filepath.Join(dir, "paper.md"), []byte(paper), 0o644); err != nil {
		t.Fatal(err)
	}
	publish := t.TempDir()
	o, err := engine.Start(registry(t), "review", dir, workflow.Params{"publish": publish})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return o, filepath.Join(publish, filepath.Base(dir)+".md")
}

// stepAndWork takes a step that must hand jobs out, and writes each job's
// output as its worker would.
func stepAndWork(t *testing.T, o *engine.Run) {
	t.Helper()
	out, err := o.Step()
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != engine.KindLaunch {
		t.Fatalf("the step gave %s, not launch", out.Kind)
	}
	for _, h := range out.Jobs {
		if err := os.WriteFile(h.Output, []byte(reviewText), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// stepToDone takes a step that must end the run.
func stepToDone(t *testing.T, o *engine.Run) {
	t.Helper()
	out, err := o.Step()
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != engine.KindDone {
		t.Fatalf("the step gave %s, not done", out.Kind)
	}
}

// TestFinishedRunReplaysUnchanged drives a run to its end and checks it
// with the same code: check replays the definition twice, so a definition
// that reads the clock or ranges over a map fails here before it misleads
// a run.
func TestFinishedRunReplaysUnchanged(t *testing.T) {
	o, _ := startReview(t)
	stepAndWork(t, o) // the two lenses
	stepAndWork(t, o) // reconcile
	stepToDone(t, o)  // accepts reconcile and runs both effects
	workflowtest.Replay(t, registry(t), o.Dir())
}

// TestPublishIsRecognizedAfterACrash ends the step that publishes inside
// the publish effect, as a crash would, before and after its do ran. The
// next step asks the recognizer: nothing published is absent, so publish
// runs again; the whole review published is completed, so it does not.
func TestPublishIsRecognizedAfterACrash(t *testing.T) {
	for _, tc := range []struct {
		ranDo bool
		runs  int // how often publish is journaled as started in all
	}{
		{ranDo: false, runs: 2},
		{ranDo: true, runs: 1},
	} {
		o, published := startReview(t)
		stepAndWork(t, o)
		stepAndWork(t, o)
		workflowtest.CrashIn(t, o, "publish", tc.ranDo)
		stepToDone(t, o)

		data, err := os.ReadFile(published)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), reviewText) {
			t.Errorf("ran do: %v: published %q", tc.ranDo, data)
		}
		s, err := o.Status()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range s.Effects {
			if e.Name == "publish" && e.Runs != tc.runs {
				t.Errorf("ran do: %v: publish started %d times, want %d", tc.ranDo, e.Runs, tc.runs)
			}
		}
	}
}
