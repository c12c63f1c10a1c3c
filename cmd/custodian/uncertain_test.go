package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stepJSON runs `step dir --json` in the custodian binary and decodes the
// outcome it prints.
func stepJSON(t *testing.T, dir string) engine.Outcome {
	t.Helper()
	out, err := trial.DecodeOutcome([]byte(ok(t, "step", dir, "--json")))
	require.NoError(t, err)
	return out
}

// handedOut returns the names of the jobs an outcome hands out.
func handedOut(out engine.Outcome) []string {
	var names []string
	for _, h := range out.Jobs {
		names = append(names, h.Name)
	}
	return names
}

// toPublish sets up the trial's uncertain scenario and drives it, one
// process per step, to the step that publishes: every worker writes a
// valid output.
func toPublish(t *testing.T) string {
	t.Helper()
	dir := trialRun(t, "uncertain")
	for _, jobs := range [][]string{{"assumptions", "claims"}, {"reconcile"}} {
		out := stepJSON(t, dir)
		require.Equal(t, engine.KindLaunch, out.Kind)
		require.Equal(t, jobs, handedOut(out))
		for _, h := range out.Jobs {
			require.NoError(t, trial.Valid(h))
		}
	}
	return dir
}

// published is the path of a file that publish writes outside the run.
func published(dir, name string) string { return filepath.Join(dir+".published", name) }

func TestUncertainScenarioEndToEnd(t *testing.T) {
	uncertain := func(dir string) string {
		return "uncertain\n" +
			"- effect publish: the effect started and its completion was not recorded; " +
			"the recognizer established: only one of reconciled.md and index.md is in " + dir + ".published\n" +
			"  record: " + filepath.Join(dir, ".custodian", "effect-blocks", "publish.md") + "\n" +
			"  permitted: stop and report to the operator; the operator establishes what took place\n"
	}

	tests := []struct {
		answer      string
		republished bool // the step after resolve runs publish again
	}{
		{answer: "absent", republished: true},
		{answer: "completed", republished: false},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			dir := toPublish(t)
			require.FileExists(t, dir+".interrupt", "setup placed no marker")

			// The step that publishes ends between publish's two writes.
			r := run(t, binary, nil, "step", dir)
			assert.Equal(t, trial.PublishInterruptedStatus, r.code)
			assert.Empty(t, r.stdout, "a process that ended inside an effect printed an outcome")
			assert.Equal(t, "the process ended while publishing\n", r.stderr)
			assert.NoFileExists(t, dir+".interrupt", "the marker is spent")
			assert.FileExists(t, published(dir, "reconciled.md"))
			assert.NoFileExists(t, published(dir, "index.md"))

			// Half a publication: the recognizer cannot tell, and every step
			// says so until the operator resolves it.
			for range 2 {
				assert.Equal(t, uncertain(dir), ok(t, "step", dir))
			}
			detail := "the effect started and its completion was not recorded; the recognizer established: only one of reconciled.md and index.md is in " + dir + ".published"
			record := filepath.Join(dir, ".custodian", "effect-blocks", "publish.md")
			assert.Equal(t, `{"outcome":"uncertain","effects":[{"name":"publish","detail":"`+detail+`","record":"`+record+`"}],"blocks":[]}`+"\n",
				ok(t, "step", dir, "--json"))
			assert.Contains(t, readFile(t, record), "- What is known: "+detail+"\n", "the record says what the recognizer established")
			assert.NoFileExists(t, published(dir, "index.md"), "an uncertain effect ran again")

			assert.Empty(t, ok(t, "resolve", dir, "publish", tt.answer))
			assert.Equal(t, "done\n", ok(t, "step", dir))
			if tt.republished {
				reconciled, err := os.ReadFile(filepath.Join(dir, "reconciled.md"))
				require.NoError(t, err)
				assert.Equal(t, string(reconciled), readFile(t, published(dir, "reconciled.md")))
				assert.Equal(t, "# Published\n\n- reconciled.md\n", readFile(t, published(dir, "index.md")))
			} else {
				// The index publish writes second is still missing: it did not run again.
				assert.NoFileExists(t, published(dir, "index.md"))
			}

			// Settled: the run stays done, and publish is not resolved again.
			before := files(t, dir)
			assert.Equal(t, "done\n", ok(t, "step", dir))
			r = run(t, binary, nil, "resolve", dir, "publish", tt.answer)
			assert.Equal(t, 1, r.code, "stderr %q", r.stderr)
			assert.Contains(t, r.stderr, "there is nothing to resolve")
			if !tt.republished {
				assert.NoFileExists(t, published(dir, "index.md"))
			}
			after := files(t, dir)
			for rel, data := range before {
				if !strings.HasPrefix(rel, ".custodian/") {
					assert.Equal(t, data, after[rel], "the settled run changed %s", rel)
				}
			}
		})
	}
}

func TestUncertainEffectIsNotResolvedUnknown(t *testing.T) {
	dir := toPublish(t)
	require.Equal(t, trial.PublishInterruptedStatus, run(t, binary, nil, "step", dir).code)

	r := run(t, binary, nil, "resolve", dir, "publish", "unknown")
	assert.Equal(t, 2, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "\ncustodian: hint: the operator establishes whether the effect took place (completed) or not (absent)")
	assert.True(t, strings.HasPrefix(ok(t, "step", dir), "uncertain\n"), "resolve unknown settled the effect")
}

func TestCleanTrialRunOneProcessPerStep(t *testing.T) {
	tests := []struct {
		name   string
		runner func(dir string) trial.Runner
	}{
		{name: "step --json", runner: func(dir string) trial.Runner { return trial.Binary(binary, dir) }},
		{name: "step, read as text", runner: func(dir string) trial.Runner { return trial.BinaryText(binary, dir, nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := trialRun(t, "clean")
			agent := &trial.Agent{Runner: tt.runner(dir), RunDir: dir}
			tr, err := agent.Drive()
			require.NoError(t, err)

			var kinds []engine.Kind
			var rounds [][]string
			for _, out := range tr.Steps {
				kinds = append(kinds, out.Kind)
				rounds = append(rounds, handedOut(out))
			}
			assert.Equal(t, []engine.Kind{engine.KindLaunch, engine.KindLaunch, engine.KindDone}, kinds)
			assert.Equal(t, [][]string{{"assumptions", "claims"}, {"reconcile"}, nil}, rounds)
			assert.Empty(t, tr.Reports, "a clean run needs no report")

			// Every output the workers wrote is in place, as they wrote it,
			// and nothing was moved aside.
			for job, output := range map[string]string{"claims": "claims.md", "assumptions": "assumptions.md", "reconcile": "reconciled.md"} {
				assert.Equal(t, "# "+job+"\n\n- a point\n- another point\n", readFile(t, filepath.Join(dir, output)))
			}
			for rel := range files(t, dir) {
				assert.NotContains(t, rel, "/kept/")
			}
			assert.Equal(t, "done\n", ok(t, "step", dir), "a done run stays done")
		})
	}
}

// readFile returns the file's bytes as a string.
func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}
