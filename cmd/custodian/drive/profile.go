package drive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/workflow/engine"
)

// Instruction is the whole of what a worker is told; the prompt file holds
// everything else.
func Instruction(prompt string) string { return "Read `" + prompt + "` and follow it." }

// The worker profiles, by the name --worker takes.
const (
	WorkerClaude = "claude" // Claude Code: claude -p, stream-json events
	WorkerCodex  = "codex"  // Codex: codex exec --json
	WorkerExec   = "exec"   // any program, from --command
)

// Workers lists the worker profiles in the order the docs give them.
var Workers = []string{WorkerClaude, WorkerCodex, WorkerExec}

// Profile says how one kind of worker is started: the command line that
// gives it a hand-out and applies the hand-out's launch parameters, and
// what its environment gets besides the scrubbed environment of this
// process.
type Profile struct {
	name   string
	args   func(l launch) ([]string, error)
	setenv []string // KEY=VALUE, replacing any inherited value of KEY
}

// launch is what a profile needs of one hand-out.
type launch struct {
	job    string
	prompt string // the prompt file, absolute
	runDir string // absolute
	params map[string]json.RawMessage
}

// NewProfile returns the profile of worker: claude, codex or exec. command
// is the value of --command, which exec requires and the others refuse. A
// bad worker name or a malformed command is a *workflow.UsageError, found
// before any step is taken.
func NewProfile(worker, command string) (*Profile, error) {
	switch {
	case !slices.Contains(Workers, worker):
		return nil, usage("--worker %q is not a worker profile: use claude, codex or exec", worker)
	case worker == WorkerExec && strings.TrimSpace(command) == "":
		return nil, usage("--worker exec needs --command: the program to run and its arguments, such as --command './worker {prompt}'")
	case worker != WorkerExec && command != "":
		return nil, usage("--command is for --worker exec; the %s profile builds its own command line", worker)
	}
	switch worker {
	case WorkerClaude:
		return &Profile{name: worker, args: claudeArgs}, nil
	case WorkerCodex:
		// codex writes a reset time in local time without naming the zone;
		// in UTC it can be read back.
		return &Profile{name: worker, args: codexArgs, setenv: []string{"TZ=UTC"}}, nil
	default:
		t, err := parseTemplate(command)
		if err != nil {
			return nil, err
		}
		return &Profile{name: worker, args: t.args}, nil
	}
}

// Name returns the profile's name, as --worker gives it.
func (p *Profile) Name() string { return p.name }

// Command returns the command that launches a worker for the hand-out h of
// the run in runDir: its command line, its working directory (the run
// directory) and its environment. A launch parameter the profile cannot map,
// or whose value it cannot use, is a *LaunchError: the launch has failed,
// and the worker must not be launched without it.
func (p *Profile) Command(h engine.Handout, runDir string) (*Command, error) {
	dir, err := filepath.Abs(runDir)
	if err != nil {
		return nil, err
	}
	params := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(h.Launch)) > 0 {
		if err := json.Unmarshal(h.Launch, &params); err != nil {
			return nil, &LaunchError{Job: h.Name, Reason: "its launch parameters are not a JSON object: " + err.Error()}
		}
	}
	args, err := p.args(launch{job: h.Name, prompt: h.Prompt, runDir: dir, params: params})
	if err != nil {
		return nil, err
	}
	unset := scrubbed
	if _, ok := params["effort"]; ok {
		// It overrides --effort; a worker given an effort must work at it.
		unset = append(slices.Clip(unset), "CLAUDE_CODE_EFFORT_LEVEL")
	}
	return &Command{Job: h.Name, Args: args, Dir: dir, Env: environ(os.Environ(), unset, p.setenv)}, nil
}

// LaunchError is a hand-out a profile cannot launch as the job asks: a
// launch parameter it has no flag for, or a value it cannot use. The loop
// reports the launch as failed with the error's text.
type LaunchError struct {
	Job    string // the job handed out
	Param  string // the launch parameter at fault; empty when the fault is not one parameter's
	Reason string // what is wrong, and what to do
}

func (e *LaunchError) Error() string {
	if e.Param == "" {
		return fmt.Sprintf("job %s cannot be launched: %s", e.Job, e.Reason)
	}
	return fmt.Sprintf("job %s cannot be launched: launch parameter %q %s", e.Job, e.Param, e.Reason)
}

// mapping is how a profile applies one launch parameter.
type mapping struct {
	key   string
	value func(raw json.RawMessage) (string, bool)
	want  string // what value reads, said to whoever gave another
	flags func(v string) []string
}

