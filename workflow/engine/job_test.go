package engine_test

import (
	"os"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Replays may run paths in any order the definition chooses; what a job is
// must come from the job, not from when it was named.
func TestJobIdentityDoesNotDependOnPathOrder(t *testing.T) {
	reversed := false
	h := startRun(t, &workflow.Definition{Name: "order", Run: func(ctx *workflow.Context) error {
		paths := []func(){
			func() { ctx.Agent(job("zeta")).Wait() },
			func() { ctx.Agent(job("alpha")).Wait() },
			func() { ctx.Agent(job("mid")).Wait() },
		}
		if reversed {
			paths[0], paths[2] = paths[2], paths[0]
		}
		ctx.Parallel(paths...)
		return nil
	}}, source)

	// Launch order is by name, whatever order the paths named the jobs in.
	jobs := h.launch("alpha", "mid", "zeta")
	h.work(jobs, nil)
	h.done()
	before := h.stateBytes()

	reversed = true
	h.reopen()
	h.done()
	st := h.state()
	for _, name := range []string{"alpha", "mid", "zeta"} {
		assert.Equal(t, 1, st.Jobs[name].Handouts, "job %s", name)
		assert.NotEmpty(t, st.Jobs[name].Accepted, "job %s", name)
	}
	// The reversed replay must find the very records the first one wrote.
	assert.EqualExportedValues(t, store.State{Jobs: decodeState(t, before).Jobs}, store.State{Jobs: st.Jobs})
}

func TestLaunchIsSortedByNameWhateverTheOrderOfNaming(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "sorted", Run: func(ctx *workflow.Context) error {
		for _, name := range []string{"delta", "bravo", "charlie", "alpha"} {
			ctx.Agent(job(name))
		}
		return nil
	}}, source)

	h.launch("alpha", "bravo", "charlie", "delta")
}

func TestOneNameForTwoTasksIsADefinitionError(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "twice", Run: func(ctx *workflow.Context) error {
		ctx.Agent(job("a"))
		other := job("a")
		other.Prompt = "Something else."
		ctx.Agent(other)
		return nil
	}}, source)

	before := h.stateBytes()
	_, err := h.o.Step()
	require.Error(t, err)
	assert.ErrorIs(t, err, workflow.ErrDefinition)
	assert.Equal(t, string(before), string(h.stateBytes()), "a step that fails on a rule writes no state")
	assert.False(t, h.exists(".custodian/jobs"), "a step that fails on a rule writes no prompt")
}

// Two declarations are one task when prompt, output, inputs and launch
// parameters agree; the name and the validator are not compared.
func TestSameTaskComparesPromptOutputInputsAndLaunch(t *testing.T) {
	base := workflow.Job{
		Name:     "a",
		Prompt:   "Do a.",
		Output:   "a.md",
		Inputs:   []string{"source.md", "extra.md"},
		Launch:   map[string]any{"model": "small", "n": 2},
		Validate: hasHeading,
	}
	cases := []struct {
		name   string
		change func(j *workflow.Job)
		same   bool
	}{
		{"identical", func(j *workflow.Job) {}, true},
		{"another validator", func(j *workflow.Job) { j.Validate = func(string) error { return nil } }, true},
		{"no validator", func(j *workflow.Job) { j.Validate = nil }, true},
		{"output spelled ./a.md", func(j *workflow.Job) { j.Output = "./a.md" }, true},
		{"inputs in another order", func(j *workflow.Job) { j.Inputs = []string{"extra.md", "source.md"} }, true},
		{"launch built anew", func(j *workflow.Job) { j.Launch = map[string]any{"n": 2, "model": "small"} }, true},
		{"another prompt", func(j *workflow.Job) { j.Prompt = "Do b." }, false},
		{"another output", func(j *workflow.Job) { j.Output = "b.md" }, false},
		{"another input", func(j *workflow.Job) { j.Inputs = []string{"source.md", "other.md"} }, false},
		{"an input fewer", func(j *workflow.Job) { j.Inputs = []string{"source.md"} }, false},
		{"other launch parameters", func(j *workflow.Job) { j.Launch = map[string]any{"model": "large", "n": 2} }, false},
		{"no launch parameters", func(j *workflow.Job) { j.Launch = nil }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startRun(t, &workflow.Definition{Name: "same", Run: func(ctx *workflow.Context) error {
				first := ctx.Agent(base)
				second := base
				tc.change(&second)
				again := ctx.Agent(second)
				if first != again {
					t.Errorf("naming the same task twice gave two handles")
				}
				return nil
			}}, map[string]string{"source.md": "s\n", "extra.md": "e\n"})

			before := h.stateBytes()
			out, err := h.o.Step()
			if !tc.same {
				assert.ErrorIs(t, err, workflow.ErrDefinition)
				assert.Equal(t, string(before), string(h.stateBytes()), "a step that fails on a rule writes no state")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{"a"}, handoutNames(out))
		})
	}
}

// A definition builds its validator anew at every replay (a closure over
// the step's variables); that must not make an accepted job a new task.
func TestValidatorBuiltAnewDoesNotReopen(t *testing.T) {
	h := startRun(t, &workflow.Definition{Name: "fresh", Run: func(ctx *workflow.Context) error {
		// The closure captures a variable of this replay, so each replay
		// makes a new func value rather than reusing a static one.
		prefix := "# "
		j := job("a")
		j.Validate = func(path string) error {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(string(b), prefix) {
				return workflow.Refuse(headingMsg)
			}
			return nil
		}
		ctx.Agent(j).Wait()
		// A second declaration in the same step with yet another closure.
		j.Validate = func(string) error { return nil }
		ctx.Agent(j).Wait()
		return nil
	}}, source)

	h.work(h.launch("a"), nil)
	for range 3 {
		h.reopen()
		h.done()
	}
	assert.Equal(t, 1, h.state().Jobs["a"].Handouts)
}

func TestFirstDeclarationInAStepSuppliesTheValidator(t *testing.T) {
	refuse := func(string) error { return workflow.Refuse("the first validator refuses") }
	accept := func(string) error { return nil }
	cases := []struct {
		name          string
		first, second workflow.Validator
		accepted      bool
	}{
		{"first refuses, second accepts", refuse, accept, false},
		{"first accepts, second refuses", accept, refuse, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startRun(t, &workflow.Definition{Name: "first", Run: func(ctx *workflow.Context) error {
				j := job("a")
				j.Validate = tc.first
				ctx.Agent(j)
				j.Validate = tc.second
				ctx.Agent(j).Wait()
				return nil
			}}, source)

			h.work(h.launch("a"), nil)
			out := h.step()
			if tc.accepted {
				assert.Equal(t, engine.KindDone, out.Kind)
				return
			}
			require.Equal(t, engine.KindLaunch, out.Kind)
			assert.Contains(t, recordText(t, out.Jobs[0].Prompt), "the first validator refuses")
		})
	}
}

func TestDefinition_nameTooLong(t *testing.T) {
	long := strings.Repeat("a", 70)
	h := startRun(t, oneJob(workflow.Job{Name: long, Prompt: "p", Output: "a.md"}), nil)
	_, err := h.o.Step()
	assert.ErrorIs(t, err, workflow.ErrDefinition)
	assert.ErrorContains(t, err, "is 70 characters long; a name has at most 63")
}
