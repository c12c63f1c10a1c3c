package trial_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocatePrompt(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	cases := []struct {
		path string
		want trial.PromptOf
		ok   bool
	}{
		{filepath.Join(run, ".custodian", "jobs", "claims", "prompt-2.md"), trial.PromptOf{Run: run, Job: "claims", Attempt: 2}, true},
		{filepath.Join(run, ".custodian", "jobs", "claims", "prompt-0.md"), trial.PromptOf{}, false},
		{filepath.Join(run, ".custodian", "jobs", "claims", "prompt-x.md"), trial.PromptOf{}, false},
		{filepath.Join(run, ".custodian", "jobs", "claims", "block-1.md"), trial.PromptOf{}, false},
		{filepath.Join(run, ".custodian", "work", "claims", "prompt-1.md"), trial.PromptOf{}, false},
		{filepath.Join(run, "custodian", "jobs", "claims", "prompt-1.md"), trial.PromptOf{}, false},
		{filepath.Join(run, "claims.md"), trial.PromptOf{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			got, err := trial.LocatePrompt(tc.path)
			if !tc.ok {
				assert.True(t, errors.Is(err, trial.ErrNotAPrompt), "%v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The scripted worker does what its scenario's script says for the attempt
// its prompt file is, and writes where the prompt file says.
func TestWork(t *testing.T) {
	cases := []struct {
		scenario string
		job      string
		attempt  int
		wrote    string // the file it must write, run-relative
		reply    string
	}{
		{"clean", "claims", 1, "claims.md", "wrote claims.md"},
		{"problem", "notes", 1, "notes.problem.md", "wrote a problem report, notes.problem.md"},
		{"problem", "notes", 2, "notes-summary.md", "wrote notes-summary.md"},
		{"retry", "reconcile", 2, "reconciled.md", "wrote reconciled.md"},
	}
	for _, tc := range cases {
		t.Run(tc.scenario+"/"+tc.job, func(t *testing.T) {
			dir, err := trial.Setup(definitions.Builtin(), trial.SetupOptions{Scenario: tc.scenario, Dir: filepath.Join(t.TempDir(), "run")})
			require.NoError(t, err)
			prompt := filepath.Join(dir, ".custodian", "jobs", tc.job, "prompt-1.md")
			require.NoError(t, os.MkdirAll(filepath.Dir(prompt), 0o755))
			p := engine.Prompt{Task: "Do it.", Output: filepath.Join(dir, filepath.FromSlash(tc.wrote)),
				Problem: filepath.Join(dir, tc.job+".problem.md")}
			if tc.job == "notes" {
				p.Output = filepath.Join(dir, "notes-summary.md")
			}
			if tc.job == "reconcile" {
				p.Output = filepath.Join(dir, "reconciled.md")
			}
			require.NoError(t, os.WriteFile(prompt, p.Text(), 0o644))
			at, err := trial.LocatePrompt(prompt)
			require.NoError(t, err)
			at.Attempt = tc.attempt

			reply, err := trial.Work(at, prompt, tc.scenario)
			require.NoError(t, err)
			assert.Equal(t, tc.reply, reply)
			assert.FileExists(t, filepath.Join(dir, filepath.FromSlash(tc.wrote)))
		})
	}
}
