package trial

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/custodian-run/custodian/workflow"
)

// Runner is how the scripted agent reaches a run: the two commands an agent
// orchestrator runs. Step returns the outcome of one step; Report records
// what only the agent can see. The agent needs nothing else, which is the
// point: everything else is on disk.
type Runner interface {
	Step() (workflow.Outcome, error)
	Report(event, job, text string) error
}

// InProcess returns a Runner that calls the engine in this process. Tests use
// it to drive a run without building the binary; each Step still reads every
// record anew, as a fresh process would.
func InProcess(o *workflow.Orchestrator) Runner { return inProcess{o} }

type inProcess struct{ o *workflow.Orchestrator }

func (r inProcess) Step() (workflow.Outcome, error) { return r.o.Step() }

func (r inProcess) Report(event, job, text string) error {
	_, err := r.o.Report(event, job, text)
	return err
}

// ExitError is a custodian command that ended with a non-zero exit status.
// The status is what a real agent orchestrator branches on (3 busy, 4
// untrusted, 5 a broken definition, anything unnamed an ending inside an
// effect), so it is kept whole rather than folded into a message.
type ExitError struct {
	Args   []string // the command's arguments, after the binary's path
	Status int      // the exit status; -1 when a signal ended the process
	Stdout string   // everything the command printed on stdout
	Stderr string   // everything the command printed on stderr
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("custodian %s: exit status %d", strings.Join(e.Args, " "), e.Status)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// Binary returns a Runner that drives the run in runDir through the
// custodian binary at path, one process per command, the way a script
// would: it runs `step RUN --json` and decodes the one JSON object the
// design fixes. Each step therefore starts from nothing but the records.
func Binary(path, runDir string) Runner {
	return &binary{path: path, runDir: runDir, json: true}
}

// BinaryText returns a Runner that drives the run through the binary the way
// an AI agent orchestrator does: it runs `step RUN` and reads the lines the
// loop instruction teaches, so a scripted agent driven by it shows that the
// printed text alone is enough to follow the loop. Everything the commands
// print on stdout is copied to echo, when it is not nil, exactly as printed.
//
// The text names a job's prompt file but not its output: a worker learns
// where to write from the prompt, as a real worker does. The text carries no
// block kind and no attempt number either, so outcomes read this way leave
// those empty.
func BinaryText(path, runDir string, echo io.Writer) Runner {
	return &binary{path: path, runDir: runDir, echo: echo}
}

type binary struct {
	path   string
	runDir string
	json   bool      // read `step --json`, not the text
	echo   io.Writer // optional: receives stdout as printed
}

func (b *binary) Step() (workflow.Outcome, error) {
	args := []string{"step", b.runDir}
	if b.json {
		args = append(args, "--json")
	}
	stdout, err := b.run(args...)
	if err != nil {
		return workflow.Outcome{}, err
	}
	if b.json {
		return DecodeOutcome(stdout)
	}
	return ParseOutcome(string(stdout))
}

func (b *binary) Report(event, job, text string) error {
	args := []string{"report", b.runDir, event}
	if job != "" {
		args = append(args, "--job", job)
	}
	args = append(args, "--text", text)
	_, err := b.run(args...)
	return err
}

// run runs the binary with args and returns its stdout, or an *ExitError
// when it ends with a non-zero status.
func (b *binary) run(args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(b.path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if b.echo != nil {
		// Commentary for a reader; a failed write must not change the course.
		_, _ = b.echo.Write(stdout.Bytes())
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return nil, &ExitError{Args: args, Status: exit.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String()}
	case err != nil:
		return nil, fmt.Errorf("run %s %s: %w", b.path, strings.Join(args, " "), err)
	}
	return stdout.Bytes(), nil
}

// DecodeOutcome decodes the one JSON object that `step --json` prints. It is
// strict on purpose: an unknown field, a second value or an unknown outcome
// word means the binary and this package disagree on the format, and the
// trial kit exists to find exactly that.
func DecodeOutcome(data []byte) (workflow.Outcome, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out workflow.Outcome
	if err := dec.Decode(&out); err != nil {
		return workflow.Outcome{}, fmt.Errorf("decode step --json output: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return workflow.Outcome{}, fmt.Errorf("decode step --json output: more than one JSON value")
	}
	return out, nil
}

// The fixed words of the text form; see "What step prints" in the design.
const (
	permittedRepair    = "repair within this scope: "
	permittedStop      = "stop and report to the operator"
	launchParams       = " launch="
	effectPrefix       = "effect "
	alsoPrefix         = "also "
	noLaunchParameters = "{}"
)

// ParseOutcome reads what `step RUN` prints, as an agent orchestrator reads
// it: the outcome word on the first line, then one item per job, block or
// effect, each a "- " line followed by indented "key: value" lines.
func ParseOutcome(text string) (workflow.Outcome, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	kind := workflow.Kind(lines[0])
	if !kind.Known() {
		return workflow.Outcome{}, fmt.Errorf("read step output: the first line: unknown outcome %q", kind)
	}
	items, err := parseItems(lines[1:])
	if err != nil {
		return workflow.Outcome{}, fmt.Errorf("read step output: %w", err)
	}
	out := workflow.Outcome{Kind: kind}
	for _, it := range items {
		switch kind {
		case workflow.KindLaunch:
			h, err := parseHandout(it.head)
			if err != nil {
				return workflow.Outcome{}, fmt.Errorf("read step output: %w", err)
			}
			out.Jobs = append(out.Jobs, h)
		case workflow.KindBlocked:
			b, err := parseBlock(it)
			if err != nil {
				return workflow.Outcome{}, fmt.Errorf("read step output: %w", err)
			}
			out.Blocks = append(out.Blocks, b)
		case workflow.KindUncertain:
			if rest, ok := strings.CutPrefix(it.head, alsoPrefix); ok {
				subject, reason, _ := strings.Cut(rest, ": ")
				out.Blocks = append(out.Blocks, workflow.Block{Subject: subject, Reason: reason, Record: it.fields["record"]})
				continue
			}
			rest, ok := strings.CutPrefix(it.head, effectPrefix)
			if !ok {
				return workflow.Outcome{}, fmt.Errorf("read step output: %q names neither an effect nor another block", it.head)
			}
			name, detail, _ := strings.Cut(rest, ": ")
			out.Effects = append(out.Effects, workflow.EffectState{Name: name, Detail: detail})
		case workflow.KindDone:
			return workflow.Outcome{}, fmt.Errorf("read step output: done is followed by %q", it.head)
		}
	}
	return out, nil
}

// item is one "- " line of the text form and the indented lines under it.
type item struct {
	head   string            // the "- " line without its dash
	fields map[string]string // "  key: value" lines
}

func parseItems(lines []string) ([]item, error) {
	var items []item
	for _, line := range lines {
		if head, ok := strings.CutPrefix(line, "- "); ok {
			items = append(items, item{head: head, fields: map[string]string{}})
			continue
		}
		field, ok := strings.CutPrefix(line, "  ")
		key, value, found := strings.Cut(field, ": ")
		if !ok || !found || len(items) == 0 {
			return nil, fmt.Errorf("line %q is neither an item nor a field of one", line)
		}
		items[len(items)-1].fields[key] = value
	}
	return items, nil
}

// parseHandout reads "<name>: `<prompt>`" with an optional " launch=<json>".
func parseHandout(head string) (workflow.Handout, error) {
	name, rest, ok := strings.Cut(head, ": `")
	prompt, params, closed := strings.Cut(rest, "`")
	if !ok || !closed || name == "" || prompt == "" {
		return workflow.Handout{}, fmt.Errorf("launch line %q does not name a job and its prompt file", head)
	}
	launch := noLaunchParameters
	if params != "" {
		p, ok := strings.CutPrefix(params, launchParams)
		if !ok || !json.Valid([]byte(p)) {
			return workflow.Handout{}, fmt.Errorf("launch line %q: %q is not launch=<JSON>", head, params)
		}
		launch = p
	}
	return workflow.Handout{Name: name, Prompt: prompt, Launch: json.RawMessage(launch)}, nil
}

func parseBlock(it item) (workflow.Block, error) {
	subject, reason, ok := strings.Cut(it.head, ": ")
	if !ok {
		return workflow.Block{}, fmt.Errorf("block line %q does not name a subject and a reason", it.head)
	}
	b := workflow.Block{Subject: subject, Reason: reason, Record: it.fields["record"]}
	permitted := it.fields["permitted"]
	if scope, ok := strings.CutPrefix(permitted, permittedRepair); ok {
		b.Permitted, b.Scope = workflow.PermitRepair, scope
	} else if permitted == permittedStop {
		b.Permitted = workflow.PermitStop
	} else {
		return workflow.Block{}, fmt.Errorf("block on %s: permitted %q is neither a repair nor a stop", subject, permitted)
	}
	return b, nil
}
