package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The format of the transcripts under testdata/e2e; testdata/e2e/README.md
// describes it for readers.
const (
	prog          = "custodian" // every command runs it: "$ custodian step $RUN"
	variantMark   = "@"         // or a build of testdata/variant: "$ custodian@prompt check $RUN"
	commandPrefix = "$ "        // a command, as typed: "$ custodian step $RUN"
	headingPrefix = "## "       // a part of the course, and who acts in it
	commentPrefix = "# "        // what happened between commands
	exitLine      = "[exit %d]"
	stderrLine    = "[stderr]"
	noNewlineLine = "[no newline at end]"

	// agentHeading opens a part that the scripted agent orchestrator plays;
	// the commands in it are the agent's to choose, and are not read.
	agentHeading = headingPrefix + "the agent orchestrator"
)

// course is a transcript file read as a script: what the test must do to
// write the transcript again.
type course struct {
	header string // the lines before the first command or heading, kept as written
	parts  []part // in order; the first has no heading
}

// part is the commands under one heading.
type part struct {
	heading  string           // the heading line; "" for the part before the first
	commands []variantCommand // none in an agent part
}

// variantCommand is a command line of a course: the binary it runs and its
// arguments.
type variantCommand struct {
	variant string   // "" for the custodian binary; else the build of testdata/variant it runs
	args    []string // after "custodian" or "custodian@VARIANT"
}

// variantProg is how a command line names the binary: custodian, or
// custodian@VARIANT.
func variantProg(variant string) string {
	if variant == "" {
		return prog
	}
	return prog + variantMark + variant
}

// agent says whether the scripted agent orchestrator plays this part.
func (p part) agent() bool { return strings.HasPrefix(p.heading, agentHeading) }

// scenario is the trial scenario of the course's run: the one its first
// `custodian trial setup SCENARIO` names, or "" when it sets up none.
func (c course) scenario() string {
	for _, p := range c.parts {
		for _, cmd := range p.commands {
			if args := cmd.args; len(args) > 2 && args[0] == "trial" && args[1] == "setup" {
				return args[2]
			}
		}
	}
	return ""
}

// parseCourse reads a transcript. Only its header, its headings and its
// command lines outside agent parts matter; every other line is output or
// commentary, which the test writes anew.
func parseCourse(text string) (course, error) {
	var c course
	lines := strings.SplitAfter(text, "\n")
	i := 0
	for ; i < len(lines) && !strings.HasPrefix(lines[i], commandPrefix) && !strings.HasPrefix(lines[i], headingPrefix); i++ {
		c.header += lines[i]
	}
	c.header = strings.TrimRight(c.header, "\n")
	c.parts = []part{{}}
	for n, line := range lines[i:] {
		line = strings.TrimSuffix(line, "\n")
		p := &c.parts[len(c.parts)-1]
		switch {
		case strings.HasPrefix(line, headingPrefix):
			c.parts = append(c.parts, part{heading: line})
		case strings.HasPrefix(line, commandPrefix) && !p.agent():
			args, err := splitCommand(strings.TrimPrefix(line, commandPrefix))
			if err != nil {
				return course{}, fmt.Errorf("line %d: %w", i+n+1, err)
			}
			if len(args) == 0 {
				return course{}, fmt.Errorf("line %d: %q does not run %s", i+n+1, line, prog)
			}
			name, variant, isVariant := strings.Cut(args[0], variantMark)
			switch {
			case name != prog:
				return course{}, fmt.Errorf("line %d: %q does not run %s", i+n+1, line, prog)
			case isVariant && !slices.Contains(variantNames, variant):
				return course{}, fmt.Errorf("line %d: %q runs variant %q, which testdata/variant does not build; the variants are %s",
					i+n+1, line, variant, strings.Join(variantNames, ", "))
			}
			p.commands = append(p.commands, variantCommand{variant: variant, args: args[1:]})
		}
	}
	return c, nil
}

// splitCommand splits a command line into arguments at spaces. An argument
// in double quotes is a Go string literal, as quoteArg writes it.
func splitCommand(line string) ([]string, error) {
	var args []string
	for rest := strings.TrimLeft(line, " "); rest != ""; rest = strings.TrimLeft(rest, " ") {
		if rest[0] != '"' {
			arg, tail, _ := strings.Cut(rest, " ")
			args, rest = append(args, arg), tail
			continue
		}
		quoted, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return nil, fmt.Errorf("%q: an unterminated or malformed quoted argument", line)
		}
		arg, err := strconv.Unquote(quoted)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		args, rest = append(args, arg), rest[len(quoted):]
	}
	return args, nil
}

// quoteArg writes an argument as splitCommand reads it back: as it is when
// it is made of plain characters, as a Go string literal otherwise.
func quoteArg(arg string) string {
	const plain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%$"
	if arg != "" && strings.Trim(arg, plain) == "" {
		return arg
	}
	return strconv.Quote(arg)
}

