package workflow_test

import (
	"math"
	"path/filepath"
	"sync"
	"testing"

	"github.com/custodian-run/custodian/workflow"
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

func TestLaunchParametersPassThroughAsCanonicalJSON(t *testing.T) {
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
