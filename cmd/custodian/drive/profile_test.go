package drive_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/workflow/engine"
)

const (
	runDir = "/runs/r1"
	prompt = "/runs/r1/.custodian/jobs/claims/prompt-1.md"
)

// instruction is what every profile gives the worker for prompt.
var instruction = "Read `" + prompt + "` and follow it."

func mustProfile(t *testing.T, worker, command string) *drive.Profile {
	t.Helper()
	p, err := drive.NewProfile(worker, command)
	require.NoError(t, err)
	return p
}

// launchOf returns the hand-out of the claims job with launch parameters
// launch, a JSON object or "".
func launchOf(launch string) engine.Handout {
	return engine.Handout{Name: "claims", Attempt: 1, Prompt: prompt, Launch: json.RawMessage(launch)}
}

func TestProfileCommandLines(t *testing.T) {
	claude := []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"}
	codex := []string{"codex", "exec", "--json", "--skip-git-repo-check", "-C", runDir}
	end := []string{"--", instruction}
	tests := []struct {
		name    string
		worker  string
		command string
		launch  string
		want    []string
	}{
		{"claude without parameters", "claude", "", "", slices.Concat(claude, end)},
		{"claude with none", "claude", "", "{}", slices.Concat(claude, end)},
		{"claude model", "claude", "", `{"model":"sonnet"}`, slices.Concat(claude, []string{"--model", "sonnet"}, end)},
		{"claude effort", "claude", "", `{"effort":"xhigh"}`, slices.Concat(claude, []string{"--effort", "xhigh"}, end)},
		{"claude tools as a string", "claude", "", `{"tools":"Read,Bash(git add:*)"}`,
			slices.Concat(claude, []string{"--allowedTools=Read,Bash(git add:*)"}, end)},
		{"claude tools as a list", "claude", "", `{"tools":["Read","Edit","Bash(git *)"]}`,
			slices.Concat(claude, []string{"--allowedTools=Read,Edit,Bash(git *)"}, end)},
		{"claude every parameter, in a fixed order", "claude", "", `{"tools":["Read"],"effort":"low","model":"opus"}`,
			slices.Concat(claude, []string{"--model", "opus", "--effort", "low", "--allowedTools=Read"}, end)},
		{"codex without parameters", "codex", "", "", slices.Concat(codex, end)},
		{"codex model", "codex", "", `{"model":"gpt-5-codex"}`, slices.Concat(codex, []string{"--model", "gpt-5-codex"}, end)},
		{"codex sandbox", "codex", "", `{"sandbox":"workspace-write"}`, slices.Concat(codex, []string{"--sandbox", "workspace-write"}, end)},
		{"codex effort", "codex", "", `{"effort":"minimal"}`, slices.Concat(codex, []string{"-c", "model_reasoning_effort=minimal"}, end)},
		{"codex every parameter, in a fixed order", "codex", "", `{"effort":"high","sandbox":"read-only","model":"m"}`,
			slices.Concat(codex, []string{"--model", "m", "--sandbox", "read-only", "-c", "model_reasoning_effort=high"}, end)},
		{"exec placeholders", "exec", "/bin/worker --job {job} --prompt={prompt} {instruction}", "",
			[]string{"/bin/worker", "--job", "claims", "--prompt=" + prompt, instruction}},
		{"exec placeholders inside quotes stay one word", "exec", `/bin/worker '{job} and {job}'`, "",
			[]string{"/bin/worker", "claims and claims"}},
		{"exec string parameter as its text", "exec", "/bin/worker --model {param:model} {prompt}", `{"model":"small model"}`,
			[]string{"/bin/worker", "--model", "small model", prompt}},
		{"exec other parameters as their JSON", "exec", "/bin/worker {param:n} {param:tools} x{param:on}", `{"n":3,"on":true,"tools":["Read","Edit"]}`,
			[]string{"/bin/worker", "3", `["Read","Edit"]`, "xtrue"}},
		{"exec other braces are text", "exec", `/bin/worker '{"a":1}' {} '{a b}'`, "",
			[]string{"/bin/worker", `{"a":1}`, "{}", "{a b}"}},
		{"exec empty word", "exec", `/bin/worker '' {job}`, "", []string{"/bin/worker", "", "claims"}},
		{"exec optional parameter given", "exec", "/bin/worker --model={param:model?} {prompt}", `{"model":"small"}`,
			[]string{"/bin/worker", "--model=small", prompt}},
		{"exec optional parameter missing leaves its argument out", "exec", "/bin/worker --model={param:model?} {prompt}", `{}`,
			[]string{"/bin/worker", prompt}},
		{"exec default given", "exec", "/bin/worker --effort {param:effort=low} {prompt}", `{"effort":"high"}`,
			[]string{"/bin/worker", "--effort", "high", prompt}},
		{"exec default for a missing parameter", "exec", "/bin/worker --effort {param:effort=low} {prompt}", `{}`,
			[]string{"/bin/worker", "--effort", "low", prompt}},
		{"exec an empty default", "exec", "/bin/worker x{param:effort=}", `{}`, []string{"/bin/worker", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := mustProfile(t, tt.worker, tt.command).Command(launchOf(tt.launch), runDir)
			require.NoError(t, err)
			assert.Equal(t, tt.want, c.Args)
			assert.Equal(t, runDir, c.Dir)
			assert.Equal(t, "claims", c.Job)
		})
	}
}