// variantTimes are the times that records and status give (UTC, to the
// second or finer); a transcript writes each as $TIME.
var variantTimes = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b`)

// builds names the build of each binary the courses run as $BUILD (the
// custodian binary) or $BUILD@VARIANT, as `version --json` says it: a
// build ID changes with every change of the code, and a transcript must
// not.
var builds = sync.OnceValues(func() (*strings.Replacer, error) {
	var pairs []string
	name := func(bin, as string) error {
		out, err := exec.Command(bin, "version", "--json").Output()
		if err != nil {
			return fmt.Errorf("%s version: %w", bin, err)
		}
		var v struct{ Text string }
		if err := json.Unmarshal(out, &v); err != nil || !strings.Contains(v.Text, ", build ") {
			return fmt.Errorf("%s version --json: %q names no build", bin, out)
		}
		pairs = append(pairs, v.Text, as)
		return nil
	}
	if err := name(binary, "$BUILD"); err != nil {
		return nil, err
	}
	for _, v := range variantNames {
		if err := name(variantBinaries[v], "$BUILD"+variantMark+v); err != nil {
			return nil, err
		}
	}
	return strings.NewReplacer(pairs...), nil
})

// transcript writes a course as it happens. Paths are written as $RUN and
// $TMP, times as $TIME and builds as $BUILD, so that a transcript is the
// same wherever and whenever the test runs, and whatever the code's
// commit.
type transcript struct {
	b        strings.Builder
	paths    *strings.Replacer // the run and the temporary directories, to $RUN and $TMP
	builds   *strings.Replacer // each binary's build, to $BUILD or $BUILD@VARIANT
	comments bool              // the last thing written is a comment block
}

func newTranscript(header, run, tmp string, builds *strings.Replacer) *transcript {
	// The run directory is inside the temporary one, so it is replaced
	// first: a Replacer tries its pairs in the order given.
	tr := &transcript{paths: strings.NewReplacer(run, "$RUN", tmp, "$TMP"), builds: builds}
	if header != "" {
		tr.b.WriteString(header + "\n")
	}
	return tr
}

func (tr *transcript) String() string { return tr.b.String() }

// block separates what comes next from what came before with a blank line.
func (tr *transcript) block() {
	if tr.b.Len() > 0 {
		tr.b.WriteString("\n")
	}
	tr.comments = false
}

func (tr *transcript) heading(line string) {
	tr.block()
	tr.b.WriteString(line + "\n")
}

// command writes a command of the binary that variant names (see
// variantProg) with its exit status when not 0, its stdout and its stderr.
func (tr *transcript) command(variant string, args []string, r result) {
	tr.block()
	words := []string{commandPrefix + variantProg(variant)}
	for _, arg := range args {
		words = append(words, quoteArg(tr.paths.Replace(arg)))
	}
	tr.b.WriteString(strings.Join(words, " ") + "\n")
	if r.code != 0 {
		fmt.Fprintf(&tr.b, exitLine+"\n", r.code)
	}
	tr.output(r.stdout)
	if r.stderr != "" {
		tr.b.WriteString(stderrLine + "\n")
		tr.output(r.stderr)
	}
}

func (tr *transcript) output(text string) {
	if text == "" {
		return
	}
	tr.b.WriteString(tr.builds.Replace(variantTimes.ReplaceAllString(tr.paths.Replace(text), "$$TIME")))
	if !strings.HasSuffix(text, "\n") {
		tr.b.WriteString("\n" + noNewlineLine + "\n")
	}
}

// comment writes one comment line per line of its text; comments written
// one after another form one block.
func (tr *transcript) comment(format string, args ...any) {
	if !tr.comments {
		tr.block()
	}
	text := tr.builds.Replace(variantTimes.ReplaceAllString(tr.paths.Replace(fmt.Sprintf(format, args...)), "$$TIME"))
	for _, line := range strings.Split(text, "\n") {
		tr.b.WriteString(commentPrefix + line + "\n")
	}
	tr.comments = true
}

func TestTranscriptCommandLinesReadBackAsWritten(t *testing.T) {
	for _, args := range [][]string{
		{"step", "$RUN"},
		{"trial", "setup", "parameters", "--run", "$RUN", "--launch", "tools=read,grep"},
		{"report", "$RUN", "stop", "--job", "assumptions", "--text", `a "quoted" word; and a\backslash`},
		{"start", "trial", "--param", ""},
		{"report", "$RUN", "repair", "--text", "two  spaces\tand a tab"},
	} {
		words := make([]string, len(args))
		for i, arg := range args {
			words[i] = quoteArg(arg)
		}
		got, err := splitCommand(strings.Join(words, " "))
		require.NoError(t, err)
		assert.Equal(t, args, got)
	}
	_, err := splitCommand(`report $RUN stop --text "unterminated`)
	assert.Error(t, err)
}

func TestVariantCommandLinesReadBack(t *testing.T) {
	c, err := parseCourse("# a header\n\n$ custodian@prompt check $RUN\nchanged\n\n$ custodian step $RUN\n")
	require.NoError(t, err)
	assert.Equal(t, []variantCommand{{variant: "prompt", args: []string{"check", "$RUN"}}, {args: []string{"step", "$RUN"}}},
		c.parts[0].commands)

	for _, bad := range []string{"$ custodian@nope step $RUN\n", "$ custodian@ step $RUN\n", "$ other@base step $RUN\n"} {
		_, err := parseCourse(bad)
		assert.Error(t, err, bad)
	}

	tr := newTranscript("", "/tmp/x/run", "/tmp/x", strings.NewReplacer("custodian, build B2", "$BUILD@base"))
	tr.command("base", []string{"status", "/tmp/x/run"}, result{stdout: "last step: 2, done, at 2026-01-02T03:04:05Z\nbuild: custodian, build B2\n"})
	assert.Equal(t, "$ custodian@base status $RUN\nlast step: 2, done, at $TIME\nbuild: $BUILD@base\n", tr.String())
}
