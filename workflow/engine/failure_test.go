package engine_test

//lint:file-ignore SA1000 a definition here panics inside the standard library on purpose
//lint:file-ignore SA5000 a definition here panics on its own line on purpose

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// here returns the place of the line offset lines below the caller, in the
// form failures are counted at: file name and line.
func here(offset int) string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s:%d", filepath.Base(file), line+offset)
}

// failing is a definition that names no job and fails in the way mode says,
// so that a step without failures is done.
type failing struct {
	mode   string
	places map[string]string // mode → where it fails
	runs   int
}

func (f *failing) definition() *workflow.Definition {
	f.places = map[string]string{}
	return &workflow.Definition{Name: "failing", Run: func(ctx *workflow.Context) error {
		f.runs++
		switch f.mode {
		case "panic here":
			f.places[f.mode] = here(1)
			panic("a panic in the definition")
		case "panic there":
			f.places[f.mode] = here(1)
			panic("another panic in the definition")
		case "regexp":
			f.places[f.mode] = here(1)
			_ = regexp.MustCompile("(")
		case "fail":
			f.places[f.mode] = here(1)
			ctx.Fail(errors.New("a failure given to Fail"))
		case "return":
			return errors.New("an error returned by Run")
		case "return other":
			return errors.New("another error returned by Run")
		case "nil map":
			var m map[string]int
			f.places[f.mode] = here(1)
			m["x"] = 1
		}
		return nil
	}}
}

func TestFailingMechanicalStepBlocksOnWorkflow(t *testing.T) {
	cases := []struct {
		mode   string
		reason string
	}{
		{"return", "an error returned by Run"},
		{"panic here", "a panic in the definition"},
		{"regexp", "missing closing )"},
		{"fail", "a failure given to Fail"},
		{"nil map", "assignment to entry in nil map"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			f := &failing{mode: tc.mode}
			h := startRun(t, f.definition(), nil)

			blocks := h.blocked()
			require.Equal(t, []string{"workflow"}, subjects(blocks))
			b := blocks["workflow"]
			assert.Equal(t, engine.BlockWorkflowError, b.Kind)
			assert.Equal(t, engine.PermitRepair, b.Permitted)
			assert.Contains(t, b.Reason, tc.reason)
			assert.Equal(t, h.path(".custodian/workflow/block-1.md"), b.Record)
			record := recordText(t, b.Record)
			assert.Contains(t, record, tc.reason)
			if place := f.places[tc.mode]; place != "" {
				assert.Contains(t, record, " at "+place+" ")
			}

			// Repaired: the step without the failure is done.
			f.mode = ""
			h.done()
		})
	}
}

// A panic deep in the standard library is the definition's failure at the
// line that called into it: that is the line an author can change.
func TestFailureInsideTheStandardLibraryCountsAtTheDefinitionsLine(t *testing.T) {
	f := &failing{mode: "regexp"}
	h := startRun(t, f.definition(), nil)

	record := recordText(t, h.blocked()["workflow"].Record)
	place := f.places["regexp"]
	require.Regexp(t, `^failure_test\.go:\d+$`, place)
	assert.Contains(t, record, "at "+place)
	assert.NotContains(t, record, "at regexp.go")
}

func TestFailuresAreCountedByPlace(t *testing.T) {
	cases := []struct {
		name  string
		modes []string
		want  []engine.Permission // per step; "" for done
	}{
		{"the same place twice stops", []string{"panic here", "panic here"},
			[]engine.Permission{engine.PermitRepair, engine.PermitStop}},
		{"two places each get their repair", []string{"panic here", "panic there"},
			[]engine.Permission{engine.PermitRepair, engine.PermitRepair}},
		{"a panic and Fail are two places", []string{"panic here", "fail"},
			[]engine.Permission{engine.PermitRepair, engine.PermitRepair}},
		{"a step without failures starts the count over", []string{"panic here", "", "panic here", "panic here"},
			[]engine.Permission{engine.PermitRepair, "", engine.PermitRepair, engine.PermitStop}},
		{"the same returned error twice stops", []string{"return", "return"},
			[]engine.Permission{engine.PermitRepair, engine.PermitStop}},
		{"two returned errors each get their repair", []string{"return", "return other"},
			[]engine.Permission{engine.PermitRepair, engine.PermitRepair}},
		{"a place counts consecutive steps only", []string{"panic here", "panic there", "panic here"},
			[]engine.Permission{engine.PermitRepair, engine.PermitRepair, engine.PermitRepair}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &failing{}
			h := startRun(t, f.definition(), nil)
			for i, mode := range tc.modes {
				f.mode = mode
				if tc.want[i] == "" {
					h.done()
					continue
				}
				b := h.blocked()["workflow"]
				assert.Equal(t, tc.want[i], b.Permitted, "step %d (%s)", i+1, mode)
			}
		})
	}
}