func TestProfileLaunchErrors(t *testing.T) {
	tests := []struct {
		name    string
		worker  string
		command string
		launch  string
		param   string
		says    string
	}{
		{"claude has no sandbox", "claude", "", `{"sandbox":"read-only"}`, "sandbox", "has no flag in the claude profile, which maps model, effort, tools"},
		{"claude reports the first unknown key", "claude", "", `{"zeta":1,"alpha":1,"model":"m"}`, "alpha", "has no flag"},
		{"claude model not a string", "claude", "", `{"model":3}`, "model", `must be a non-empty JSON string, such as "sonnet", not 3`},
		{"claude model empty", "claude", "", `{"model":" "}`, "model", "must be a non-empty JSON string"},
		{"claude effort unknown", "claude", "", `{"effort":"extreme"}`, "effort", `must be one of low, medium, high, xhigh, max, not "extreme"`},
		{"claude effort not a string", "claude", "", `{"effort":["low"]}`, "effort", "must be one of"},
		{"claude tools a number", "claude", "", `{"tools":7}`, "tools", "must be a string of tool names or a JSON array of them"},
		{"claude tools an empty list", "claude", "", `{"tools":[]}`, "tools", "must be a string of tool names"},
		{"claude tools a list with an empty name", "claude", "", `{"tools":["Read",""]}`, "tools", "must be a string of tool names"},
		{"claude tools a list of numbers", "claude", "", `{"tools":[1]}`, "tools", "must be a string of tool names"},
		{"codex has no tools", "codex", "", `{"tools":"Read"}`, "tools", "has no flag in the codex profile, which maps model, sandbox, effort"},
		{"codex sandbox unknown", "codex", "", `{"sandbox":"none"}`, "sandbox", "must be one of read-only, workspace-write, danger-full-access"},
		{"codex effort not a word", "codex", "", `{"effort":"high model=x"}`, "effort", "must be one lower-case word"},
		{"codex effort upper case", "codex", "", `{"effort":"High"}`, "effort", "must be one lower-case word"},
		{"codex model not a string", "codex", "", `{"model":null}`, "model", "must be a non-empty JSON string"},
		{"exec parameter no placeholder uses", "exec", "/bin/worker {param:model}", `{"model":"m","tools":"Read"}`, "tools",
			"is used by no placeholder of --command: add {param:tools}"},
		{"exec placeholder without its parameter", "exec", "/bin/worker {param:model} {prompt}", `{}`, "model",
			"is missing: --command uses {param:model}; give the job that launch parameter, or change --command"},
		{"not a JSON object", "claude", "", `[1]`, "", "its launch parameters are not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mustProfile(t, tt.worker, tt.command).Command(launchOf(tt.launch), runDir)
			var launchErr *drive.LaunchError
			require.ErrorAs(t, err, &launchErr)
			assert.Equal(t, "claims", launchErr.Job)
			assert.Equal(t, tt.param, launchErr.Param)
			assert.Contains(t, err.Error(), tt.says)
			assert.True(t, strings.HasPrefix(err.Error(), "job claims cannot be launched: "), err.Error())
		})
	}
}

func TestNewProfileRefusesMalformedArguments(t *testing.T) {
	tests := []struct {
		name    string
		worker  string
		command string
		says    string
	}{
		{"unknown worker", "gemini", "", `--worker "gemini" is not a worker profile: use claude, codex or exec`},
		{"exec without a command", "exec", "", "--worker exec needs --command"},
		{"exec with a blank command", "exec", "  \n", "--worker exec needs --command"},
		{"a command for claude", "claude", "claude -p", "--command is for --worker exec; the claude profile builds its own command line"},
		{"a command for codex", "codex", "x", "--command is for --worker exec"},
		{"an empty program", "exec", "'' x", "--command names no program"},
		{"only a line continuation", "exec", "\\\n", "--command names no program"},
		{"an unclosed single quote", "exec", "worker 'a b", "its single quote is never closed"},
		{"an unclosed double quote", "exec", `worker "a b`, "its double quote is never closed"},
		{"a trailing backslash", "exec", `worker a\`, "it ends with a backslash that escapes nothing"},
		{"an unknown placeholder", "exec", "worker {prompt_file}", "--command's {prompt_file} is not a placeholder"},
		{"a placeholder in capitals", "exec", "worker {JOB}", "--command's {JOB} is not a placeholder"},
		{"an unknown placeholder name", "exec", "worker {file}", "--command's {file} is not a placeholder: use {instruction}, {prompt}, {job} or {param:KEY}"},
		{"a param without a key", "exec", "worker {param}", "--command's {param} needs a key"},
		{"a param with an empty key", "exec", "worker {param:}", "--command's {param:} needs a key"},
		{"a key where none is taken", "exec", "worker {job:name}", "--command's {job:name} takes no key: write {job}"},
		{"a pipe", "exec", "worker | tee log", `its unquoted '|' would mean something to a shell`},
		{"a redirection", "exec", "worker {prompt} > log", `its unquoted '>'`},
		{"a variable", "exec", "worker $HOME", `its unquoted '$'`},
		{"a variable in double quotes", "exec", `worker "$HOME"`, `its '$' inside double quotes would be expanded by a shell`},
		{"a glob", "exec", "worker *.md", `its unquoted '*'`},
		{"a tilde", "exec", "~/worker", `its unquoted '~'`},
		{"a comment", "exec", "worker #1", `its unquoted '#'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := drive.NewProfile(tt.worker, tt.command)
			require.ErrorIs(t, err, engine.ErrUsage)
			var usage *engine.UsageError
			require.ErrorAs(t, err, &usage)
			assert.Contains(t, usage.Message, tt.says)
			assert.NotEmpty(t, usage.Hint)
		})
	}
}

