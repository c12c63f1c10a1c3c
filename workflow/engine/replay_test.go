package engine_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireRuleBroken steps h and requires a definition error that changed
// nothing: state.json left byte for byte as it was, no prompt handed out.
func requireRuleBroken(t *testing.T, h *harness) {
	t.Helper()
	before := h.stateBytes()
	prompts := promptFiles(t, h)
	out, err := h.o.Step()
	require.Error(t, err, "outcome: %+v", out)
	assert.ErrorIs(t, err, workflow.ErrDefinition)
	assert.Equal(t, string(before), string(h.stateBytes()), "a step that broke a rule changed state.json")
	assert.Equal(t, prompts, promptFiles(t, h), "a step that broke a rule wrote a prompt")
}

func promptFiles(t *testing.T, h *harness) []string {
	t.Helper()
	found, err := filepath.Glob(h.path(".custodian/jobs/*/prompt-*.md"))
	require.NoError(t, err)
	return found
}

func TestDefinitionRulesAreCheckedBeforeAnyHandout(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.md")
	with := func(name string, change func(j *workflow.Job)) workflow.Job {
		j := job(name)
		change(&j)
		return j
	}
	cases := []struct {
		name string
		jobs func(ctx *workflow.Context) []workflow.Job
	}{
		{"two jobs own one output", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{job("a"), with("b", func(j *workflow.Job) { j.Output = "a.md" })}
		}},
		{"two jobs own one output spelled ./a.md", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{job("a"), with("b", func(j *workflow.Job) { j.Output = "./a.md" })}
		}},
		{"two jobs own one output spelled sub/../a.md", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{job("a"), with("b", func(j *workflow.Job) { j.Output = "sub/../a.md" })}
		}},
		{"two jobs own one output, one absolute", func(ctx *workflow.Context) []workflow.Job {
			return []workflow.Job{job("a"), with("b", func(j *workflow.Job) { j.Output = ctx.Path("a.md") })}
		}},
		{"an output is another job's problem path", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{job("a"), with("b", func(j *workflow.Job) { j.Output = "./a.problem.md" })}
		}},
		{"a problem path is another job's output", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("b", func(j *workflow.Job) { j.Output = "./a.problem.md" }), job("a")}
		}},
		{"two outputs share a problem path", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Output = "x.md" }), with("b", func(j *workflow.Job) { j.Output = "x.txt" })}
		}},
		{"an output in .custodian", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Output = ".custodian/a.md" })}
		}},
		{"an output in ./.custodian/jobs", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Output = "./.custodian/jobs/a/a.md" })}
		}},
		{"an output that is .custodian", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Output = ".custodian" })}
		}},
		{"an absolute output in .custodian", func(ctx *workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Output = ctx.Path(".custodian/state.json") })}
		}},
		{"an output above the run", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Output = "../a.md" })}
		}},
		{"an output that climbs out", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Output = "sub/../../a.md" })}
		}},
		{"an absolute output outside the run", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Output = outside })}
		}},
		{"an empty output", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Output = "" })}
		}},
		{"the run directory as output", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Output = "." })}
		}},
		{"a job reads its own output", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Inputs = []string{"source.md", "./a.md"} })}
		}},
		{"a job reads its own output by absolute path", func(ctx *workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Inputs = []string{ctx.Path("a.md")} })}
		}},
		{"a job reads its own problem path", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Inputs = []string{"a.problem.md"} })}
		}},
		{"a job reads a pending output named before it", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{job("a"), with("b", func(j *workflow.Job) { j.Inputs = []string{"a.md"} })}
		}},
		{"a job reads a pending output named after it", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("b", func(j *workflow.Job) { j.Inputs = []string{"./a.md"} }), job("a")}
		}},
		{"a job reads a pending output by absolute path", func(ctx *workflow.Context) []workflow.Job {
			return []workflow.Job{job("a"), with("b", func(j *workflow.Job) { j.Inputs = []string{ctx.Path("a.md")} })}
		}},
		{"an empty input", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Inputs = []string{""} })}
		}},
		{"the reserved name workflow", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{job("workflow")}
		}},
		{"name Claims", func(*workflow.Context) []workflow.Job { return []workflow.Job{job("Claims")} }},
		{"name a b", func(*workflow.Context) []workflow.Job { return []workflow.Job{job("a b")} }},
		{"empty name", func(*workflow.Context) []workflow.Job { return []workflow.Job{job("")} }},
		{"name 1x", func(*workflow.Context) []workflow.Job { return []workflow.Job{job("1x")} }},
		{"name with a slash", func(*workflow.Context) []workflow.Job { return []workflow.Job{job("a/b")} }},
		{"a func in the launch parameters", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Launch = map[string]any{"hook": func() {}} })}
		}},
		{"a channel in the launch parameters", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Launch = map[string]any{"ch": make(chan int)} })}
		}},
		{"NaN in the launch parameters", func(*workflow.Context) []workflow.Job {
			return []workflow.Job{with("a", func(j *workflow.Job) { j.Launch = map[string]any{"t": math.NaN()} })}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startRun(t, &workflow.Definition{Name: "rules", Run: func(ctx *workflow.Context) error {
				// A valid job named first must not be handed out either.
				ctx.Agent(workflow.Job{Name: "first", Prompt: "First.", Output: "first.md"})
				for _, j := range tc.jobs(ctx) {
					ctx.Agent(j)
				}
				return nil
			}}, source)

			requireRuleBroken(t, h)
			assert.NoFileExists(t, outside)
		})
	}
}