func TestWorkflowLimitsFollowTheDefinition(t *testing.T) {
	f := &failing{mode: "panic here"}
	def := f.definition()
	def.Limits = func(workflow.Params) workflow.Limits { return workflow.Limits{Retries: 1, Repairs: 0} }
	h := startRun(t, def, nil)

	assert.Equal(t, engine.PermitStop, h.blocked()["workflow"].Permitted)
}

// Parallel paths are independent: one path's failure must not hide what
// another path found.
func TestFailingPathDoesNotHideAJobBlockOnAnotherPath(t *testing.T) {
	for _, failFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing path first %v", failFirst), func(t *testing.T) {
			fail := false
			h := startRun(t, &workflow.Definition{Name: "paths", Run: func(ctx *workflow.Context) error {
				paths := []func(){
					func() { ctx.Agent(job("a")).Wait() },
					func() {
						if fail {
							ctx.Fail(errors.New("the mechanical step broke"))
						}
					},
				}
				if failFirst {
					paths[0], paths[1] = paths[1], paths[0]
				}
				ctx.Parallel(paths...)
				return nil
			}}, source)

			h.work(h.launch("a"), map[string]reply{"a": {problem: "cannot do it\n"}})
			fail = true
			blocks := h.blocked()
			assert.Equal(t, []string{"a", "workflow"}, subjects(blocks))
			assert.Equal(t, engine.BlockProblemReport, blocks["a"].Kind)
			assert.Equal(t, engine.BlockWorkflowError, blocks["workflow"].Kind)
		})
	}
}

func TestFailingPathDoesNotHideAHandoutOnAnotherPathsNextStep(t *testing.T) {
	fail := true
	h := startRun(t, &workflow.Definition{Name: "paths", Run: func(ctx *workflow.Context) error {
		ctx.Parallel(
			func() {
				if fail {
					panic("broken")
				}
			},
			func() { ctx.Agent(job("a")).Wait() },
		)
		return nil
	}}, source)

	// A failing step hands out nothing, and counts no attempt.
	assert.Equal(t, []string{"workflow"}, subjects(h.blocked()))
	assert.NoFileExists(t, h.path(".custodian/jobs/a/prompt-1.md"))
	fail = false
	assert.Equal(t, 1, h.launch("a")["a"].Attempt)
}

func TestDefinitionStopsTheRun(t *testing.T) {
	cases := []struct {
		name string
		stop func(ctx *workflow.Context) error
	}{
		{"ctx.Stop", func(ctx *workflow.Context) error {
			ctx.Stop("the paper is retracted")
			return errors.New("not reached")
		}},
		{"returned Stopf", func(ctx *workflow.Context) error {
			return workflow.Stopf("the paper is %s", "retracted")
		}},
		{"wrapped Stopf", func(ctx *workflow.Context) error {
			return fmt.Errorf("checking the paper: %w", workflow.Stopf("the paper is retracted"))
		}},
		{"Stop in a Parallel path", func(ctx *workflow.Context) error {
			ctx.Parallel(func() {}, func() { ctx.Stop("the paper is retracted") })
			return nil
		}},
		{"Stopf given to Fail", func(ctx *workflow.Context) error {
			ctx.Fail(workflow.Stopf("the paper is retracted"))
			return nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stopping, runs := true, 0
			def := &workflow.Definition{Name: "stops", Run: func(ctx *workflow.Context) error {
				runs++
				ctx.Agent(job("a")).Wait()
				if stopping {
					return tc.stop(ctx)
				}
				return nil
			}}
			// Even a definition that allows many repairs stops at once.
			def.Limits = func(workflow.Params) workflow.Limits { return workflow.Limits{Retries: 1, Repairs: 5} }
			h := startRun(t, def, source)
			h.work(h.launch("a"), nil)

			b := h.blocked()["workflow"]
			assert.Equal(t, engine.BlockWorkflowStop, b.Kind)
			assert.Equal(t, engine.PermitStop, b.Permitted)
			assert.Contains(t, b.Reason, "the paper is retracted")
			assert.Contains(t, recordText(t, b.Record), "the paper is retracted")

			// While the workflow is stopped the definition does not run at all.
			runsBefore := runs
			stopping = false
			h.reopen()
			again := h.blocked()["workflow"]
			assert.Equal(t, b.Record, again.Record)
			assert.Equal(t, runsBefore, runs)

			require.NoError(t, h.o.Release("workflow"))
			h.done()
			assert.NotEmpty(t, h.state().Jobs["a"].Accepted, "the stop and release left the accepted job alone")
		})
	}
}

