package trial_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow/engine"
)

// fakeBinary writes a shell script that records its arguments, prints
// stdout and stderr, and exits with status: a stand-in for the custodian
// binary. It returns the script's path and a function that reads the
// arguments of its last run.
func fakeBinary(t *testing.T, stdout, stderr string, status int) (string, func() []string) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "stdout"), stdout)
	writeFile(t, filepath.Join(dir, "stderr"), stderr)
	q := "'" + strings.ReplaceAll(dir, "'", `'\''`) + "'"
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %[1]s/args\ncat %[1]s/stdout\ncat %[1]s/stderr >&2\nexit %[2]d\n", q, status)
	bin := filepath.Join(dir, "custodian")
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
	return bin, func() []string {
		t.Helper()
		return strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(dir, "args")), "\n"), "\n")
	}
}

const runDir = "/abs/run"

var (
	launchOutcome = engine.Outcome{Kind: engine.KindLaunch, Jobs: []engine.Handout{
		{Name: "assumptions", Attempt: 1, Prompt: runDir + "/.custodian/jobs/assumptions/prompt-1.md",
			Output: runDir + "/assumptions.md", Problem: runDir + "/assumptions.problem.md", Launch: json.RawMessage(`{}`)},
		{Name: "claims", Attempt: 2, Prompt: runDir + "/.custodian/jobs/claims/prompt-2.md",
			Output: runDir + "/claims.md", Problem: runDir + "/claims.problem.md", Launch: json.RawMessage(`{"model":"small"}`)},
	}}
	blockedOutcome = engine.Outcome{Kind: engine.KindBlocked, Blocks: []engine.Block{
		{Subject: "claims", Kind: engine.BlockNoOutput, Reason: "no output, attempt 2 of 2",
			Record: runDir + "/.custodian/jobs/claims/block-1.md", Permitted: engine.PermitRepair, Scope: "repair conditions"},
		{Subject: "effect publish", Kind: engine.BlockEffectInputsChanged, Reason: "the effect is completed and its inputs have changed since",
			Record: runDir + "/.custodian/effect-blocks/publish.md", Permitted: engine.PermitStop, Scope: "repair conditions"},
	}}
	uncertainOutcome = engine.Outcome{Kind: engine.KindUncertain,
		Effects: []engine.EffectState{{Name: "publish", Detail: "the effect started and its completion was not recorded"}},
		Blocks: []engine.Block{{Subject: "claims", Kind: engine.BlockNoOutput, Reason: "no output, attempt 2 of 2",
			Record: runDir + "/.custodian/jobs/claims/block-1.md", Permitted: engine.PermitRepair, Scope: "repair conditions"}},
	}
	doneOutcome = engine.Outcome{Kind: engine.KindDone}
)

func TestBinaryStepDecodesEachOutcome(t *testing.T) {
	for _, want := range []engine.Outcome{launchOutcome, blockedOutcome, uncertainOutcome, doneOutcome} {
		t.Run(string(want.Kind), func(t *testing.T) {
			// The engine's own encoder prints what the binary prints.
			line, err := json.Marshal(want)
			require.NoError(t, err)
			bin, args := fakeBinary(t, string(line)+"\n", "", 0)

			got, err := trial.Binary(bin, runDir).Step()

			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Equal(t, []string{"step", runDir, "--json"}, args())
		})
	}
}

func TestBinaryStepDecodesTheDesignsObject(t *testing.T) {
	// Written by hand from the design's JSON shape, not by the engine's
	// encoder, so that the two cannot drift together.
	bin, _ := fakeBinary(t, `{"outcome": "blocked", "blocks": [{"subject": "notes", "kind": "problem-report",
		"reason": "the worker wrote a problem report", "record": "/abs/run/.custodian/jobs/notes/block-1.md",
		"permitted": "repair", "scope": "put inputs in place"}]}`+"\n", "", 0)

	got, err := trial.Binary(bin, runDir).Step()

	require.NoError(t, err)
	assert.Equal(t, engine.Outcome{Kind: engine.KindBlocked, Blocks: []engine.Block{{
		Subject: "notes", Kind: engine.BlockProblemReport, Reason: "the worker wrote a problem report",
		Record: "/abs/run/.custodian/jobs/notes/block-1.md", Permitted: engine.PermitRepair, Scope: "put inputs in place",
	}}}, got)
}

func TestBinaryReportPassesTheEvent(t *testing.T) {
	cases := []struct {
		name            string
		event, job, txt string
		args            []string
	}{
		{"with a job", "repair", "notes", "copied incoming/notes.md to notes.md",
			[]string{"report", runDir, "repair", "--job", "notes", "--text", "copied incoming/notes.md to notes.md"}},
		{"without a job", "stop", "", "an effect is uncertain",
			[]string{"report", runDir, "stop", "--text", "an effect is uncertain"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bin, args := fakeBinary(t, "report 1 recorded\n", "", 0)

			err := trial.Binary(bin, runDir).Report(tc.event, tc.job, tc.txt)

			require.NoError(t, err)
			assert.Equal(t, tc.args, args())
		})
	}
}