// The definition's own error handling cannot hide a broken rule: the step
// fails however the definition reacts.
func TestBrokenRuleCannotBeCaught(t *testing.T) {
	cases := []struct {
		name string
		run  func(ctx *workflow.Context) error
	}{
		{"deferred recover", func(ctx *workflow.Context) error {
			defer func() { _ = recover() }()
			ctx.Agent(job("workflow"))
			return nil
		}},
		{"in one Parallel path", func(ctx *workflow.Context) error {
			ctx.Parallel(
				func() { ctx.Agent(job("a")).Wait() },
				func() {
					defer func() { _ = recover() }()
					ctx.Agent(job("Bad"))
				},
			)
			return nil
		}},
		{"in a Gather path that goes on", func(ctx *workflow.Context) error {
			workflow.Gather(ctx, func() bool {
				defer func() { _ = recover() }()
				ctx.Agent(job("Bad"))
				return true
			})
			return nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startRun(t, &workflow.Definition{Name: "hide", Run: tc.run}, source)
			requireRuleBroken(t, h)
		})
	}
}

// An accepted consumer whose producer is reopened must not pass its wait:
// the consumer's output was made from the producer's old output.
func TestAcceptedConsumerIsRefusedWhileItsProducerIsPending(t *testing.T) {
	consumerFirst := false
	h := startRun(t, &workflow.Definition{Name: "consumer", Run: func(ctx *workflow.Context) error {
		consumer := job("consumer")
		consumer.Inputs = []string{"producer.md"}
		if consumerFirst {
			ctx.Agent(consumer).Wait()
			ctx.Agent(job("producer")).Wait()
			return nil
		}
		ctx.Agent(job("producer")).Wait()
		ctx.Agent(consumer).Wait()
		return nil
	}}, source)
	h.runToDone()

	h.write("source.md", "the source changed\n")
	consumerFirst = true
	requireRuleBroken(t, h)

	// Named in the order the rule asks for, the producer is simply handed out.
	consumerFirst = false
	h.launch("producer")
}