func TestStoppedWorkflowAfterRepeatedFailureIsReleased(t *testing.T) {
	f := &failing{mode: "panic here"}
	h := startRun(t, f.definition(), nil)
	h.blocked()
	require.Equal(t, engine.PermitStop, h.blocked()["workflow"].Permitted)
	runs := f.runs

	f.mode = ""
	assert.Equal(t, engine.PermitStop, h.blocked()["workflow"].Permitted, "fixing the code does not lift a stop")
	assert.Equal(t, runs, f.runs)
	require.NoError(t, h.o.Release("workflow"))
	h.done()

	// The release started the count over: a new failure there gets its repair.
	f.mode = "panic here"
	assert.Equal(t, engine.PermitRepair, h.blocked()["workflow"].Permitted)
}

// An input replaced by a folder, or by a link, is the run's trouble, not a
// broken rule: the run blocks on workflow where the definition named the
// job, and putting the file back is a repair. A link is never followed:
// its target is not taken for the input, nor the input for missing.
func TestAnInputThatIsNoRegularFileBlocksOnWorkflow(t *testing.T) {
	cases := []struct {
		name    string
		replace func(h *harness)
		reason  string
	}{
		{"a directory", func(h *harness) { require.NoError(t, os.MkdirAll(h.path("source.md"), 0o755)) },
			"input source.md is a directory; declare the files in it"},
		{"a symbolic link", func(h *harness) {
			h.write("elsewhere.md", source["source.md"])
			require.NoError(t, os.Symlink("elsewhere.md", h.path("source.md")))
		}, "input source.md is a symbolic link, which custodian neither follows nor reads; put a regular file there (a copy, not a link)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var at string
			h := startRun(t, &workflow.Definition{Name: "folder", Run: func(ctx *workflow.Context) error {
				at = here(1)
				ctx.Agent(job("a")).Wait()
				return nil
			}}, source)
			h.remove("source.md")
			tc.replace(h)

			b := h.blocked()["workflow"]
			assert.Equal(t, engine.BlockWorkflowError, b.Kind)
			assert.Equal(t, engine.PermitRepair, b.Permitted)
			assert.Contains(t, b.Reason, tc.reason)
			assert.Contains(t, recordText(t, b.Record), at)

			h.remove("source.md")
			h.write("source.md", source["source.md"])
			h.launch("a")
		})
	}
}

// Gather hands back each path's value; a path whose value is a nil
// interface gives the zero value, not a failure.
func TestGather_nilValues(t *testing.T) {
	var got []error
	h := startRun(t, &workflow.Definition{Name: "gather", Run: func(ctx *workflow.Context) error {
		got = workflow.Gather(ctx, func() error { return nil }, func() error { return errors.New("x") })
		return nil
	}}, nil)
	h.done()
	require.Len(t, got, 2)
	assert.NoError(t, got[0])
	assert.EqualError(t, got[1], "x")
}

// Limits is the definition's code too: a panic in it is a broken rule of
// the definition, not a crash of the engine.
func TestDefinition_LimitsPanic(t *testing.T) {
	def := oneJob(job("a"))
	def.Limits = func(workflow.Params) workflow.Limits { panic("no limits today") }
	reg, err := workflow.NewRegistry(def)
	require.NoError(t, err)
	_, err = engine.Start(reg, def.Name, t.TempDir(), nil)
	require.ErrorIs(t, err, workflow.ErrDefinition)
	assert.ErrorContains(t, err, "no limits today")
}
