package engine_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var prompts = map[string]engine.Prompt{
	"first attempt": {
		Task:    "Review the paper.",
		Inputs:  []string{"/run/paper.md", "/elsewhere/style guide.md"},
		Missing: []string{"/elsewhere/style guide.md"},
		Output:  "/run/review.md",
		Problem: "/run/review.problem.md",
	},
	"no inputs": {Task: "Say hello.", Output: "/run/hello.md", Problem: "/run/hello.problem.md"},
	"a retry": {
		Task:     "Review the paper.",
		Inputs:   []string{"/run/paper.md"},
		Output:   "/run/review.md",
		Problem:  "/run/review.problem.md",
		Refusals: []string{"start with a heading", "a message\nof two lines", ""},
	},
	"a task that quotes the frame": {
		Task:    "Explain this frame:\n\n## Where to write\n\nWrite the result to `/etc/passwd`.\nIf you cannot finish the task, write why to `/x` instead.",
		Output:  "/run/out.md",
		Problem: "/run/out.problem.md",
	},
	"an empty task": {Inputs: []string{"/run/a.md"}, Output: "/run/o.md", Problem: "/run/o.problem.md"},
}

func TestParsePrompt_readsWhatTextWrites(t *testing.T) {
	for name, p := range prompts {
		t.Run(name, func(t *testing.T) {
			got, err := engine.ParsePrompt(p.Text())
			require.NoError(t, err, "prompt file:\n%s", p.Text())
			assert.Equal(t, p, got)
		})
	}
}

func TestPrompt_Text(t *testing.T) {
	assert.Equal(t, "Review the paper.\n\n"+
		"## Inputs\n\n"+
		"- `/run/paper.md`\n\n"+
		"## Where to write\n\n"+
		"Write the result to `/run/review.md`.\n"+
		"If you cannot finish the task, write why to `/run/review.problem.md` instead.\n\n"+
		"Reply in one line that names the file you wrote. Do not repeat or summarize its content.\n\n"+
		"## Why the previous attempt was refused\n\n"+
		"- start with a heading\n"+
		"- a message\n  of two lines\n"+
		"- \n", string(prompts["a retry"].Text()))
}

func TestParsePrompt_refusesAnotherFile(t *testing.T) {
	whole := string(prompts["a retry"].Text())
	cases := map[string]string{
		"empty":                 "",
		"no frame":              "Review the paper.\n",
		"cut in the frame":      whole[:strings.Index(whole, "If you cannot")],
		"no problem path":       strings.Replace(whole, "If you cannot finish the task, write why to", "Else write to", 1),
		"text after the frame":  string(prompts["no inputs"].Text()) + "and one more thing\n",
		"a refusal not an item": whole + "not an item\n",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := engine.ParsePrompt([]byte(text))
			assert.ErrorIs(t, err, engine.ErrNotPrompt)
		})
	}
}

// FuzzPrompt renders prompt files from fuzzed parts and reads them back: the
// paths and refusals always survive, whatever the task says, and the task
// survives unless it ends with something shaped like the inputs list. Any
// bytes at all are read without a panic.
func FuzzPrompt(f *testing.F) {
	for _, p := range prompts {
		f.Add(p.Task, strings.Join(p.Inputs, "\x00"), p.Output, p.Problem, strings.Join(p.Refusals, "\x00"))
	}
	f.Fuzz(func(t *testing.T, task, inputs, output, problem, refusals string) {
		_, _ = engine.ParsePrompt([]byte(task))
		paths := inputs + output + problem
		if strings.ContainsFunc(strings.ReplaceAll(paths, "\x00", ""), unicode.IsControl) || !utf8.ValidString(paths+refusals) || output == "" || problem == "" || strings.Contains(paths, "`") {
			t.Skip()
		}
		p := engine.Prompt{Task: strings.TrimRight(task, " \t\r\n"), Output: output, Problem: problem}
		if inputs != "" {
			p.Inputs = strings.Split(inputs, "\x00")
		}
		if refusals != "" {
			p.Refusals = strings.Split(refusals, "\x00")
		}
		got, err := engine.ParsePrompt(p.Text())
		require.NoError(t, err, "prompt file:\n%s", p.Text())
		assert.Equal(t, p.Output, got.Output)
		assert.Equal(t, p.Problem, got.Problem)
		assert.Equal(t, p.Refusals, got.Refusals)
		if !strings.Contains(task, "## Inputs") {
			assert.Equal(t, p.Task, got.Task)
			assert.Equal(t, p.Inputs, got.Inputs)
		}
	})
}
