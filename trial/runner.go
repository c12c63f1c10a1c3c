package trial

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/custodian-run/custodian/workflow/engine"
)

// Runner is how the scripted agent reaches a run: the two commands an agent
// orchestrator runs. Step returns the outcome of one step; Report records
// what only the agent can see. The agent needs nothing else, which is the
// point: everything else is on disk. Decide is the operator's command, which
// a script plays when the agent has stopped at a question it answers.
type Runner interface {
	Step() (engine.Outcome, error)
	Report(event, job, text string) error
	Decide(name, choice, text string) error
}

// InProcess returns a Runner that calls the engine in this process. Tests use
// it to drive a run without building the binary; each Step still reads every
// record anew, as a fresh process would.
func InProcess(o *engine.Run) Runner { return inProcess{o} }

type inProcess struct{ o *engine.Run }

func (r inProcess) Step() (engine.Outcome, error) { return r.o.Step() }

func (r inProcess) Report(event, job, text string) error {
	_, err := r.o.Report(event, job, text)
	return err
}

func (r inProcess) Decide(name, choice, text string) error { return r.o.Decide(name, choice, text) }

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

func (b *binary) Step() (engine.Outcome, error) {
	args := []string{"step", b.runDir}
	if b.json {
		args = append(args, "--json")
	}
	stdout, err := b.run(args...)
	if err != nil {
		return engine.Outcome{}, err
	}
	if b.json {
		return DecodeOutcome(stdout)
	}
	return engine.ParseOutcome(string(stdout))
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

func (b *binary) Decide(name, choice, text string) error {
	_, err := b.run("decide", b.runDir, name, choice, "--text", text)
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
func DecodeOutcome(data []byte) (engine.Outcome, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out engine.Outcome
	if err := dec.Decode(&out); err != nil {
		return engine.Outcome{}, fmt.Errorf("decode step --json output: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return engine.Outcome{}, fmt.Errorf("decode step --json output: more than one JSON value")
	}
	return out, nil
}
