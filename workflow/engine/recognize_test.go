package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A process that ends inside do leaves the journal saying started. The next
// step asks the recognizer what took place, and acts on its answer.
func TestRecognizer_processEndedInsideTheEffect(t *testing.T) {
	cases := []struct {
		name  string
		point string // where the child ends
		want  engine.Kind
		runs  int // how often do was entered, the ended run included
	}{
		// The effect took place in full: it is not repeated.
		{name: "after it took place in full", point: "full", want: engine.KindDone, runs: 1},
		// Nothing took place: it runs.
		{name: "before it began", point: "begin", want: engine.KindDone, runs: 2},
		// One of two writes took place: nobody can say it is done or undone.
		{name: "part way", point: "part", want: engine.KindUncertain, runs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := effectPublishRun(t, "files")
			r.crashStep(tc.point)
			require.Equal(t, store.EffectStarted, r.journal("publish").Status)

			out := r.expect(tc.want)
			assert.Equal(t, 1, r.asked("publish"))
			assert.Equal(t, tc.runs, r.runs("publish"))
			if tc.want == engine.KindUncertain {
				require.Equal(t, []string{"publish"}, effectNames(out.Effects))
				assert.Contains(t, out.Effects[0].Detail, "the effect started and its completion was not recorded")
				assert.Contains(t, out.Effects[0].Detail, "could not establish")
				assert.Equal(t, store.EffectStarted, r.journal("publish").Status)
				return
			}
			// Either way the effect now stands complete, and a later step
			// neither runs it nor asks about it again.
			assert.Equal(t, "# draft\n", r.published("draft.md"))
			assert.Equal(t, "draft.md\n", r.published("index.md"))
			e := r.journal("publish")
			assert.Equal(t, store.EffectCompleted, e.Status)
			assert.Equal(t, tc.runs, e.Runs, "the journal counts every start, the one the ended process made included")
			r.expect(engine.KindDone)
			assert.Equal(t, tc.runs, r.runs("publish"))
			assert.Equal(t, 1, r.asked("publish"))
		})
	}
}

// The effect took place in full each time; only the recognizer's failure to
// say so leaves its fate open, and the detail says why.
func TestRecognizer_noAnswerIsUncertain(t *testing.T) {
	cases := []struct {
		recognizer string
		detail     string
		asked      int
	}{
		{recognizer: "none", detail: "the definition gives no recognizer", asked: 0},
		{recognizer: "error", detail: "the recognizer failed: the publisher cannot be reached", asked: 1},
		{recognizer: "panic", detail: "the recognizer failed: the recognizer broke", asked: 1},
		{recognizer: "unknown", detail: "the recognizer could not establish whether it took place", asked: 1},
	}
	for _, tc := range cases {
		t.Run(tc.recognizer, func(t *testing.T) {
			r := effectPublishRun(t, tc.recognizer)
			r.crashStep("full")
			before := r.countedState()

			// Uncertain stays uncertain: each step asks again, and nothing
			// but the operator settles it.
			for step := 1; step <= 2; step++ {
				out := r.expect(engine.KindUncertain)
				require.Equal(t, []string{"publish"}, effectNames(out.Effects))
				assert.Equal(t, "the effect started and its completion was not recorded; "+tc.detail, out.Effects[0].Detail)
				assert.Empty(t, out.Jobs)
				assert.Empty(t, out.Blocks)
				assert.Equal(t, tc.asked*step, r.asked("publish"))
			}
			assert.Equal(t, 1, r.runs("publish"), "an uncertain effect is never run again by code")
			assert.Equal(t, store.EffectStarted, r.journal("publish").Status)
			assert.Equal(t, before, r.countedState(), "an uncertain step commits nothing but its history")
		})
	}
}

// A process that ends inside an effect cannot be simulated in the process
// that observes it: the engine catches every panic and runtime.Goexit as the
// end of a path, and writing the journal by hand would test the test. So the
// test binary runs itself again (the helper-process pattern of os/exec's
// tests): the child opens the same run with the same registry, steps it, and
// ends with os.Exit inside the effect's do. The parent then steps the run in
// this process, as the next `custodian step` would.