func TestHandout_Launch(t *testing.T) {
	cases := []struct {
		name   string
		launch map[string]any
		want   string
	}{
		{"none", nil, `{}`},
		{"empty", map[string]any{}, `{}`},
		{"keys sorted", map[string]any{"n": 2, "model": "small"}, `{"model":"small","n":2}`},
		{"nested", map[string]any{"tools": []string{"read", "write"}, "opts": map[string]any{"z": 1.5, "a": true}},
			`{"opts":{"a":true,"z":1.5},"tools":["read","write"]}`},
		{"no HTML escaping", map[string]any{"note": "a<b & c>d"}, `{"note":"a<b & c>d"}`},
		{"null value", map[string]any{"effort": nil}, `{"effort":null}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := job("a")
			j.Launch = tc.launch
			h := startRun(t, oneJob(j), source)

			got := h.launch("a")["a"].Launch
			assert.Equal(t, tc.want, string(got))
			assert.JSONEq(t, tc.want, string(got))
		})
	}
}

// A path ends on its own goroutine, where nothing can catch it. A wait on a
// goroutine the definition started ends only that goroutine, and the path
// would go on as if it had passed: the engine finds that and refuses the
// definition rather than let code run past an unsatisfied wait.
func TestAWaitOnAGoroutineOfTheDefinitionIsRefused(t *testing.T) {
	var after bool
	h := startRun(t, &workflow.Definition{Name: "escape", Run: func(ctx *workflow.Context) error {
		a := ctx.Agent(job("a"))
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.Wait()
		}()
		wg.Wait()
		after = true
		return nil
	}}, source)

	before := h.stateBytes()
	_, err := h.o.Step()
	require.ErrorIs(t, err, workflow.ErrDefinition)
	assert.ErrorContains(t, err, "call Context methods only on the goroutine of Run or of a Parallel path")
	assert.True(t, after, "the path went on, which is what the engine must refuse")
	assert.Equal(t, before, h.stateBytes(), "a step that fails on a rule writes no state")
}

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

	// The inputs are listed in the order the definition declared them.
	want := "Summarize the paper in five bullets.\n\n" +
		"## Inputs\n\n" +
		"- `" + h.path("paper.md") + "`\n" +
		"- `" + outside + "`\n\n" +
		"## Where to write\n\n" +
		"Write the result to `" + h.path("out/brief.md") + "`.\n" +
		"If you cannot finish the task, write why to `" + h.path("out/brief.problem.md") + "` instead.\n\n" +
		"Reply in one line that names the file you wrote. Do not repeat or summarize its content.\n"
	assert.Equal(t, want, recordText(t, j.Prompt))
}

// A declared input that does not exist when the job is handed out is named
// in the prompt as missing; the input state still holds it, as absent.
func TestPromptNamesAMissingInput(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "prompt", Run: func(ctx *workflow.Context) error {
		ctx.Agent(workflow.Job{Name: "brief", Prompt: "Summarize.", Output: "brief.md",
			Inputs: []string{"paper.md", "notes.md"}}).Wait()
		return nil
	}}, map[string]string{"paper.md": "paper\n"})
	j := h.launch("brief")["brief"]
	p, err := engine.ParsePrompt([]byte(recordText(t, j.Prompt)))
	require.NoError(t, err)
	assert.Equal(t, []string{h.path("paper.md"), h.path("notes.md")}, p.Inputs)
	assert.Equal(t, []string{h.path("notes.md")}, p.Missing)
	assert.Contains(t, recordText(t, j.Prompt), "- `"+h.path("notes.md")+"` (it did not exist when this job was handed out)\n")
}

func TestContext_Wait(t *testing.T) {
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

func TestGather(t *testing.T) {
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
	assert.Equal(t, engine.BlockNoOutput, b.Kind)
	assert.Equal(t, "no output, attempt 2 of 2", b.Reason)
	assert.Equal(t, engine.PermitRepair, b.Permitted)
}

func TestSixStepsWithoutWorkersUseUpTheDefaults(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)

	var seen []string
	for range 9 {
		out := h.step()
		switch out.Kind {
		case engine.KindLaunch:
			seen = append(seen, fmt.Sprintf("launch %d", out.Jobs[0].Attempt))
		case engine.KindBlocked:
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
	assert.Equal(t, 2, h.state().Jobs["a"].Trouble.Blocks)
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
