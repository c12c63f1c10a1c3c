package docs_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/cmd/custodian/shell"
	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/workflow/engine"
)

// loopHeading is the first line of loop.md; the body is what follows it.
const loopHeading = "# Driving a custodian run"

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// loopBody returns the loop instruction without its heading: the text every
// harness file embeds verbatim.
func loopBody(t *testing.T) string {
	t.Helper()
	loop := read(t, "loop.md")
	body, ok := strings.CutPrefix(loop, loopHeading+"\n\n")
	require.True(t, ok, "loop.md begins with %q and a blank line", loopHeading)
	require.NotEmpty(t, strings.TrimSpace(body))
	return body
}

// frontMatter splits a file into its YAML front matter, as key: value
// lines, and the rest.
func frontMatter(t *testing.T, text string) (map[string]string, string) {
	t.Helper()
	rest, ok := strings.CutPrefix(text, "---\n")
	require.True(t, ok, "the file begins with front matter")
	head, rest, ok := strings.Cut(rest, "\n---\n")
	require.True(t, ok, "the front matter is closed by ---")
	fields := map[string]string{}
	for _, line := range strings.Split(head, "\n") {
		key, value, ok := strings.Cut(line, ": ")
		require.True(t, ok, "front matter line %q is key: value", line)
		require.NotContains(t, value, ": ", "a plain YAML value may not hold ': ' (line %q)", line)
		fields[key] = value
	}
	return fields, rest
}

func TestHarnessFilesEmbedTheLoopVerbatim(t *testing.T) {
	body := loopBody(t)
	for _, path := range []string{
		"harness/claude-code/custodian-loop/SKILL.md",
		"harness/claude-code/custodian-loop.md",
		"harness/codex/AGENTS.md",
	} {
		t.Run(path, func(t *testing.T) {
			assert.Contains(t, read(t, path), body, "%s must hold the body of loop.md unchanged", path)
		})
	}
}

func TestClaudeCodeSkill(t *testing.T) {
	fields, rest := frontMatter(t, read(t, "harness/claude-code/custodian-loop/SKILL.md"))
	assert.Equal(t, "custodian-loop", fields["name"])
	assert.Contains(t, fields["description"], "Use when")
	assert.Len(t, fields, 2)
	assert.True(t, strings.HasPrefix(rest, "\n"+loopHeading+"\n"), "the skill is the loop instruction, heading and all")
}

func TestClaudeCodeCommand(t *testing.T) {
	fields, rest := frontMatter(t, read(t, "harness/claude-code/custodian-loop.md"))
	assert.NotEmpty(t, fields["description"])
	assert.Equal(t, "RUN", fields["argument-hint"])
	assert.Len(t, fields, 2)
	assert.Contains(t, rest, "RUN is `$ARGUMENTS`.", "the command names the run it is given")
}