func TestExecProgramByRelativePathIsTakenFromTheWorkingDirectory(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	c, err := mustProfile(t, "exec", "./scripts/worker {prompt}").Command(launchOf(""), runDir)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(wd, "scripts", "worker"), prompt}, c.Args)

	c, err = mustProfile(t, "exec", "worker {prompt}").Command(launchOf(""), runDir)
	require.NoError(t, err)
	assert.Equal(t, "worker", c.Args[0], "a bare name is looked up on PATH when the worker starts")
}

func TestCommandRunDirectoryIsAbsolute(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	c, err := mustProfile(t, "codex", "").Command(launchOf(""), "runs/r1")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(wd, "runs", "r1"), c.Dir)
	assert.Equal(t, []string{"-C", c.Dir}, c.Args[4:6], "codex works where the worker runs, whatever its own idea of -C")
}

// scrubbedVars are the variables no worker may inherit.
var scrubbedVars = []string{
	"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_CHILD_SESSION",
	"CLAUDE_CODE_EXECPATH", "CLAUDE_CODE_SSE_PORT", "AI_AGENT", "CLAUDE_EFFORT", "TRACEPARENT",
	"CODEX_THREAD_ID", "CODEX_SESSION_ID", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED",
}

func TestCommandEnvironment(t *testing.T) {
	for _, name := range scrubbedVars {
		t.Setenv(name, "secret-"+name)
	}
	t.Setenv("CLAUDE_CODE_EFFORT_LEVEL", "low")
	t.Setenv("ANTHROPIC_API_KEY", "sk-secret")
	t.Setenv("TZ", "Asia/Tokyo")

	tests := []struct {
		name       string
		worker     string
		command    string
		launch     string
		tz         string // the worker's TZ
		keepsLevel bool   // whether CLAUDE_CODE_EFFORT_LEVEL reaches the worker
	}{
		{"claude", "claude", "", "", "Asia/Tokyo", true},
		{"claude given an effort", "claude", "", `{"effort":"high"}`, "Asia/Tokyo", false},
		{"codex, in UTC", "codex", "", "", "UTC", true},
		{"codex given an effort", "codex", "", `{"effort":"high"}`, "UTC", false},
		{"exec", "exec", "/bin/worker {prompt}", "", "Asia/Tokyo", true},
		{"exec given an effort", "exec", "/bin/worker {param:effort}", `{"effort":"high"}`, "Asia/Tokyo", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := mustProfile(t, tt.worker, tt.command).Command(launchOf(tt.launch), runDir)
			require.NoError(t, err)
			env := map[string][]string{}
			for _, kv := range c.Env {
				name, value, _ := strings.Cut(kv, "=")
				env[name] = append(env[name], value)
			}
			for _, name := range scrubbedVars {
				assert.NotContains(t, env, name)
			}
			assert.Equal(t, []string{tt.tz}, env["TZ"], "one TZ, the profile's or the inherited one")
			assert.Equal(t, []string{"sk-secret"}, env["ANTHROPIC_API_KEY"], "credentials are passed on")
			_, kept := env["CLAUDE_CODE_EFFORT_LEVEL"]
			assert.Equal(t, tt.keepsLevel, kept)

			names := c.EnvNames()
			assert.True(t, slices.IsSorted(names))
			assert.Contains(t, names, "ANTHROPIC_API_KEY")
			assert.Contains(t, names, "TZ")
			assert.NotContains(t, names, "CLAUDECODE")
			for _, name := range names {
				assert.NotContains(t, name, "=")
				assert.NotContains(t, name, "secret")
			}
		})
	}
}

func TestInstruction(t *testing.T) {
	assert.Equal(t, "Read `/r/.custodian/jobs/a/prompt-2.md` and follow it.", drive.Instruction("/r/.custodian/jobs/a/prompt-2.md"))
}