func TestBinaryExitStatusIsAnExitError(t *testing.T) {
	bin, _ := fakeBinary(t, "", "custodian: the run is busy\ncustodian: hint: wait for the other step\n", 3)
	runner := trial.Binary(bin, runDir)
	for name, call := range map[string]func() error{
		"step":   func() error { _, err := runner.Step(); return err },
		"report": func() error { return runner.Report("stop", "", "busy") },
	} {
		t.Run(name, func(t *testing.T) {
			err := call()

			var exit *trial.ExitError
			require.ErrorAs(t, err, &exit)
			assert.Equal(t, 3, exit.Status)
			assert.Equal(t, "custodian: the run is busy\ncustodian: hint: wait for the other step\n", exit.Stderr)
			assert.Equal(t, name, exit.Args[0])
			assert.Contains(t, err.Error(), "exit status 3: custodian: the run is busy")
		})
	}
}

func TestBinaryThatCannotRunIsNoExitError(t *testing.T) {
	_, err := trial.Binary(filepath.Join(t.TempDir(), "missing"), runDir).Step()

	require.ErrorIs(t, err, os.ErrNotExist)
	var exit *trial.ExitError
	assert.NotErrorAs(t, err, &exit)
}

func TestDecodeOutcomeRefusesAnotherFormat(t *testing.T) {
	cases := map[string]string{
		"not JSON":           "launch\n",
		"an unknown field":   `{"outcome":"done","note":"x"}`,
		"an unknown outcome": `{"outcome":"finished"}`,
		"no outcome":         `{}`,
		"two objects":        `{"outcome":"done"} {"outcome":"done"}`,
		"a job not a list":   `{"outcome":"launch","jobs":{}}`,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := trial.DecodeOutcome([]byte(data))
			require.Error(t, err)
		})
	}
}

func TestBinaryTextReadsWhatStepPrints(t *testing.T) {
	cases := []struct {
		name string
		text string
		want engine.Outcome
	}{
		{
			name: "launch",
			text: "launch\n" +
				"- assumptions: `/abs/run/.custodian/jobs/assumptions/prompt-1.md`\n" +
				"- claims: `/abs/run/.custodian/jobs/claims/prompt-1.md` launch={\"model\":\"small\"}\n",
			want: engine.Outcome{Kind: engine.KindLaunch, Jobs: []engine.Handout{
				{Name: "assumptions", Prompt: "/abs/run/.custodian/jobs/assumptions/prompt-1.md", Launch: json.RawMessage(`{}`)},
				{Name: "claims", Prompt: "/abs/run/.custodian/jobs/claims/prompt-1.md", Launch: json.RawMessage(`{"model":"small"}`)},
			}},
		},
		{
			name: "blocked",
			text: "blocked\n" +
				"- claims: no output, attempt 2 of 2\n" +
				"  record: /abs/run/.custodian/jobs/claims/block-1.md\n" +
				"  permitted: repair within this scope: repair conditions: a missing input\n" +
				"- effect publish: the effect is completed and its inputs have changed since\n" +
				"  record: /abs/run/.custodian/effect-blocks/publish.md\n" +
				"  permitted: stop and report to the operator\n",
			want: engine.Outcome{Kind: engine.KindBlocked, Blocks: []engine.Block{
				{Subject: "claims", Reason: "no output, attempt 2 of 2", Record: "/abs/run/.custodian/jobs/claims/block-1.md",
					Permitted: engine.PermitRepair, Scope: "repair conditions: a missing input"},
				{Subject: "effect publish", Reason: "the effect is completed and its inputs have changed since",
					Record: "/abs/run/.custodian/effect-blocks/publish.md", Permitted: engine.PermitStop},
			}},
		},
		{
			name: "uncertain",
			text: "uncertain\n" +
				"- effect publish: the effect started and its completion was not recorded\n" +
				"  record: /abs/run/.custodian/effect-blocks/publish.md\n" +
				"  permitted: stop and report to the operator; the operator establishes what took place\n" +
				"- also claims: no output, attempt 2 of 2\n" +
				"  record: /abs/run/.custodian/jobs/claims/block-1.md\n",
			want: engine.Outcome{Kind: engine.KindUncertain,
				Effects: []engine.EffectState{{Name: "publish", Detail: "the effect started and its completion was not recorded", Record: "/abs/run/.custodian/effect-blocks/publish.md"}},
				Blocks: []engine.Block{{Subject: "claims", Reason: "no output, attempt 2 of 2",
					Record: "/abs/run/.custodian/jobs/claims/block-1.md"}},
			},
		},
		{name: "done", text: "done\n", want: engine.Outcome{Kind: engine.KindDone}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bin, args := fakeBinary(t, tc.text, "", 0)
			var echo strings.Builder

			got, err := trial.BinaryText(bin, runDir, &echo).Step()

			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, []string{"step", runDir}, args())
			assert.Equal(t, tc.text, echo.String(), "the echo is the output as printed")
		})
	}
}