var claudeParams = []mapping{
	{"model", nonEmptyString, "must be a non-empty JSON string, such as \"sonnet\"",
		func(v string) []string { return []string{"--model", v} }},
	{"effort", oneOf("low", "medium", "high", "xhigh", "max"), "must be one of low, medium, high, xhigh, max",
		func(v string) []string { return []string{"--effort", v} }},
	// The = form: --allowedTools takes any number of values, and in the
	// two-argument form would swallow the instruction after it.
	{"tools", toolList, "must be a string of tool names or a JSON array of them, such as [\"Read\",\"Edit\"]",
		func(v string) []string { return []string{"--allowedTools=" + v} }},
}

var codexParams = []mapping{
	{"model", nonEmptyString, "must be a non-empty JSON string, such as \"gpt-5-codex\"",
		func(v string) []string { return []string{"--model", v} }},
	{"sandbox", oneOf("read-only", "workspace-write", "danger-full-access"), "must be one of read-only, workspace-write, danger-full-access",
		func(v string) []string { return []string{"--sandbox", v} }},
	// codex passes any value on unchecked; a word at least cannot smuggle
	// in another setting.
	{"effort", lowerWord, "must be one lower-case word, such as \"high\"",
		func(v string) []string { return []string{"-c", "model_reasoning_effort=" + v} }},
}

func claudeArgs(l launch) ([]string, error) {
	flags, err := applyParams(l, WorkerClaude, claudeParams)
	if err != nil {
		return nil, err
	}
	args := []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"}
	// -- keeps an instruction that begins with a dash from reading as a flag.
	return slices.Concat(args, flags, []string{"--", Instruction(l.prompt)}), nil
}

func codexArgs(l launch) ([]string, error) {
	flags, err := applyParams(l, WorkerCodex, codexParams)
	if err != nil {
		return nil, err
	}
	args := []string{"codex", "exec", "--json", "--skip-git-repo-check", "-C", l.runDir}
	return slices.Concat(args, flags, []string{"--", Instruction(l.prompt)}), nil
}

// applyParams returns the flags for l's launch parameters, in the order of
// ms, or the first parameter (by name) that profile cannot apply.
func applyParams(l launch, profile string, ms []mapping) ([]string, error) {
	keys := make([]string, len(ms))
	for i, m := range ms {
		keys[i] = m.key
	}
	for _, key := range sortedKeys(l.params) {
		if !slices.Contains(keys, key) {
			return nil, &LaunchError{Job: l.job, Param: key, Reason: fmt.Sprintf(
				"has no flag in the %s profile, which maps %s: take it off the job, or drive the run with a profile that maps it",
				profile, strings.Join(keys, ", "))}
		}
	}
	var flags []string
	for _, m := range ms {
		raw, ok := l.params[m.key]
		if !ok {
			continue
		}
		v, ok := m.value(raw)
		if !ok {
			return nil, &LaunchError{Job: l.job, Param: m.key, Reason: fmt.Sprintf("%s, not %s", m.want, compact(raw))}
		}
		flags = append(flags, m.flags(v)...)
	}
	return flags, nil
}

func nonEmptyString(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil || strings.TrimSpace(s) == "" {
		return "", false
	}
	return s, true
}

func oneOf(values ...string) func(json.RawMessage) (string, bool) {
	return func(raw json.RawMessage) (string, bool) {
		s, ok := nonEmptyString(raw)
		return s, ok && slices.Contains(values, s)
	}
}

var lowerWordPattern = regexp.MustCompile(`^[a-z]+$`)

func lowerWord(raw json.RawMessage) (string, bool) {
	s, ok := nonEmptyString(raw)
	return s, ok && lowerWordPattern.MatchString(s)
}

// toolList reads a string of tool names as it is, and a list of them joined
// with commas, which claude splits on (outside parentheses, so that
// "Bash(git add:*)" stays one name).
func toolList(raw json.RawMessage) (string, bool) {
	if s, ok := nonEmptyString(raw); ok {
		return s, true
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return "", false
	}
	for _, t := range list {
		if strings.TrimSpace(t) == "" {
			return "", false
		}
	}
	return strings.Join(list, ","), true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// compact renders a JSON value on one line, for a message.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func usage(format string, args ...any) error {
	return &engine.UsageError{
		Message: fmt.Sprintf(format, args...),
		Hint:    "custodian drive RUN --worker claude|codex|exec [--command CMD]; see docs/drive.md",
	}
}
