package workflow_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/workflow"
)

// countingJob is job(name) whose validator counts its calls and refuses
// everything once refuse is set.
func countingJob(name string, calls *int, refuse *bool) workflow.Job {
	j := job(name)
	j.Validate = func(path string) error {
		*calls++
		if *refuse {
			return workflow.Refuse("refused by the new validator")
		}
		return hasHeading(path)
	}
	return j
}

// verdictRun is a run of one counting job under build, finished.
func verdictRun(t *testing.T, build string) (h *harness, calls *int, refuse *bool) {
	t.Helper()
	calls, refuse = new(int), new(bool)
	h = startRun(t, oneJob(countingJob("summary", calls, refuse)), source)
	h.reg = h.reg.WithBuild(build)
	h.reopen()
	h.runToDone()
	require.Equal(t, 1, *calls, "the accepting step asks the validator once")
	return h, calls, refuse
}

func TestVerdictsSpareTheValidatorOfAnUnchangedOutput(t *testing.T) {
	tests := []struct {
		name      string
		build     string // the build the run was finished under
		nextBuild string // the build of the steps that follow
		asked     int    // validator calls in two more steps
	}{
		{name: "same build", build: "b1", nextBuild: "b1", asked: 0},
		{name: "another build", build: "b1", nextBuild: "b2", asked: 1},
		{name: "no build remembers nothing", build: "", nextBuild: "", asked: 2},
		{name: "a build after none", build: "", nextBuild: "b1", asked: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, calls, _ := verdictRun(t, tt.build)
			*calls = 0
			h.reg = h.reg.WithBuild(tt.nextBuild)
			h.reopen()
			h.done()
			h.done()
			assert.Equal(t, tt.asked, *calls)
		})
	}
}

func TestVerdictsAnotherBuildMayRefuseWhatOneAccepted(t *testing.T) {
	h, _, refuse := verdictRun(t, "b1")
	*refuse = true
	h.done() // the same build: its verdict on these bytes stands
	h.reg = h.reg.WithBuild("b2")
	h.reopen()
	out := h.step()
	require.Equal(t, workflow.KindLaunch, out.Kind, "outcome: %+v", out)
	assert.Equal(t, []string{"summary"}, handoutNames(out))
	assert.Equal(t, 2, out.Jobs[0].Attempt, "handed out again: its validator now refuses it")
}

func TestVerdictsOtherBytesAreJudged(t *testing.T) {
	h, calls, _ := verdictRun(t, "b1")
	// A new version of the output, from a new hand-out after the input
	// changed: its bytes are judged, not taken from the verdict.
	h.write("source.md", "a new source\n")
	jobs := h.launch("summary")
	*calls = 0
	writeFile(t, jobs["summary"].Output, "# Another summary\n")
	h.done()
	assert.Equal(t, 1, *calls)
	h.done()
	assert.Equal(t, 1, *calls, "and then remembered")
}

func TestVerdictsDamagedOrForeignCacheIsEmpty(t *testing.T) {
	tests := []struct {
		name string
		mess func(t *testing.T, path string)
	}{
		{"missing", func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }},
		{"empty", func(t *testing.T, path string) { require.NoError(t, os.WriteFile(path, nil, 0o644)) }},
		{"garbage", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("custodian verdicts 1 nonsense\n\x00\x01"), 0o644))
		}},
		{"another run's", func(t *testing.T, path string) {
			other, _, _ := verdictRun(t, "b1")
			data, err := os.ReadFile(filepath.Join(other.dir, ".custodian", "verdicts"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, data, 0o644))
		}},
		{"a directory", func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.Mkdir(path, 0o755))
		}},
		{"a link", func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.Symlink("/dev/zero", path))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, calls, _ := verdictRun(t, "b1")
			path := filepath.Join(h.dir, ".custodian", "verdicts")
			require.FileExists(t, path)
			tt.mess(t, path)
			*calls = 0
			out, err := h.o.Step()
			if tt.name == "a directory" || tt.name == "a link" {
				// Not a file the engine replaces, as for the hash cache: the
				// step names it and commits nothing.
				require.Error(t, err)
				assert.Contains(t, err.Error(), path)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, workflow.KindDone, out.Kind)
			assert.Equal(t, 1, *calls, "the validator is asked again")
			*calls = 0
			h.done()
			assert.Equal(t, 0, *calls, "and its verdict remembered")
		})
	}
}

func TestVerdictsCheckPredictsWithoutWriting(t *testing.T) {
	h, calls, _ := verdictRun(t, "b1")
	path := filepath.Join(h.dir, ".custodian", "verdicts")
	require.NoError(t, os.Remove(path))
	*calls = 0
	_, err := h.o.Check()
	require.NoError(t, err)
	assert.Equal(t, 2, *calls, "check replays twice, and remembers nothing")
	assert.NoFileExists(t, path)
}

func TestVerdictsOfOtherInputsDoNotCarryOver(t *testing.T) {
	// The validator reads the job's declared input as well as its output:
	// the same output bytes made from other inputs are judged again.
	j := job("summary")
	var calls int
	j.Validate = func(path string) error {
		calls++
		src, err := os.ReadFile(filepath.Join(filepath.Dir(path), "source.md"))
		if err != nil {
			return err
		}
		if strings.Contains(string(src), "forbidden") {
			return workflow.Refuse("the source forbids this summary")
		}
		return hasHeading(path)
	}
	h := startRun(t, oneJob(j), source)
	h.reg = h.reg.WithBuild("b1")
	h.reopen()
	h.runToDone()
	h.write("source.md", "forbidden now\n")
	jobs := h.launch("summary")
	calls = 0
	writeFile(t, jobs["summary"].Output, validText) // the bytes accepted before
	out := h.step()
	assert.Equal(t, 1, calls, "judged again")
	assert.NotEqual(t, workflow.KindDone, out.Kind, "and refused: outcome %+v", out)
}