func TestCodexSection(t *testing.T) {
	text := read(t, "harness/codex/AGENTS.md")
	assert.True(t, strings.HasPrefix(text, "## Driving a custodian run\n"))
	assert.Equal(t, 1, strings.Count(text, "\n#")+boolInt(strings.HasPrefix(text, "#")),
		"the section has one heading, so it drops into an AGENTS.md as it is")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestLoopUsesPlaceholdersOnly(t *testing.T) {
	body := loopBody(t)
	assert.Contains(t, body, "`custodian step RUN`")
	for _, concrete := range []string{"/tmp/", "/home/", "runs/run-", ".custodian/jobs"} {
		assert.NotContains(t, body, concrete, "the loop names no concrete run")
	}
	assert.NotContains(t, body, "\n#", "the body has no heading of its own, so it nests under any harness heading")
}

func TestReadmeGivesTheTableOfExitCodes(t *testing.T) {
	readme := read(t, filepath.Join("..", "README.md"))
	for _, s := range engine.ExitStatuses {
		assert.Contains(t, readme, fmt.Sprintf("| %d | %s | %s |\n", s.Code, s.Meaning, s.Action))
	}
}

func TestLoopNamesEveryExitCodeAndEvent(t *testing.T) {
	body := loopBody(t)
	for _, code := range []int{engine.ExitOK, engine.ExitFailed, engine.ExitUsage, engine.ExitBusy, engine.ExitUntrusted, engine.ExitDefinition} {
		assert.Contains(t, body, fmt.Sprintf("- `%d`: ", code), "exit code %d", code)
	}
	for _, event := range engine.ReportEvents {
		assert.Contains(t, body, "custodian report RUN "+event+" ", "event %s", event)
	}
	for _, kind := range []engine.Kind{engine.KindLaunch, engine.KindBlocked, engine.KindUncertain, engine.KindDone} {
		assert.Contains(t, body, fmt.Sprintf("`%s`", kind))
	}
}

// custodian runs the shell in this process and returns what it printed on
// stdout; the command must succeed.
func custodian(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := shell.Main(definitions.Builtin(), append([]string{"custodian"}, args...), &stdout, &stderr)
	require.Equal(t, engine.ExitOK, code, "custodian %s: %s", strings.Join(args, " "), stderr.String())
	return stdout.String()
}

func write(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

// TestLoopQuotesWhatStepPrints drives trial runs through the shell and
// checks that every line the loop tells the agent to look for is one that
// step prints.
func TestLoopQuotesWhatStepPrints(t *testing.T) {
	body := loopBody(t)
	valid := "# Heading\n\n- one\n- two\n"

	params := filepath.Join(t.TempDir(), "run")
	custodian(t, "trial", "setup", "parameters", "--run", params, "--launch", "model=small")
	launch := custodian(t, "step", params)

	repair := filepath.Join(t.TempDir(), "run")
	custodian(t, "trial", "setup", "stop", "--run", repair)
	stopOnly := filepath.Join(t.TempDir(), "run")
	custodian(t, "trial", "setup", "stop-only", "--run", stopOnly)
	var blocked []string
	for _, dir := range []string{repair, stopOnly} {
		custodian(t, "step", dir)
		write(t, filepath.Join(dir, "claims.md"), valid)
		write(t, filepath.Join(dir, "assumptions.md"), valid)
		custodian(t, "step", dir)
		write(t, filepath.Join(dir, "assumptions.md"), valid)
		blocked = append(blocked, custodian(t, "step", dir))
	}

	lines := strings.Split(launch, "\n")
	require.Equal(t, "launch", lines[0])
	assert.Regexp(t, "^- claims: `/.+/prompt-1.md` launch=\\{\"model\":\"small\"\\}$", lines[2])
	assert.Contains(t, body, "``- NAME: `PROMPT FILE` ``, sometimes followed by ` launch=`")

	for _, fragment := range []string{"\n  record: ", "\n  permitted: repair within this scope: "} {
		assert.Contains(t, blocked[0], fragment)
	}
	assert.Contains(t, blocked[1], "\n  permitted: stop and report to the operator\n")
	for _, quoted := range []string{"`record: FILE`", "`permitted: repair within this scope: SCOPE`", "`permitted: stop and report to the operator`"} {
		assert.Contains(t, body, quoted)
	}
	for _, out := range blocked {
		assert.True(t, strings.HasPrefix(out, "blocked\n- assumptions: "), "a block is a line - SUBJECT: REASON")
	}
}

// TestAuthoringQuotesTheCode checks that every code block of authoring.md
// marked as a quote of a file is still in that file, verbatim.
func TestAuthoringQuotesTheCode(t *testing.T) {
	guide := read(t, "authoring.md")
	const marker = "<!-- quote: "
	quotes := 0
	for _, part := range strings.Split(guide, marker)[1:] {
		file, rest, ok := strings.Cut(part, " -->\n```go\n")
		require.True(t, ok, "a quote marker is followed by a Go code block: %.60q", part)
		block, _, ok := strings.Cut(rest, "\n```\n")
		require.True(t, ok, "the code block quoting %s is closed", file)
		assert.Contains(t, read(t, filepath.Join("..", file)), block+"\n", "authoring.md quotes %s", file)
		quotes++
	}
	assert.GreaterOrEqual(t, quotes, 5, "the worked example is quoted from its source")
}

// The README's Mermaid is what custodian graph draws of the trial run's
// problem scenario (package picture's golden file), and its picture is
// there.
func TestReadmeShowsTheTrialRunsPictures(t *testing.T) {
	readme := read(t, filepath.Join("..", "README.md"))
	mermaid := read(t, filepath.Join("..", "picture", "testdata", "trial-problem.mmd"))
	assert.Contains(t, readme, "```mermaid\n"+mermaid+"```\n")
	assert.Contains(t, readme, "](docs/view.png)")
	png := read(t, "view.png")
	assert.True(t, strings.HasPrefix(png, "\x89PNG\r\n\x1a\n"), "docs/view.png is a PNG")
}
