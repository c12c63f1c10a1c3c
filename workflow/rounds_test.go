package workflow_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIndependentPathsAreHandedOutInOneRound(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "two", Run: func(ctx *workflow.Context) error {
		ctx.Parallel(
			func() { ctx.Agent(job("left")).Wait() },
			func() { ctx.Agent(job("right")).Wait() },
		)
		return nil
	}}, source)

	// The first path ends at its wait; the second must still get to name its job.
	jobs := h.launch("left", "right")
	h.work(jobs, nil)
	h.done()
}

func TestNamedJobIsHandedOutBeforeAnythingWaitsOnIt(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "eager", Run: func(ctx *workflow.Context) error {
		ctx.Agent(job("early"))
		ctx.Agent(job("waited")).Wait()
		return nil
	}}, source)

	jobs := h.launch("early", "waited")
	h.work(jobs, map[string]reply{"early": {}})
	// The run is not done while a named job is not accepted, even one nobody waits on.
	jobs = h.launch("early")
	assert.Equal(t, 2, jobs["early"].Attempt)
	h.work(jobs, nil)
	h.done()
}

func TestPathsOfUnequalLengthAdvanceRoundByRound(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "unequal", Run: func(ctx *workflow.Context) error {
		ctx.Parallel(
			func() { ctx.Agent(job("short")).Wait() },
			func() {
				ctx.Agent(job("first")).Wait()
				second := job("second")
				second.Inputs = []string{"first.md"}
				ctx.Agent(second).Wait()
				third := job("third")
				third.Inputs = []string{"second.md"}
				ctx.Agent(third).Wait()
			},
		)
		return nil
	}}, source)

	rounds := [][]string{{"first", "short"}, {"second"}, {"third"}}
	for _, names := range rounds {
		jobs := h.launch(names...)
		for _, j := range jobs {
			assert.Equal(t, 1, j.Attempt, "job %s", j.Name)
		}
		h.work(jobs, nil)
	}
	h.done()
}

func TestCleanRunHandsOutEachJobOnce(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "clean", Run: func(ctx *workflow.Context) error {
		a, b := ctx.Agent(job("a")), ctx.Agent(job("b"))
		ctx.Wait(a, b)
		c := job("c")
		c.Inputs = []string{"a.md", "b.md"}
		ctx.Agent(c).Wait()
		return nil
	}}, source)

	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, h.runToDone())
	for _, name := range []string{"a", "b", "c"} {
		assert.Equal(t, 1, h.state().Jobs[name].Handouts, "job %s", name)
	}
}

func TestPromptFileCarriesTaskPathsAndReplyRequest(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "method.md")
	writeFile(t, outside, "a method\n")
	h := startRun(t, &workflow.Definition{Name: "prompt", Run: func(ctx *workflow.Context) error {
		ctx.Agent(workflow.Job{
			Name:   "brief",
			Prompt: "Summarize the paper in five bullets.",
			Output: "out/brief.md",
			Inputs: []string{"paper.md", outside},
		}).Wait()
		return nil
	}}, map[string]string{"paper.md": "paper\n"})

	j := h.launch("brief")["brief"]
	assert.Equal(t, h.path("out/brief.md"), j.Output)
	assert.Equal(t, h.path("out/brief.problem.md"), j.Problem)
	assert.Equal(t, h.path(".custodian/jobs/brief/prompt-1.md"), j.Prompt)
	assert.True(t, filepath.IsAbs(j.Prompt))

	want := "Summarize the paper in five bullets.\n\n" +
		"## Inputs\n\n" +
		"- `" + outside + "`\n" +
		"- `" + h.path("paper.md") + "`\n\n" +
		"## Where to write\n\n" +
		"Write the result to `" + h.path("out/brief.md") + "`.\n" +
		"If you cannot finish the task, write why to `" + h.path("out/brief.problem.md") + "` instead.\n\n" +
		"Reply in one line that names the file you wrote. Do not repeat or summarize its content.\n"
	assert.Equal(t, want, recordText(t, j.Prompt))
}

func TestWaitReturnsAcceptedOutputsInTheOrderAsked(t *testing.T) {
	var got []string
	h := startRun(t, &workflow.Definition{Name: "order", Run: func(ctx *workflow.Context) error {
		a, b, c := ctx.Agent(job("a")), ctx.Agent(job("b")), ctx.Agent(job("c"))
		got = ctx.Wait(c, a, b)
		return nil
	}}, source)

	h.work(h.launch("a", "b", "c"), nil)
	h.done()
	assert.Equal(t, []string{h.path("c.md"), h.path("a.md"), h.path("b.md")}, got)
}

func TestGatherReturnsEachPathsValue(t *testing.T) {
	var got []string
	h := startRun(t, &workflow.Definition{Name: "gather", Run: func(ctx *workflow.Context) error {
		got = workflow.Gather(ctx,
			func() string { return "second:" + filepath.Base(ctx.Agent(job("b")).Wait()) },
			func() string { return "first:" + filepath.Base(ctx.Agent(job("a")).Wait()) },
		)
		return nil
	}}, source)

	h.work(h.launch("a", "b"), nil)
	h.done()
	assert.Equal(t, []string{"second:b.md", "first:a.md"}, got)
}