// TestEffectHelperProcess is not a test: it is the child process of the
// effect crash tests, and skips itself unless a parent started it.
func TestEffectHelperProcess(t *testing.T) {
	dir := os.Getenv(effectRunEnv)
	if dir == "" {
		t.Skip("the child process of the effect crash tests; runs only when started by one")
	}
	o, err := engine.Open(effectRegistry(), dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: open: %v\n", err)
		os.Exit(3)
	}
	out, err := o.Step()
	// Reaching this line means the step did not end inside the effect.
	text, _ := json.Marshal(out)
	fmt.Printf("child: the step returned %s, error %v\n", text, err)
	os.Exit(0)
}

// crashStep steps the run in a child process that must end inside an effect
// at point, leaving behind only what the child wrote before it ended.
func (r *effectRun) crashStep(point string) {
	r.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestEffectHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), effectRunEnv+"="+r.dir, effectCrashEnv+"="+point)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(r.t, err, &exit, "the child should have ended inside the effect at %s; it said:\n%s", point, out)
	require.Equal(r.t, effectCrashStatus, exit.ExitCode(), "the child said:\n%s", out)
	require.FileExists(r.t, effectOutside(r.dir, "ended-at-"+point), "the child ended, but not at %s", point)
	require.NoError(r.t, os.Remove(effectOutside(r.dir, "ended-at-"+point)))
}

func TestRecognizer_notAskedOfACompletedEffect(t *testing.T) {
	// The recognizer is the test's: being asked at all fails the test.
	def := &workflow.Definition{Name: "never-asked", Run: func(ctx *workflow.Context) error {
		ctx.Effect("publish", func() error { return effectTally(ctx.RunDir(), "publish.runs") },
			workflow.EffectInputs("release.md"),
			workflow.Recognize(func() (workflow.Recognition, error) {
				t.Errorf("the recognizer was asked about an effect journaled completed")
				return workflow.Unknown, nil
			}))
		return nil
	}}
	r := effectStartDef(t, def, map[string]string{"release.md": "v1\n"})

	r.expect(engine.KindDone)
	r.expect(engine.KindDone)
	// A completed effect whose inputs changed is out of step with the run,
	// but its fate is known: it blocks without asking anyone.
	r.write("release.md", "v2\n")
	r.blocked()
	assert.Equal(t, 1, r.runs("publish"))
}

func TestRecognizer_askedAfterAFailure(t *testing.T) {
	cases := []struct {
		name      string
		do        func() error
		recovered bool // the definition wraps the call in a deferred recover
		reason    string
	}{
		{name: "error, the definition carries on", do: func() error { return errors.New("upload refused") }, reason: "upload refused"},
		{name: "error, the definition recovers", do: func() error { return errors.New("upload refused") }, recovered: true, reason: "upload refused"},
		{name: "panic, the definition carries on", do: func() error { panic("upload exploded") }, reason: "upload exploded"},
		{name: "panic, the definition recovers", do: func() error { panic("upload exploded") }, recovered: true, reason: "upload exploded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls, asked int
			continued := false
			def := &workflow.Definition{Name: "failing", Run: func(ctx *workflow.Context) error {
				call := func() {
					ctx.Effect("publish", func() error { calls++; return tc.do() },
						workflow.Recognize(func() (workflow.Recognition, error) { asked++; return workflow.Completed, nil }))
				}
				if tc.recovered {
					func() {
						defer func() { _ = recover() }()
						call()
					}()
				} else {
					call()
				}
				// Reached only if the effect stands.
				continued = true
				ctx.Agent(effectJob("after", "source.md")).Wait()
				return nil
			}}
			r := effectStartDef(t, def, effectSource)

			blocks := r.blocked()
			require.Equal(t, []string{"workflow"}, effectSubjects(blocks))
			b := blocks["workflow"]
			assert.Equal(t, engine.BlockWorkflowError, b.Kind)
			assert.Contains(t, b.Reason, "effect publish")
			assert.Contains(t, b.Reason, tc.reason)
			assert.False(t, continued, "the definition went on past a failed effect")
			assert.Equal(t, 1, calls)
			assert.Equal(t, 0, asked)
			// The journal keeps the start: what the failed do did is open.
			assert.Equal(t, store.EffectStarted, r.journal("publish").Status)

			// The next step does not run do again; it asks the recognizer,
			// and the effect it recognizes lets the definition go on.
			r.launch(false, "after")
			assert.Equal(t, 1, asked)
			assert.Equal(t, 1, calls)
			assert.True(t, continued)
			assert.Equal(t, store.EffectCompleted, r.journal("publish").Status)
		})
	}
}