// A wait that cannot pass must end its path, whatever the definition does to
// catch it: otherwise code past the wait would run on an unaccepted output.
func TestEndOfPathCannotBeCaught(t *testing.T) {
	cases := []struct {
		name string
		run  func(ctx *workflow.Context, after *bool) error
	}{
		{"deferred recover in Run", func(ctx *workflow.Context, after *bool) error {
			defer func() { _ = recover() }()
			ctx.Wait(ctx.Agent(job("a")))
			*after = true
			return nil
		}},
		{"deferred recover in a Parallel path", func(ctx *workflow.Context, after *bool) error {
			ctx.Parallel(func() {
				defer func() { _ = recover() }()
				ctx.Agent(job("a")).Wait()
			})
			*after = true
			return nil
		}},
		{"deferred recover in a Gather path", func(ctx *workflow.Context, after *bool) error {
			workflow.Gather(ctx, func() int {
				defer func() { _ = recover() }()
				ctx.Agent(job("a")).Wait()
				return 1
			})
			*after = true
			return nil
		}},
		{"error check on the result", func(ctx *workflow.Context, after *bool) error {
			if paths := ctx.Wait(ctx.Agent(job("a"))); len(paths) == 0 {
				return fmt.Errorf("nothing accepted")
			}
			*after = true
			return nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			after := false
			h := startRun(t, &workflow.Definition{Name: "catch", Run: func(ctx *workflow.Context) error {
				return tc.run(ctx, &after)
			}}, source)

			jobs := h.launch("a")
			assert.False(t, after, "code after an unsatisfied wait ran")
			h.work(jobs, nil)
			h.done()
			assert.True(t, after, "code after a satisfied wait did not run")
		})
	}
}

func TestReplayContinuesPastAcceptedOutputsInAFreshOrchestrator(t *testing.T) {
	var reached []string
	def := &workflow.Definition{Name: "replay", Run: func(ctx *workflow.Context) error {
		reached = nil
		ctx.Agent(job("a")).Wait()
		reached = append(reached, "after a")
		b := job("b")
		b.Inputs = []string{"a.md"}
		ctx.Agent(b).Wait()
		reached = append(reached, "after b")
		return nil
	}}
	h := startRun(t, def, source)

	h.work(h.launch("a"), nil)
	h.reopen()
	h.work(h.launch("b"), nil)
	assert.Equal(t, []string{"after a"}, reached)
	h.reopen()
	h.done()
	assert.Equal(t, []string{"after a", "after b"}, reached)
	assert.Equal(t, 1, h.state().Jobs["a"].Handouts, "an accepted job was handed out again")
}

func TestFinishedRunReportsDoneAgain(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.runToDone()
	before := h.state().Jobs["a"]

	for range 3 {
		h.reopen()
		h.done()
	}
	after := h.state().Jobs["a"]
	assert.Equal(t, before.Handouts, after.Handouts)
	assert.Equal(t, before.Accepted, after.Accepted)
}

// A step assumes every worker of the previous round has finished: a
// hand-out that left no output is a failed attempt.
func TestStepWithoutWorkersConsumesARound(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	assert.Equal(t, 1, h.launch("a")["a"].Attempt)
	assert.Equal(t, 2, h.launch("a")["a"].Attempt)
	b := h.blocked()["a"]
	assert.Equal(t, workflow.BlockNoOutput, b.Kind)
	assert.Equal(t, "no output, attempt 2 of 2", b.Reason)
	assert.Equal(t, workflow.PermitRepair, b.Permitted)
}

func TestSixStepsWithoutWorkersUseUpTheDefaults(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	var seen []string
	for range 9 {
		out := h.step()
		switch out.Kind {
		case workflow.KindLaunch:
			seen = append(seen, fmt.Sprintf("launch %d", out.Jobs[0].Attempt))
		case workflow.KindBlocked:
			require.Len(t, out.Blocks, 1)
			seen = append(seen, "blocked "+string(out.Blocks[0].Permitted))
		default:
			seen = append(seen, string(out.Kind))
		}
	}
	assert.Equal(t, []string{
		"launch 1", "launch 2", "blocked repair",
		"launch 3", "launch 4", "blocked stop",
		"blocked stop", "blocked stop", "blocked stop",
	}, seen)
	// The repeated stop is the standing block, not a new one each step.
	assert.Equal(t, 2, h.state().Jobs["a"].Blocks)
	entries, err := os.ReadDir(h.path(".custodian/jobs/a"))
	require.NoError(t, err)
	var blockRecords []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "block-") {
			blockRecords = append(blockRecords, e.Name())
		}
	}
	assert.Equal(t, []string{"block-1.md", "block-2.md"}, blockRecords)
}
